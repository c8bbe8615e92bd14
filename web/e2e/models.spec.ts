// The models, SQL, skills and connect pages (issue 18), on the trainer
// account e2e/web_test.go prepares: four rated traces, a worker, a tiny
// base model on disk, and a model that failed with too few pairs.
import { test, expect, env, signIn, a11y, shot } from "./fixtures";

// Tests after "create a reward model" use the model it trains.
test.describe.configure({ mode: "default" });

const asTrainer = (page: Parameters<typeof signIn>[0], to = "/") => signIn(page, env.trainerKey, to);

test("import dialog: a bad line is reported with its line and field, nothing imported", async ({ page }) => {
  await asTrainer(page, "/traces");
  await expect(page.locator("tbody tr")).toHaveCount(4);
  await page.getByRole("button", { name: "Import traces" }).click();
  await page.getByLabel("Format").selectOption("stash");
  await page.getByLabel("Data").fill('{"steps":[{"role":"user","content":"hi"}]}\n{"steps":[{"role":"wizard","content":"x"}]}');
  await page.getByRole("button", { name: "Import", exact: true }).click();
  const alert = page.getByRole("dialog").getByRole("alert");
  await expect(alert).toContainText("Import failed");
  await expect(alert).toContainText("Line 2");
  await expect(alert).toContainText("Nothing was imported");
  await page.keyboard.press("Escape");
  await expect(page.getByRole("dialog")).toHaveCount(0);
  await expect(page.locator("tbody tr")).toHaveCount(4);
});

test("connect an agent: the OTLP settings of this server and the key's kind", async ({ page, baseURL }) => {
  await asTrainer(page, "/traces");
  await page.getByRole("button", { name: "Connect an agent" }).click();
  const dlg = page.getByRole("dialog", { name: "Connect an agent" });
  await expect(dlg).toContainText("full access");
  await expect(dlg.getByLabel("OTLP settings", { exact: true })).toContainText(`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=${baseURL}/api/v1/rm/otel/v1/traces`);
  await expect(dlg.getByLabel("Transcript upload", { exact: true })).toContainText(`${baseURL}/api/v1/me/transcripts`);
  await expect(dlg.getByRole("button", { name: "Copy OTLP settings" })).toBeVisible();
  await a11y(page, "connect dialog");
  await shot(page, "connect-agent");
});

test("create a reward model from the selection, watch it reach succeeded, read its report, download the weights", async ({ page }) => {
  test.setTimeout(300_000);
  await asTrainer(page, "/traces");
  await page.getByRole("checkbox", { name: "Select all shown" }).check();
  await expect(page.getByText("4 selected")).toBeVisible();
  await page.getByRole("button", { name: "Create reward model" }).click();
  const dlg = page.getByRole("dialog", { name: "Create reward model" });
  await dlg.getByLabel("Model name").fill("refunds-ui");
  // The reviewer's comments are this model's supervision, not the automatic annotations.
  await dlg.getByRole("radio", { name: /^Ratings, comments and reactions/ }).check();
  await dlg.getByText("Training options").click();
  await dlg.getByLabel("Other base model (hub id or checkpoint directory)").fill(env.baseModel);
  await dlg.getByLabel("Epochs").fill("2");
  await a11y(page, "create model dialog");
  await shot(page, "create-model");
  await dlg.getByRole("button", { name: "Train" }).click();
  await expect(dlg.getByRole("status")).toContainText("Queued refunds-ui");
  await dlg.getByRole("link", { name: "Watch it train" }).click();

  await expect(page.getByRole("heading", { name: "refunds-ui" })).toBeVisible();
  const status = page.getByRole("status", { name: "Model status" });
  await expect(status).toHaveText(/queued|running|succeeded/);
  await expect(status).toHaveText("succeeded", { timeout: 240_000 });
  // Which worker trained it.
  await expect(page.getByLabel("Worker", { exact: true })).toHaveText(/\S+/);
  await expect(page.getByRole("heading", { name: "Metrics" })).toBeVisible();
  await expect(page.getByText(/Eval accuracy \(whole traces\)/)).toBeVisible();
  // The reward statistics the review queue calibrates with.
  await expect(page.getByRole("row", { name: /^Calibration/ })).toContainText(/mean -?\d+\.\d{3}, std \d+\.\d{3} over \d+ training texts/);
  await expect(page.getByRole("note")).toContainText("Too few to trust");
  await expect(page.getByRole("heading", { name: "Learning report" })).toBeVisible();
  // The scripted feedback model found the reviewer's correction, quoted verbatim.
  const report = page.getByRole("region", { name: "Learning report" });
  await expect(report.getByText("“should have asked which currency”")).toBeVisible();
  await expect(report.getByText("confidence high").first()).toBeVisible();
  await expect(page.getByRole("heading", { name: "Trained on 4 traces" })).toBeVisible();
  // The recorded training curve: 2 epochs of steps.
  await expect(page.getByRole("img", { name: /^Loss per step: \d+ points/ })).toBeVisible();
  await expect(page.getByText(/loss of each of the \d+ training steps, as the trainer recorded it/)).toBeVisible();
  await a11y(page, "model detail");
  await shot(page, "model");

  const download = page.waitForEvent("download");
  await page.getByRole("button", { name: "Download weights" }).click();
  const d = await download;
  expect(d.suggestedFilename()).toMatch(/\.tar\.gz$/);
  const path = await d.path();
  expect(path).toBeTruthy();

  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Models" }).click();
  await expect(page.getByRole("link", { name: "refunds-ui" })).toBeVisible();
  await expect(page.getByRole("row", { name: /refunds-ui/ })).toContainText("succeeded");
  await expect(page.getByRole("row", { name: /one-trace/ })).toContainText("failed");
  await a11y(page, "models");
  await shot(page, "models");
});

test("a failed model shows the worker's error and Retry queues it again", async ({ page }) => {
  await asTrainer(page, "/models");
  await page.getByRole("link", { name: "one-trace" }).click();
  await expect(page.getByRole("status", { name: "Model status" })).toHaveText("failed");
  await expect(page.getByLabel("Failure reason")).toContainText("at least 2 preference pairs");
  await a11y(page, "failed model");
  await shot(page, "model-failed");
  await page.getByRole("button", { name: "Retry" }).click();
  await expect(page.getByRole("status", { name: "Model status" })).toHaveText(/queued|running|failed/);
  await expect(page.getByRole("status", { name: "Model status" })).toHaveText("failed", { timeout: 60_000 });
});

test("score a trace's actions and see credit badges and the minimap", async ({ page }) => {
  await asTrainer(page, "/traces");
  await page.locator("tbody tr").first().getByRole("link").click();
  await expect(page.getByRole("region", { name: "Step 1" })).toBeVisible();
  await page.getByLabel("Score with").selectOption({ label: "refunds-ui" });
  await page.getByRole("button", { name: "Score actions" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Scoring run" })).toContainText(/queued|running|succeeded/);
  await expect(page.getByRole("status").filter({ hasText: "Scoring run" })).toContainText("succeeded", { timeout: 60_000 });
  await expect(page.getByText(/^credit [+-]\d\.\d\d$/).first()).toBeVisible();
  const strip = page.getByRole("img", { name: /Action credit of refunds-ui over 5 steps: 2 scored actions/ });
  await expect(strip).toBeVisible();
  // Hover previews a step on one line: the last step (the answer) has credit.
  const box = (await strip.boundingBox())!;
  await page.mouse.move(box.x + box.width * 0.95, box.y + box.height / 2);
  await expect(page.locator(".strip-preview")).toContainText(/Step 5 · assistant: .+ · credit [+-]\d\.\d\d/);
  await page.mouse.move(box.x + box.width * 0.05, box.y + box.height / 2);
  await expect(page.locator(".strip-preview")).toContainText(/Step 1 · system: .+ · not scored/);
  const scale = page.getByRole("group", { name: "Credit scale" });
  await expect(scale.getByRole("button", { name: "±1" })).toHaveAttribute("aria-pressed", "true");
  await scale.getByRole("button", { name: "Fit" }).click();
  await expect(scale.getByRole("button", { name: "Fit" })).toHaveAttribute("aria-pressed", "true");
  await strip.click({ position: { x: box.width * 0.95, y: box.height / 2 } });
  await expect(page).toHaveURL(/step=5/);
  await a11y(page, "viewer with credit");
  await shot(page, "viewer-credit");
});

test("review queue with a model: the trace nobody rated by calibrated score, the unrated action by credit, most uncertain first", async ({ page, playwright, baseURL }) => {
  const api = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { Authorization: "Bearer " + env.trainerKey } });
  type Ann = { id: string; step_id: string | null; rating: number | null };
  type Detail = { id: string; steps: { id: string }[]; annotations: Ann[]; scores: { reward_model_id: string; score: number }[]; action_scores: { reward_model_id: string; step_id: string; credit: number }[] };
  const models: { id: string; name: string; status: string; reward_stats: { mean: number; std: number; count: number } | null }[] = await (await api.get("/api/v1/rm/reward-models")).json();
  const model = models.find((m) => m.name === "refunds-ui" && m.status === "succeeded")!;
  expect(model, "refunds-ui trained by the test above").toBeTruthy();
  const stats = model.reward_stats!;
  expect(stats.count).toBeGreaterThan(0);
  expect(stats.std).toBeGreaterThan(0);
  // Every action and trace of this account is rated: take back one trace's
  // whole-trace rating and another's answer rating so there is something
  // to ask about (the test puts them back through the queue).
  const ids: string[] = (await (await api.get("/api/v1/rm/traces?limit=10")).json()).traces.map((t: { id: string }) => t.id);
  const get = async (id: string): Promise<Detail> => (await api.get(`/api/v1/rm/traces/${id}`)).json();
  const [x, y] = [await get(ids[0]), await get(ids[1])];
  const whole = x.annotations.find((a) => a.step_id === null && a.rating !== null)!;
  const answer = y.annotations.find((a) => a.step_id === y.steps[4].id && a.rating !== null)!;
  for (const a of [whole, answer]) expect((await api.delete(`/api/v1/rm/annotations/${a.id}`)).status()).toBe(204);
  // What the queue must say, computed here from the model's statistics and scores.
  const score = x.scores.find((s) => s.reward_model_id === model.id)!.score;
  const calibrated = 1 / (1 + Math.exp(-(score - stats.mean) / stats.std));
  const credit = y.action_scores.find((s) => s.reward_model_id === model.id && s.step_id === y.steps[4].id)!.credit;
  const traceFirst = Math.abs(2 * calibrated - 1) <= Math.abs(credit);
  const q = await (await api.get(`/api/v1/rm/review-queue?reward_model_id=${model.id}`)).json();
  expect(q.items.map((i: { kind: string; trace_id: string; step_index: number | null }) => `${i.kind} ${i.trace_id} ${i.step_index}`)).toEqual(
    traceFirst ? [`trace ${x.id} null`, `action ${y.id} 4`] : [`action ${y.id} 4`, `trace ${x.id} null`],
  );
  expect(q.items[traceFirst ? 0 : 1].calibrated).toBeCloseTo(calibrated, 9);

  await asTrainer(page, "/review");
  await page.getByLabel("Reward model").selectOption({ label: "refunds-ui: what it is least sure of" });
  await expect(page).toHaveURL(new RegExp(`model=${model.id}`));
  await expect(page.locator(".progress")).toHaveText("2 left");
  await expect(page.getByText(/Calibrated score = sigmoid\(\(score − mean\) \/ std\)/)).toContainText(
    `with mean ${stats.mean.toFixed(3)} and std ${stats.std.toFixed(3)} of its ${stats.count} training rewards`,
  );
  const card = page.getByRole("article", { name: "Review item" });
  const traceLine = new RegExp(`^Whole trace · 5 steps · calibrated score ${calibrated.toFixed(3).replace(".", "\\.")} \\(raw [+-]\\d+\\.\\d{3}\\)$`);
  const actionLine = `Step 5 (assistant) · credit ${(credit >= 0 ? "+" : "") + credit.toFixed(2)}`;
  const key = (r: number | null) => (r === 1 ? "+" : "-");
  const order = traceFirst ? [[traceLine, whole.rating], [actionLine, answer.rating]] : [[actionLine, answer.rating], [traceLine, whole.rating]];
  await expect(card.locator("header p")).toHaveText(order[0][0] as RegExp | string);
  await a11y(page, "review with a model");
  await shot(page, "review-model");
  // Rate each as it was rated before: one key, and the queue advances.
  await page.keyboard.press(key(order[0][1] as number));
  await expect(page.locator(".progress")).toHaveText("1 left");
  await expect(card.locator("header p")).toHaveText(order[1][0] as RegExp | string);
  await page.keyboard.press(key(order[1][1] as number));
  await expect(page.getByText("Done: you judged all 2 items.")).toBeVisible();
  await expect(async () => {
    const [x2, y2] = [await get(x.id), await get(y.id)];
    expect(x2.annotations.filter((a) => a.step_id === null && a.rating !== null).map((a) => a.rating)).toEqual([whole.rating]);
    expect(y2.annotations.filter((a) => a.step_id === y.steps[4].id && a.rating !== null).map((a) => a.rating)).toEqual([answer.rating]);
  }).toPass();
  // Rated: nothing is left for this model.
  expect((await (await api.get(`/api/v1/rm/review-queue?reward_model_id=${model.id}`)).json()).items).toEqual([]);
  await api.dispose();
});

test("compare two models: scores side by side, rank correlation, disagreements link into the viewer", async ({ page, playwright, baseURL }) => {
  test.setTimeout(300_000);
  const api = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { Authorization: "Bearer " + env.trainerKey } });
  const ms = await (await api.get("/api/v1/rm/reward-models")).json();
  const first = ms.find((m: { name: string }) => m.name === "refunds-ui");
  const traceIds = (await (await api.get("/api/v1/rm/reward-models/" + first.id)).json()).trace_ids;
  const r = await api.post("/api/v1/rm/reward-models", { data: { name: "refunds-ui-2", trace_ids: traceIds, base_model: env.baseModel, epochs: 1 } });
  expect(r.status()).toBe(200);
  const second = await r.json();
  await asTrainer(page, `/models/${second.id}`);
  await expect(page.getByRole("status", { name: "Model status" })).toHaveText("succeeded", { timeout: 240_000 });

  await page.goto(`/models/compare?a=${first.id}&b=${second.id}`);
  await expect(page.getByRole("heading", { name: "Compare models" })).toBeVisible();
  // The SQL snapshot the comparison reads catches up shortly after training.
  await expect(async () => {
    await page.reload();
    await expect(page.getByRole("heading", { name: "Traces scored by both: 4" })).toBeVisible({ timeout: 3000 });
  }).toPass({ timeout: 60_000 });
  await expect(page.getByRole("status")).toContainText(/Rank correlation \(Spearman\): -?\d\.\d{3}/);
  await expect(page.getByRole("heading", { name: "Actions they disagree on most" })).toBeVisible();
  await a11y(page, "compare");
  await shot(page, "compare");
  await page.getByRole("link", { name: /, step \d+$/ }).first().click();
  await expect(page).toHaveURL(/\/traces\/[0-9a-f-]+\?step=\d+/);
  await api.dispose();
});

test("SQL console: columns beside the editor, Ctrl+Enter runs, errors as DuckDB says, truncated, CSV, chart", async ({ page }) => {
  await asTrainer(page, "/");
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "SQL" }).click();
  const tables = page.getByRole("complementary", { name: "Tables" });
  await expect(tables.getByText("action_scores", { exact: true })).toBeVisible();
  await expect(tables.getByText("step_count", { exact: true })).toBeVisible();
  const editor = page.getByRole("textbox", { name: "SQL" });
  await editor.fill("SELECT role, count(*) AS n FROM steps GROUP BY role ORDER BY role");
  await editor.press("Control+Enter");
  await expect(page.getByRole("status")).toContainText("4 rows");
  await expect(page.getByRole("cell", { name: "assistant" })).toBeVisible();
  // A numeric column is right-aligned, its header with it; text stays left.
  const align = (loc: ReturnType<typeof page.locator>) => loc.evaluate((el) => getComputedStyle(el).textAlign);
  const result = page.locator("table.result");
  expect(await align(result.getByRole("columnheader", { name: "n", exact: true }))).toBe("right");
  expect(await align(result.locator("tbody tr").first().getByRole("cell").nth(1))).toBe("right");
  expect(await align(result.getByRole("columnheader", { name: "role" }))).not.toBe("right");
  expect(await align(result.getByRole("cell", { name: "assistant" }))).not.toBe("right");
  await expect(page).toHaveURL(/sql=SELECT/);
  await page.getByRole("button", { name: "Bar chart" }).click();
  await expect(page.getByRole("img", { name: "Bar chart of n by role" })).toBeVisible();
  await a11y(page, "sql");
  await shot(page, "sql");

  const download = page.waitForEvent("download");
  await page.getByRole("button", { name: "Download CSV" }).click();
  const d = await download;
  expect(d.suggestedFilename()).toBe("query.csv");
  const { readFileSync } = await import("node:fs");
  const csv = readFileSync((await d.path())!, "utf8");
  expect(csv.split("\r\n")[0]).toBe("role,n");
  expect(csv).toContain("assistant,");

  await editor.fill("SELECT nope FROM traces");
  await page.getByRole("button", { name: "Run query" }).click();
  await expect(page.getByRole("alert")).toContainText(/nope/);

  await editor.fill("SELECT * FROM range(1500)");
  await page.getByRole("button", { name: "Run query" }).click();
  await expect(page.getByRole("status")).toContainText("1000 rows");
  await expect(page.getByRole("status")).toContainText("truncated");
});

test("step labels: task score cards before each task, label chips, step scores, section breadcrumbs", async ({ page }) => {
  await signIn(page, env.labelsKey, `/traces/${env.labeledTrace}?step=5`);
  const card = page.getByRole("complementary", { name: "Task refund score" });
  await expect(card).toBeVisible();
  await expect(card).toContainText(/task score [+-]\d\.\d\d/);
  await expect(page.getByText(/Step scores \(labels\): trace score [+-]\d\.\d\d · outcome \w+ · 1 task/)).toBeVisible();
  const answer = page.getByRole("region", { name: "Step 5" });
  await expect(answer.getByText("outcome: solved")).toBeVisible();
  await expect(answer.getByText(/^step score [+-]\d\.\d\d/)).toBeVisible();
  await expect(page.getByRole("region", { name: "Step 6" }).getByText("verdict: confirmed")).toBeVisible();
  await expect(page.getByRole("region", { name: "Step 2" }).getByText("verdict: none")).toHaveCount(0);
  // One task, so the breadcrumb is that task alone, as plain text, with the
  // generated title and score (e2e/web_assess_test.go's scripted fast model).
  const task = (await (await page.request.get(`/api/v1/rm/traces/${env.labeledTrace}`, { headers: { Authorization: "Bearer " + env.labelsKey } })).json()).sections[0];
  const crumbs = page.getByRole("navigation", { name: "Sections" });
  await expect(crumbs.locator("[aria-current=location]")).toHaveText(`Reviewed part ${task.first_step_id.slice(-8)}`, { timeout: 60_000 });
  await expect(crumbs.getByRole("button")).toHaveCount(0);
  await expect(crumbs.locator(".score-value")).toHaveText("score 0.80");
  // The completion curve: one checkpoint per assistant step, 40% rising to 90%.
  await expect(page.getByRole("img", { name: "Completion of I want a refund for order 1182: step 3 40%, step 5 90%" })).toBeVisible({ timeout: 60_000 });
  await a11y(page, "viewer with step labels");
  await shot(page, "viewer-labels");
});

test("sections: breadcrumbs with generated titles and scores follow the selected step; the completion curve opens a step", async ({ page }) => {
  type Sec = { kind: string; title: string; first_step_id: string; first_step_index: number; last_step_index: number; children: Sec[] | null };
  const api = { headers: { Authorization: "Bearer " + env.labelsKey } };
  const detail = await (await page.request.get(`/api/v1/rm/traces/${env.sectionedTrace}`, api)).json();
  const [task] = detail.sections as Sec[];
  const [inspecting, editing] = task.children!;
  expect([task.kind, inspecting.title, editing.title]).toEqual(["task", "Inspecting", "Editing"]);
  const gen = (s: Sec) => `Reviewed part ${s.first_step_id.slice(-8)}`;

  await signIn(page, env.labelsKey, `/traces/${env.sectionedTrace}?step=2`);
  const crumbs = page.getByRole("navigation", { name: "Sections" });
  // The derived titles at once; the generated ones when the worker tier has answered.
  await expect(crumbs).toContainText(/Inspecting|Reviewed part/);
  await expect(crumbs.locator("[aria-current=location]")).toHaveText(gen(inspecting), { timeout: 60_000 });
  // Only the ancestor is a button; the current section is plain text.
  await expect(crumbs.getByRole("button")).toHaveCount(1);
  await expect(crumbs.getByRole("button", { name: gen(task) })).toBeVisible();
  // Looking the order up does not show the outcome: Unscored, with the reason on focus.
  const scores = crumbs.locator(".section-score");
  await expect(scores.locator(".score-value")).toHaveText(["score 0.80", "Unscored"]);
  await expect(scores.nth(1).getByRole("tooltip")).toBeHidden();
  await scores.nth(1).focus();
  await expect(scores.nth(1).getByRole("tooltip")).toBeVisible();
  await expect(scores.nth(1).getByRole("tooltip")).toContainText("Unscored because: the evidence does not show whether it worked");
  await expect(scores.nth(1)).toHaveAccessibleDescription(/Objective: settle the refund request/);
  await scores.nth(1).blur();
  // The task's score explains itself on hover.
  await scores.nth(0).hover();
  await expect(scores.nth(0).getByRole("tooltip")).toBeVisible();
  await expect(scores.nth(0).getByRole("tooltip")).toContainText("Why: the agent looked the order up, then confirmed the refund");
  await a11y(page, "viewer with sections");
  await shot(page, "viewer-sections");

  // The breadcrumb follows the selection into the next phase.
  await page.goto(`/traces/${env.sectionedTrace}?step=6`);
  await expect(crumbs.locator("[aria-current=location]")).toHaveText(gen(editing));
  await expect(crumbs.locator(".section-score .score-value")).toHaveText(["score 0.80", "score 0.80"]);
  // The ancestor opens the task's first step.
  await crumbs.getByRole("button", { name: gen(task) }).click();
  await expect(page).toHaveURL(/step=1$/);
  await expect(crumbs.locator("[aria-current=location]")).toHaveText(gen(inspecting));

  // The completion curve, overlaid on the minimap: a checkpoint per assistant step; a point opens its step.
  const curve = page.getByRole("img", { name: "Completion of I want a refund for order 1183: step 2 40%, step 4 65%, step 6 90%" });
  await expect(curve).toBeVisible({ timeout: 60_000 });
  // The same strip as the credit bars (none scored yet), each on its own
  // axis: credit ±1 on the left, completion 0–100% on the right.
  const minimap = page.locator("figure.minimap");
  await expect(minimap.getByRole("img", { name: "Action credit over 6 steps: no model has scored this trace" })).toBeVisible();
  const creditImg = minimap.getByRole("img", { name: /^Action credit/ });
  const credit = (await creditImg.boundingBox())!;
  const cb = (await curve.boundingBox())!;
  expect([cb.x, cb.y, cb.width, cb.height].map(Math.round)).toEqual([credit.x, credit.y, credit.width, credit.height].map(Math.round));
  await expect(minimap.locator(".axis.left")).toHaveText("+1−1");
  await expect(minimap.locator(".axis.right")).toHaveText("100%0%");
  await minimap.getByRole("group", { name: "Credit scale" }).getByRole("button", { name: "Fit" }).click();
  await expect(minimap.locator(".axis.right")).toHaveText("100%0%");
  // Hover reads the curve on the one preview line: at a checkpoint its
  // estimate and reason, between two the smooth curve's value, which never
  // overshoots its neighbours (step 3 is step 2's tool result: its row's
  // checkpoint is step 2's, and the curve passes it between 2 and 4).
  const preview = minimap.locator(".strip-preview");
  // (The overlay lets the pointer through to the bars, so the hover is aimed at them.)
  await creditImg.hover({ position: { x: credit.width * (3.5 / 6), y: credit.height / 2 } });
  await expect(preview).toContainText(/^Step 4 · assistant create_refund: .+ · not scored · completion 65% — checkpoint 2 of 3$/);
  await creditImg.hover({ position: { x: credit.width * (2.5 / 6), y: credit.height / 2 } });
  await expect(preview).toContainText(/^Step 3 · tool lookup_order: .+ · not scored · completion \d+% \(interpolated between steps 2 and 4\)$/);
  const between = Number((await preview.locator(".curve-value").textContent())!.match(/completion (\d+)%/)![1]);
  expect(between).toBeGreaterThanOrEqual(40);
  expect(between).toBeLessThanOrEqual(65);
  await curve.locator("rect.point").nth(1).click();
  await expect(page).toHaveURL(/step=4$/);
  await expect(crumbs.locator("[aria-current=location]")).toHaveText(gen(editing));
});

test("section cards: Back to sections opens the task cards, a leaf card opens the trace at its first step", async ({ page }) => {
  type Sec = { kind: string; title: string; first_step_id: string; first_step_index: number; children: Sec[] | null };
  const detail = await (await page.request.get(`/api/v1/rm/traces/${env.sectionedTrace}`, { headers: { Authorization: "Bearer " + env.labelsKey } })).json();
  const top = detail.sections as Sec[];
  const gen = (s: Sec) => `Reviewed part ${s.first_step_id.slice(-8)}`;
  await signIn(page, env.labelsKey, `/traces/${env.sectionedTrace}?step=6`);
  await expect(page.getByRole("region", { name: "Step 6" })).toBeVisible();
  await page.getByRole("button", { name: "Back to sections" }).click();
  await expect(page).toHaveURL(/[?&]sections=1/);
  const overview = page.getByRole("region", { name: "Sections of this trace" });
  // One card per top-level section, each a button named by its generated title.
  await expect(overview.getByRole("listitem")).toHaveCount(top.length);
  await expect(overview.getByRole("heading", { level: 2 })).toHaveText(top.map(gen), { timeout: 60_000 });
  await expect(overview.getByRole("listitem").first()).toContainText(`${top[0].kind} · steps ${top[0].first_step_index + 1}–`);
  await expect(overview.getByRole("listitem").first()).toContainText("score 0.80");
  // The top level has no inert "Sections" breadcrumb row, the step list is gone.
  await expect(page.getByRole("navigation", { name: "Sections" })).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Back to sections" })).toHaveCount(0);
  await expect(page.getByRole("region", { name: "Step 6" })).toHaveCount(0);
  await a11y(page, "section cards");
  await shot(page, "viewer-section-cards");
  // The URL holds the view: a reload shows the cards again.
  await page.reload();
  await expect(overview.getByRole("button", { name: gen(top[0]) })).toBeVisible();
  // The task has phases, not subtasks: it is a leaf card and opens the
  // complete trace at its first step.
  await overview.getByRole("button", { name: gen(top[0]) }).click();
  await expect(page).toHaveURL(new RegExp(`step=${top[0].first_step_index + 1}$`));
  expect(page.url()).not.toContain("sections=");
  await expect(page.getByRole("region", { name: `Step ${top[0].first_step_index + 1}` })).toBeInViewport();
  await expect(page.getByRole("region", { name: "Step 6" })).toBeVisible();
  await expect(page.getByRole("navigation", { name: "Sections" }).locator("[aria-current=location]")).toHaveText(gen(top[0].children![0]));
  await expect(page.getByRole("button", { name: "Back to sections" })).toBeVisible();
});

test("two tasks: a task with subtasks opens them as cards; the completion curve breaks between the tasks", async ({ page }) => {
  type Sec = { kind: string; title: string; first_step_id: string; first_step_index: number; last_step_index: number; children: Sec[] | null };
  const detail = await (await page.request.get(`/api/v1/rm/traces/${env.twoTaskTrace}`, { headers: { Authorization: "Bearer " + env.labelsKey } })).json();
  const top = detail.sections as Sec[];
  // Two requests, two tasks; the second followed a recorded plan, so it has subtasks.
  expect(top.map((s) => [s.kind, s.first_step_index + 1, s.last_step_index + 1])).toEqual([["task", 1, 4], ["task", 5, 14]]);
  const subtasks = top[1].children!.filter((c) => c.kind === "subtask");
  expect(subtasks.map((c) => c.title).slice(-2)).toEqual(["Create the account", "Send the welcome email"]);
  const gen = (s: Sec) => `Reviewed part ${s.first_step_id.slice(-8)}`;

  await signIn(page, env.labelsKey, `/traces/${env.twoTaskTrace}?sections=1`);
  const overview = page.getByRole("region", { name: "Sections of this trace" });
  await expect(overview.getByRole("heading", { level: 2 })).toHaveText(top.map(gen), { timeout: 60_000 });
  await expect(overview.getByRole("listitem").nth(0)).not.toContainText("subtask");
  await expect(overview.getByRole("listitem").nth(1)).toContainText(`task · steps 5–14 · ${subtasks.length} subtasks`);
  // The task with subtasks opens them as cards, under a breadcrumb back up.
  // (Its first subtask starts where it does, so the scripted titles match: the card is picked by position.)
  await overview.getByRole("listitem").nth(1).getByRole("button", { name: gen(top[1]) }).click();
  await expect(page).toHaveURL(/[?&]in=1(&|$)/);
  await expect(overview.getByRole("heading", { level: 2 })).toHaveText(subtasks.map(gen), { timeout: 60_000 });
  const crumbs = overview.getByRole("navigation", { name: "Sections" });
  await expect(crumbs.locator("[aria-current=location]")).toHaveText(gen(top[1]));
  await a11y(page, "subtask cards");
  await shot(page, "viewer-subtask-cards");
  // A subtask is a leaf: it opens the whole trace at its first step.
  const last = subtasks[subtasks.length - 1];
  await overview.getByRole("button", { name: gen(last) }).click();
  await expect(page).toHaveURL(new RegExp(`step=${last.first_step_index + 1}$`));
  await expect(page.getByRole("region", { name: `Step ${last.first_step_index + 1}` })).toBeInViewport();
  await expect(page.getByRole("navigation", { name: "Sections" }).locator("[aria-current=location]")).toHaveText(gen(last), { timeout: 60_000 });
  // Back to sections returns to the cards that hold the step: the subtasks.
  await page.getByRole("button", { name: "Back to sections" }).click();
  await expect(overview.getByRole("heading", { level: 2 })).toHaveText(subtasks.map(gen));

  // One curve per task, each with its own objective and checkpoints, and
  // no line joining the first task's end to the second's start.
  await page.goto(`/traces/${env.twoTaskTrace}?step=1`);
  const curve = page.getByRole("img", {
    name:
      "Completion of Refund order 2210 please: step 2 20%, step 4 80%; " +
      "Completion of Now set up my account and send the welcome email: step 6 20%, step 8 35%, step 10 50%, step 12 65%, step 14 80%",
  });
  await expect(curve).toBeVisible({ timeout: 60_000 });
  await expect(curve.locator("path.curve")).toHaveCount(2);
  const minimap = page.locator("figure.minimap");
  const creditImg = minimap.getByRole("img", { name: /^Action credit/ });
  const box = (await creditImg.boundingBox())!;
  const preview = minimap.locator(".strip-preview");
  // Step 3 lies inside the first task's line; step 5, the second request, on neither line.
  await creditImg.hover({ position: { x: box.width * (2.5 / 14), y: box.height / 2 } });
  await expect(preview).toContainText(/^Step 3 · .+ · completion \d+% \(interpolated between steps 2 and 4\)$/);
  await creditImg.hover({ position: { x: box.width * (4.5 / 14), y: box.height / 2 } });
  await expect(preview).toContainText(/^Step 5 · user: /);
  await expect(preview).not.toContainText("interpolated");
  await expect(preview).not.toContainText(/\d+%/);
});

test("a read-only key sees models, SQL and credit, but no Create reward model, Retry or Score actions", async ({ page }) => {
  await signIn(page, env.trainerReadOnlyKey, "/traces");
  await page.getByRole("checkbox", { name: "Select all shown" }).check();
  await expect(page.getByText("4 selected")).toBeVisible();
  await expect(page.getByRole("button", { name: "Create reward model" })).toHaveCount(0);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Models" }).click();
  await page.getByRole("link", { name: "one-trace" }).click();
  await expect(page.getByRole("status", { name: "Model status" })).toHaveText("failed");
  await expect(page.getByRole("button", { name: "Retry" })).toHaveCount(0);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Traces" }).click();
  await page.locator("tbody tr").first().getByRole("link").click();
  await expect(page.getByRole("region", { name: "Step 1" })).toBeVisible();
  await expect(page.getByRole("img", { name: /Action credit of refunds-ui/ })).toBeVisible();
  await expect(page.getByRole("button", { name: "Score actions" })).toHaveCount(0);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "SQL" }).click();
  await page.getByRole("button", { name: "Run query" }).click();
  await expect(page.getByRole("status")).toContainText(/\d+ rows?/);
});
