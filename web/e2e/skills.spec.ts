// The Skills pages (issue 18 "Skills"): a GEPA run started in the browser
// from a model's page, run by the suite's worker against the scripted task
// and reflection models e2e/web_gepa_test.go starts, watched live until it
// succeeds; its scores, candidates and skill; the download; the install
// command, run for real; a failed run; and a read-only key.
import { test, expect, env, signIn, a11y, shot } from "./fixtures";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import type { APIRequestContext } from "@playwright/test";

test.describe.configure({ mode: "default" });

/** A succeeded model of the trainer account: refunds-ui from models.spec.ts, or one trained here when this file runs alone. */
async function succeededModel(api: APIRequestContext): Promise<{ id: string; name: string }> {
  const ms: { id: string; name: string; status: string }[] = await (await api.get("/api/v1/rm/reward-models")).json();
  const ok = ms.find((m) => m.name === "refunds-ui" && m.status === "succeeded") ?? ms.find((m) => m.status === "succeeded");
  if (ok) return ok;
  const traces = (await (await api.get("/api/v1/rm/traces?limit=10")).json()).traces.map((t: { id: string }) => t.id);
  const r = await api.post("/api/v1/rm/reward-models", { data: { name: "skills-ui", trace_ids: traces, base_model: env.baseModel, epochs: 2 } });
  expect(r.status()).toBe(200);
  const m = await r.json();
  await expect(async () => {
    expect((await (await api.get("/api/v1/rm/reward-models/" + m.id)).json()).status).toBe("succeeded");
  }).toPass({ timeout: 240_000 });
  return m;
}

test("start a GEPA run from a model's page, watch it run and succeed, read, download and install the skill", async ({ page, playwright, baseURL }) => {
  test.setTimeout(300_000);
  const api = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { Authorization: "Bearer " + env.trainerKey } });
  const model = await succeededModel(api);

  await signIn(page, env.trainerKey, `/models/${model.id}`);
  await page.getByRole("link", { name: "Create a skill with this model" }).click();
  await expect(page).toHaveURL(new RegExp(`/skills\\?model=${model.id}$`));
  await expect(page.getByRole("heading", { name: "Start a GEPA run" })).toBeVisible();
  await expect(page.getByLabel("Reward model")).toHaveValue(model.id);
  await expect(page.getByRole("button", { name: "Start GEPA run" })).toBeEnabled();
  // Checked before sending, as the server would refuse it.
  await page.getByLabel("Task model").fill("gpt-4.1-mini");
  await expect(page.getByRole("alert")).toContainText("Task model: write it as openai/<model> or anthropic/<model>");
  await expect(page.getByRole("button", { name: "Start GEPA run" })).toBeDisabled();
  await page.getByLabel("Task model").fill("openai/agent");
  await page.getByLabel("Task API base").fill(env.gepaTaskBase);
  await page.getByLabel("Reflection model").fill("openai/reflector");
  await page.getByLabel("Budget (metric calls)").fill("12");
  await a11y(page, "skills");
  await shot(page, "skills");
  await page.getByRole("button", { name: "Start GEPA run" }).click();

  await expect(page).toHaveURL(/\/skills\/[0-9a-f-]{36}$/);
  const id = page.url().split("/").pop()!;
  const status = page.getByRole("status", { name: "GEPA run status" });
  await expect(status).toHaveText(/queued|running/);
  await expect(page.locator("main p.small-text").first()).toContainText("task model openai/agent at " + env.gepaTaskBase);
  // The task model holds its calls after the seed's four until the gate
  // opens: the page shows the run's progress live meanwhile.
  await expect(status).toHaveText("running", { timeout: 120_000 });
  await expect(page.getByText(/iteration 0 · 4\/12 metric calls · best so far \d\.\d{3}/)).toBeVisible({ timeout: 60_000 });
  await expect(page.getByRole("progressbar", { name: "Metric calls used" })).toHaveAttribute("value", "4");
  await shot(page, "skill-running");
  writeFileSync(env.gepaGate, "open");
  await expect(status).toHaveText("succeeded", { timeout: 120_000 });

  const run = await (await api.get(`/api/v1/rm/gepa-runs/${id}`)).json();
  expect(run.skill_name).toBe("refund-policy");
  await expect(page.getByRole("heading", { name: "refund-policy", level: 1 })).toBeVisible();
  await expect(page.locator("main p.small-text").first()).toContainText(`budget 12 metric calls (${run.metric_calls} used) · 4 examples`);
  const scores = page.getByRole("region", { name: "Scores" });
  await expect(scores.getByRole("row", { name: /Seed skill/ })).toContainText(run.seed_score.toFixed(3));
  await expect(scores.getByRole("row", { name: /Best skill/ })).toContainText(run.best_score.toFixed(3));
  // Four examples are too few to hold any out: the page says the gain is in-sample.
  expect(run.holdout).toBeNull();
  await expect(scores).toContainText("No held-out score");

  // The best skill, rendered and raw (byte for byte).
  const best = page.getByRole("group", { name: "Best SKILL.md" });
  await expect(best).toContainText("Use when a customer asks for a refund.");
  await best.getByRole("button", { name: "Raw" }).click();
  expect(await page.getByLabel("Best SKILL.md (raw)").textContent()).toBe(run.best_skill);
  await best.getByRole("button", { name: "Raw" }).click();

  // Every candidate with its score; the seed first, the best marked.
  const cands = page.getByRole("region", { name: /^Candidates/ }).getByRole("listitem");
  await expect(cands).toHaveCount(run.candidates.length);
  await expect(cands.first()).toHaveAccessibleName(/^Candidate 1 \(seed\)/);
  for (const [i, c] of run.candidates.entries()) await expect(cands.nth(i)).toContainText(`score ${c.score.toFixed(3)}`);
  await expect(page.getByRole("listitem", { name: /\(best\)$/ }).first()).toBeVisible();
  const improved = run.candidates.findIndex((c: { skill: string }) => c.skill.includes("look the order up"));
  if (improved > 0) {
    await cands.nth(improved).locator("summary").click();
    await expect(cands.nth(improved).locator(".md strong")).toHaveText("look the order up");
  }
  await a11y(page, "GEPA run");
  await shot(page, "skill-run");

  const download = page.waitForEvent("download");
  await page.getByRole("button", { name: "Download skill" }).click();
  const d = await download;
  expect(d.suggestedFilename()).toBe("SKILL.md");
  expect(readFileSync((await d.path())!, "utf8")).toBe(run.best_skill);

  // The install command, exactly as shown, installs the skill where Claude Code looks.
  const cmd = (await page.getByLabel("Install command", { exact: true }).textContent())!;
  expect(cmd).toBe(
    `mkdir -p .claude/skills/refund-policy\ncurl -fsS "${baseURL}/api/v1/rm/gepa-runs/${id}/skill" \\\n  -H "Authorization: Bearer $CRITIC_API_KEY" \\\n  -o .claude/skills/refund-policy/SKILL.md`,
  );
  const project = mkdtempSync(path.join(tmpdir(), "skill-install-"));
  execFileSync("bash", ["-euc", cmd], { cwd: project, env: { ...process.env, CRITIC_API_KEY: env.trainerKey } });
  expect(readFileSync(path.join(project, ".claude/skills/refund-policy/SKILL.md"), "utf8")).toBe(run.best_skill);

  // The list and the model page show it.
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Skills" }).click();
  await expect(page.getByRole("row", { name: /refund-policy/ }).first()).toContainText("succeeded");
  await page.getByRole("row", { name: /refund-policy/ }).first().getByRole("link", { name: model.name }).click();
  await expect(page.getByRole("region", { name: "Skills" }).getByRole("link", { name: "refund-policy" }).first()).toBeVisible();
  await api.dispose();
});

test("with ten examples a GEPA run holds two traces out and the page shows the held-out scores", async ({ page, playwright, baseURL }) => {
  test.setTimeout(480_000);
  writeFileSync(env.gepaGate, "open"); // nothing to watch mid-run here: let the task model answer at once
  const api = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { Authorization: "Bearer " + env.holdoutKey } });
  const traces = (await (await api.get("/api/v1/rm/traces?limit=20")).json()).traces.map((t: { id: string }) => t.id);
  expect(traces).toHaveLength(10);
  const r = await api.post("/api/v1/rm/reward-models", { data: { name: "holdout-ui", trace_ids: traces, base_model: env.baseModel, epochs: 1, max_pairs: 16 } });
  expect(r.status()).toBe(200);
  const model = await r.json();
  await expect(async () => {
    expect((await (await api.get("/api/v1/rm/reward-models/" + model.id)).json()).status).toBe("succeeded");
  }).toPass({ timeout: 300_000 });

  await signIn(page, env.holdoutKey, `/skills?model=${model.id}`);
  await expect(page.getByLabel("Reward model")).toHaveValue(model.id);
  await page.getByLabel("Task model").fill("openai/agent");
  await page.getByLabel("Task API base").fill(env.gepaTaskBase);
  await page.getByLabel("Reflection model").fill("openai/reflector");
  await page.getByLabel("Budget (metric calls)").fill("24");
  await page.getByRole("button", { name: "Start GEPA run" }).click();
  await expect(page).toHaveURL(/\/skills\/[0-9a-f-]{36}$/);
  const id = page.url().split("/").pop()!;
  await expect(page.getByRole("status", { name: "GEPA run status" })).toHaveText("succeeded", { timeout: 150_000 });

  const run = await (await api.get(`/api/v1/rm/gepa-runs/${id}`)).json();
  expect(run.holdout).not.toBeNull();
  expect(run.holdout.examples).toBe(2); // a fifth of ten traces
  await expect(page.locator("main p.small-text").first()).toContainText(`budget 24 metric calls (${run.metric_calls} used) · 10 examples`);
  const scores = page.getByRole("region", { name: "Scores" });
  await expect(scores.getByRole("row", { name: /Seed skill/ })).toContainText(run.seed_score.toFixed(3));
  await expect(scores.getByRole("row", { name: /Best skill/ })).toContainText(run.best_score.toFixed(3));
  await expect(scores.getByRole("row", { name: "Held-out seed (2 traces)" })).toContainText(run.holdout.seed_score.toFixed(3));
  const d = run.holdout.best_score - run.holdout.seed_score;
  await expect(scores.getByRole("row", { name: /^Held-out best \(2 traces\)/ })).toContainText(
    `${run.holdout.best_score.toFixed(3)} (${(d >= 0 ? "+" : "−") + Math.abs(d).toFixed(3)} over the seed)`,
  );
  await expect(scores).toContainText("The held-out scores are on the 2 traces the search never saw: the honest number.");
  // Seed and best are over every example, the held-out ones included (spec 001).
  await expect(scores).toContainText("on the same examples, every one of them, so treat their gain as in-sample");
  await expect(scores).not.toContainText("No held-out score");
  await a11y(page, "GEPA run with held-out scores");
  await shot(page, "skill-run-holdout");
  await api.dispose();
});

test("a GEPA run that fails shows the end of the worker's log", async ({ page, playwright, baseURL }) => {
  const api = await playwright.request.newContext({ baseURL, extraHTTPHeaders: { Authorization: "Bearer " + env.trainerKey } });
  const model = await succeededModel(api);
  // The defaults are Anthropic models, and the worker has no ANTHROPIC_API_KEY.
  const r = await api.post("/api/v1/rm/gepa-runs", { data: { reward_model_id: model.id } });
  expect(r.status()).toBe(200);
  const run = await r.json();
  await signIn(page, env.trainerKey, `/skills/${run.id}`);
  await expect(page.getByRole("status", { name: "GEPA run status" })).toHaveText("failed", { timeout: 120_000 });
  await expect(page.getByLabel("Worker log")).toContainText("ANTHROPIC_API_KEY");
  await expect(page.locator("main p.small-text").first()).toContainText("task model anthropic/claude-haiku-4-5");
  await expect(page.getByRole("button", { name: "Download skill" })).toHaveCount(0);
  await a11y(page, "failed GEPA run");
  await shot(page, "skill-run-failed");
  await api.dispose();
});

test("a read-only key reads runs and downloads skills but cannot start a run; another account's run is not found", async ({ page }) => {
  await signIn(page, env.trainerReadOnlyKey, "/skills");
  await expect(page.getByRole("heading", { name: "GEPA runs" })).toBeVisible();
  await expect(page.getByRole("row", { name: /refund-policy/ }).first()).toBeVisible();
  await expect(page.getByRole("button", { name: "Start GEPA run" })).toHaveCount(0);
  await page.getByRole("row", { name: /refund-policy/ }).first().getByRole("link").first().click();
  await expect(page.getByRole("status", { name: "GEPA run status" })).toHaveText("succeeded");
  const download = page.waitForEvent("download");
  await page.getByRole("button", { name: "Download skill" }).click();
  expect((await download).suggestedFilename()).toBe("SKILL.md");
  const id = page.url().split("/").pop()!;
  await page.goto("about:blank"); // a real navigation, so the new key's link is read
  await signIn(page, env.key, `/skills/${id}`);
  await expect(page.getByRole("heading", { name: "GEPA run not found" })).toBeVisible();
  await expect(page.getByRole("alert")).toContainText("belongs to another account");
});
