// Structured criteria and guidelines (issue 33), driven with real input —
// clicks, then page.keyboard.type, never fill() — and checked through the
// API: what the reviewer defined, typed and pressed is exactly what was
// stored. Run by e2e/criteria_web_test.go on its own account and traces.
import { test, expect, env, signIn, a11y, shot } from "./fixtures";
import type { Locator, Page } from "@playwright/test";

const agent = process.env.CRITIC_E2E_CRITERIA_TRACE ?? "";
const queued = process.env.CRITIC_E2E_CRITERIA_QUEUE_TRACE ?? "";
test.skip(!agent || !queued, "run by e2e/criteria_web_test.go");

type Criterion = { criterion_id: string; name: string; description: string | null; kind: string; labels: { name: string; score: number }[]; scale_max: number | null; applies_to: string; archived: boolean };
type Ann = { id: string; step_id: string | null; rating: number | null; comment: string | null; criterion_id: string | null; value: string | number | null };
type Trace = { steps: { id: string }[]; annotations: Ann[] };

const auth = { Authorization: `Bearer ${env.key}` };

async function get<T>(page: Page, path: string): Promise<T> {
  const r = await page.request.get(`/api/v1/rm${path}`, { headers: auth });
  expect(r.status(), path).toBe(200);
  return (await r.json()) as T;
}

/** The trace's annotations as [step number or "trace", criterion name or null, value, rating, comment]. */
async function stored(page: Page, id: string) {
  const [t, cs] = await Promise.all([get<Trace>(page, `/traces/${id}`), get<{ criteria: Criterion[] }>(page, "/criteria?include_archived=true")]);
  const name = (cid: string | null) => (cid ? cs.criteria.find((c) => c.criterion_id === cid)?.name ?? cid : null);
  const where = (sid: string | null) => (sid ? t.steps.findIndex((s) => s.id === sid) + 1 : "trace");
  return t.annotations.map((a) => [where(a.step_id), name(a.criterion_id ?? null), a.value ?? null, a.rating, a.comment]);
}

const step = (page: Page, n: number) => page.getByRole("region", { name: `Step ${n}`, exact: true });

/** Types into a field after clicking it, as a person does (never fill()). */
async function typeInto(page: Page, field: Locator, text: string, clear = false) {
  await field.click();
  if (clear) {
    await page.keyboard.press("Control+A");
    await page.keyboard.press("Backspace");
  }
  await page.keyboard.type(text);
}

const GUIDE = "# How we judge\n\n- **Correct** means checked against the tool output\n- Prefer `lookup_order` over guessing\n\n<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 1\">";

test("criteria and guidelines defined on the Criteria page with clicks and typing", async ({ page }) => {
  await page.setViewportSize({ width: 1366, height: 860 });
  await signIn(page);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Criteria" }).click();
  await expect(page.getByRole("heading", { name: "Criteria", level: 1 })).toBeVisible();
  await expect(page.getByText("No criteria yet")).toBeVisible();
  const form = page.locator("form.criterion-form").first();

  // Binary, for assistant replies.
  await typeInto(page, form.getByLabel("Name", { exact: true }), "Correctness");
  await typeInto(page, form.getByLabel("Description (optional)"), "Is the reply true? 1 = yes");
  await form.getByLabel("Binary (yes / no)").click();
  await form.getByLabel("Assistant reply").click();
  await form.getByRole("button", { name: "Add criterion" }).click();
  await expect(page.getByRole("listitem", { name: "Criterion Correctness" })).toBeVisible();
  await expect(form.getByLabel("Name", { exact: true })).toHaveValue("");

  // Categorical with scored labels, for tool calls.
  await typeInto(page, form.getByLabel("Name", { exact: true }), "Tool choice");
  await form.getByLabel("Categorical (labels)").click();
  await typeInto(page, form.getByLabel("Label 1 name"), "good");
  await typeInto(page, form.getByLabel("Label 2 name"), "wrong");
  await form.getByRole("button", { name: "Add label" }).click();
  await typeInto(page, form.getByLabel("Label 3 name"), "wasteful");
  await form.getByLabel("Label 3 score").selectOption("0");
  await form.getByLabel("Tool call").click();
  await form.getByRole("button", { name: "Add criterion" }).click();
  await expect(page.getByRole("listitem", { name: "Criterion Tool choice" })).toBeVisible();

  // A 1–4 scale, for whole traces.
  await typeInto(page, form.getByLabel("Name", { exact: true }), "Helpfulness");
  await form.getByLabel("Scale (1 to N)").click();
  await typeInto(page, form.getByLabel(/^Scale max/), "4", true);
  await form.getByLabel("Whole trace").click();
  await form.getByRole("button", { name: "Add criterion" }).click();
  await expect(page.getByRole("listitem", { name: "Criterion Helpfulness" })).toBeVisible();

  // A name already taken: the server's answer names the problem; nothing is added.
  await typeInto(page, form.getByLabel("Name", { exact: true }), "Correctness");
  await form.getByRole("button", { name: "Add criterion" }).click();
  await expect(form.getByRole("alert")).toContainText(/name/i);
  await expect(page.getByRole("list", { name: "Criteria" }).getByRole("listitem")).toHaveCount(3);

  // A typo archived: it is no longer listed, its definition kept.
  await typeInto(page, form.getByLabel("Name", { exact: true }), "Tone", true);
  await form.getByRole("button", { name: "Add criterion" }).click();
  const tone = page.getByRole("listitem", { name: "Criterion Tone" });
  await tone.getByRole("button", { name: "Archive Tone" }).click();
  await tone.getByRole("button", { name: "Archive it" }).click();
  await expect(tone).toHaveCount(0);

  // Rename and describe through the editor.
  const help = page.getByRole("listitem", { name: "Criterion Helpfulness" });
  await help.getByRole("button", { name: "Edit Helpfulness" }).click();
  await typeInto(page, help.getByLabel("Description", { exact: true }), "4 = solved it, 1 = made it worse");
  await help.getByRole("button", { name: "Save criterion" }).click();
  await expect(help.getByText("4 = solved it, 1 = made it worse")).toBeVisible();

  const cs = (await get<{ criteria: Criterion[] }>(page, "/criteria")).criteria;
  expect(cs.map((c) => [c.name, c.kind, c.applies_to, c.labels.map((l) => [l.name, l.score]), c.scale_max, c.archived])).toEqual([
    ["Correctness", "binary", "assistant", [], null, false],
    ["Tool choice", "categorical", "tool_call", [["good", 1], ["wrong", -1], ["wasteful", 0]], null, false],
    ["Helpfulness", "scale", "trace", [], 4, false],
  ]);
  expect(cs[0].description).toBe("Is the reply true? 1 = yes");
  expect(cs[2].description).toBe("4 = solved it, 1 = made it worse");

  // Guidelines: Markdown typed, previewed (raw HTML as text, never run), saved.
  const editor = page.getByLabel("Guidelines (Markdown)");
  await editor.click();
  await page.keyboard.type(GUIDE);
  const preview = page.getByRole("region", { name: "Guidelines preview" });
  await expect(preview.getByRole("heading", { name: "How we judge" })).toBeVisible();
  await expect(preview.locator("strong")).toHaveText("Correct");
  await expect(preview.locator("code")).toHaveText("lookup_order");
  await expect(preview.locator("script, img")).toHaveCount(0);
  await page.getByRole("button", { name: "Save guidelines" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Saved." })).toBeVisible();
  expect((await get<{ markdown: string }>(page, "/guidelines")).markdown).toBe(GUIDE);
  expect(await page.evaluate(() => (window as { __pwned?: number }).__pwned)).toBeUndefined();
  await a11y(page, "criteria-page");
  await shot(page, "criteria-page-1366");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.reload();
  await expect(page.getByRole("heading", { name: "Criteria", level: 1 })).toBeInViewport();
  expect(await overflowing(page)).toEqual([]);
  await shot(page, "criteria-page-390");
});

async function overflowing(page: Page) {
  return page.evaluate(() => [document.documentElement, ...document.querySelectorAll(".page, main")].filter((el) => el.scrollWidth > el.clientWidth + 1).map((el) => el.className));
}

test("values set by click and by key in the viewer are exactly what is stored; typing a comment sets none", async ({ page }) => {
  await page.setViewportSize({ width: 1366, height: 860 });
  await signIn(page, env.key, `/traces/${agent}?step=2`);
  // The guidelines are collapsed beside the steps: step 1 starts near the top.
  await expect(step(page, 1)).toBeVisible();
  expect((await step(page, 1).boundingBox())!.y).toBeLessThan(250);
  const guide = page.getByRole("button", { name: "Guidelines" });
  await expect(guide).toHaveAttribute("aria-expanded", "false");

  // Step 2 is an assistant reply: Correctness applies, nothing else on it.
  const s2 = step(page, 2);
  await expect(s2).toHaveAttribute("aria-current", "true");
  await expect(s2.getByRole("button", { name: /^Tool choice/ })).toHaveCount(0);
  const yes2 = s2.getByRole("button", { name: "Correctness: yes, step 2" });
  await yes2.click();
  await expect(yes2).toHaveAttribute("aria-pressed", "true");
  await expect.poll(() => stored(page, agent)).toEqual([[2, "Correctness", "yes", null, null]]);

  // j to the tool call: digits pick its Tool choice; another digit replaces the value.
  await page.keyboard.press("j");
  const s3 = step(page, 3);
  await expect(s3).toHaveAttribute("aria-current", "true");
  await expect(s3.getByRole("button", { name: "Tool choice: good, step 3" })).toBeVisible();
  await expect(s3.getByRole("button", { name: /^Correctness/ })).toHaveCount(0);
  await page.keyboard.press("1");
  await expect(s3.getByRole("button", { name: "Tool choice: good, step 3" })).toHaveAttribute("aria-pressed", "true");
  await page.keyboard.press("3");
  await expect(s3.getByRole("button", { name: "Tool choice: wasteful, step 3" })).toHaveAttribute("aria-pressed", "true");
  await expect(s3.getByRole("button", { name: "Tool choice: good, step 3" })).toHaveAttribute("aria-pressed", "false");
  await expect.poll(() => stored(page, agent)).toEqual([
    [2, "Correctness", "yes", null, null],
    [3, "Tool choice", "wasteful", null, null],
  ]);

  // The trace's criterion by its letter, then a digit (Helpfulness is the third: d).
  await page.keyboard.press("d");
  await page.keyboard.press("4");
  await expect(page.getByRole("button", { name: "Helpfulness: 4, trace" })).toHaveAttribute("aria-pressed", "true");

  // The tool output (step 4) takes no criterion; its keys do nothing.
  await page.keyboard.press("j");
  await expect(step(page, 4)).toHaveAttribute("aria-current", "true");
  await expect(step(page, 4).getByRole("group", { name: /^Criteria/ })).toHaveCount(0);

  // Pressing the value again takes it back: a click selects step 2, a click on yes removes it.
  await s2.getByRole("heading", { name: "assistant" }).click();
  await expect(s2).toHaveAttribute("aria-current", "true");
  await s2.getByRole("button", { name: "Correctness: yes, step 2" }).click();
  await expect(s2.getByRole("button", { name: "Correctness: yes, step 2" })).toHaveAttribute("aria-pressed", "false");
  await expect.poll(() => stored(page, agent)).toEqual([
    [3, "Tool choice", "wasteful", null, null],
    ["trace", "Helpfulness", 4, null, null],
  ]);

  // A comment full of digits and criterion letters is text, not values.
  await s2.getByRole("button", { name: "Comment on step 2" }).click();
  const box = s2.getByLabel("Comment text");
  await expect(box).toBeFocused();
  const text = "a1 b2 d3 - 1 2 4 + j k ? off by 1";
  await page.keyboard.type(text);
  await expect(box).toHaveValue(text);
  await page.keyboard.press("Control+Enter");
  await expect(s2.locator(".comment-text")).toHaveText(text);
  await expect.poll(() => stored(page, agent)).toEqual([
    [3, "Tool choice", "wasteful", null, null],
    ["trace", "Helpfulness", 4, null, null],
    [2, null, null, null, text],
  ]);
  await expect(s2.getByRole("button", { name: "Correctness: yes, step 2" })).toHaveAttribute("aria-pressed", "false");

  // The stored values show in the annotation lists with the criterion's name.
  await expect(step(page, 3).locator(".criterion-value")).toHaveText("Tool choice: wasteful");
  await a11y(page, "criteria-viewer");
  await shot(page, "criteria-viewer-1366");
  await guide.click();
  await expect(page.getByRole("region", { name: "Guidelines" }).getByRole("heading", { name: "How we judge" })).toBeVisible();
  await page.setViewportSize({ width: 390, height: 844 });
  await page.reload();
  await expect(step(page, 2)).toBeVisible();
  expect(await overflowing(page)).toEqual([]);
  await shot(page, "criteria-viewer-390");
});

test("the queue shows the guidelines and the item's criteria; a value by key, then the item is judged", async ({ page }) => {
  await page.setViewportSize({ width: 1366, height: 860 });
  // Collapsed to start with, whatever an earlier test left in this browser.
  await signIn(page, env.key, "/review");
  await page.evaluate(() => localStorage.setItem("critic.guidelines.open", "0"));
  await page.reload();
  const item = page.getByRole("article", { name: "Review item" });
  await expect(item.getByRole("heading", { level: 2 })).toHaveText("Criteria: queue item");
  const left = await page.locator(".progress").textContent();
  const guide = page.getByRole("button", { name: "Guidelines" });
  await expect(guide).toHaveAttribute("aria-expanded", "false");
  await guide.click();
  const panel = page.getByRole("region", { name: "Guidelines" });
  await expect(panel.getByRole("heading", { name: "How we judge" })).toBeVisible();
  await expect(panel.locator("strong")).toHaveText("Correct");
  await expect(panel.locator("script, img")).toHaveCount(0);

  // A whole-trace item: its criterion is Helpfulness; a comment typed with c sets nothing.
  await expect(page.getByRole("group", { name: "Criteria, this trace" }).getByRole("button")).toHaveCount(4);
  await page.keyboard.press("c");
  const box = item.getByLabel("Comment text");
  await expect(box).toBeFocused();
  await page.keyboard.type("d2 3 s");
  await page.keyboard.press("Control+Enter");
  await expect(box).toHaveCount(0);
  await expect.poll(() => stored(page, queued)).toEqual([["trace", null, null, null, "d2 3 s"]]);
  await page.keyboard.press("3");
  await expect(page.getByRole("button", { name: "Helpfulness: 3, trace" })).toHaveAttribute("aria-pressed", "true");
  await expect.poll(() => stored(page, queued)).toEqual([
    ["trace", null, null, null, "d2 3 s"],
    ["trace", "Helpfulness", 3, null, null],
  ]);
  await a11y(page, "criteria-queue");
  await shot(page, "criteria-queue-1366");
  // With a value set, moving on judges the item: it leaves the count.
  await expect(item.getByRole("button", { name: "Next" })).toBeVisible();
  await page.keyboard.press("s");
  await expect(page.locator(".progress")).not.toHaveText(left!);
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto("/review?i=0");
  await expect(item).toBeVisible();
  expect(await overflowing(page)).toEqual([]);
  await shot(page, "criteria-queue-390");
});

test("a reward model requested on a criterion says which on its page", async ({ page }) => {
  await signIn(page, env.key, "/traces");
  await page.getByRole("checkbox", { name: "Select all shown" }).click();
  await page.getByRole("button", { name: "Create reward model" }).click();
  const dlg = page.getByRole("dialog", { name: "Create reward model" });
  await dlg.getByLabel("Model name").click();
  await page.keyboard.type("helpful-rm");
  await dlg.getByRole("radio", { name: /^Criterion: Helpfulness/ }).check();
  await dlg.getByRole("button", { name: "Train" }).click();
  await expect(dlg.getByRole("status")).toContainText("Queued helpful-rm");
  await dlg.getByRole("link", { name: "Watch it train" }).click();
  await expect(page.getByRole("heading", { name: "helpful-rm" })).toBeVisible();
  await expect(page.getByText("Trained on criterion: Helpfulness")).toBeVisible();
  const id = page.url().split("/models/")[1];
  const cs = (await get<{ criteria: Criterion[] }>(page, "/criteria")).criteria;
  const m = await get<{ training_config: { criterion: string | null; criterion_name: string | null } }>(page, `/reward-models/${id}`);
  expect(m.training_config).toMatchObject({ criterion: cs.find((c) => c.name === "Helpfulness")!.criterion_id, criterion_name: "Helpfulness" });
});
