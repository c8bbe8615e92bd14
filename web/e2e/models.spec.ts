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
  await dlg.getByText("Training options").click();
  await dlg.getByLabel("Base model").fill(env.baseModel);
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
  await expect(page.getByRole("navigation", { name: "Sections" }).getByRole("button").first()).toBeVisible();
  // No completion model on this server: the curve says why instead of guessing.
  await expect(page.getByText(/^Completion curve unavailable: .+/)).toBeVisible();
  await a11y(page, "viewer with step labels");
  await shot(page, "viewer-labels");
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
