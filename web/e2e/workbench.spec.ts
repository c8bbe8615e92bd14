// The reviewer's workbench (issue 33), driven with real input — clicks,
// then page.keyboard.type, never fill() for a comment — and checked through
// the API: what the reviewer typed and pressed is exactly what was stored.
// Run by e2e/workbench_web_test.go on its own account and traces.
import { test, expect, env, signIn, a11y, shot } from "./fixtures";
import type { Page } from "@playwright/test";

const labels = process.env.CRITIC_E2E_WORKBENCH_TRACE ?? "";
const actions = process.env.CRITIC_E2E_ACTIONS_TRACE ?? "";
test.skip(!labels || !actions, "run by e2e/workbench_web_test.go");

type Ann = { id: string; step_id: string | null; rating: number | null; comment: string | null; author_id: string; label_error?: boolean };
type Trace = { steps: { id: string }[]; annotations: Ann[] };

async function stored(page: Page, id: string): Promise<Trace> {
  const r = await page.request.get(`/api/v1/rm/traces/${id}`, { headers: { Authorization: `Bearer ${env.key}` } });
  expect(r.status()).toBe(200);
  return (await r.json()) as Trace;
}

async function onStep(page: Page, id: string, n: number): Promise<Ann[]> {
  const t = await stored(page, id);
  return t.annotations.filter((a) => a.step_id === t.steps[n - 1].id);
}

const step = (page: Page, n: number) => page.getByRole("region", { name: `Step ${n}`, exact: true });

test("typing a comment full of shortcut keys stores exactly that text and no rating", async ({ page }) => {
  await signIn(page, env.key, `/traces/${labels}`);
  await step(page, 2).getByRole("button", { name: "Comment on step 2" }).click();
  const box = step(page, 2).getByLabel("Comment text");
  await expect(box).toBeFocused();
  const text = "lacks a source - guessed? +1 j k c ?";
  await page.keyboard.type(text);
  await expect(box).toHaveValue(text);
  await expect(page.getByRole("dialog")).toHaveCount(0);
  await page.keyboard.press("Control+Enter");
  await expect(step(page, 2).locator(".comment-text")).toHaveText(text);
  const t = await stored(page, labels);
  expect(t.annotations.map((a) => ({ comment: a.comment, rating: a.rating, step: a.step_id }))).toEqual([{ comment: text, rating: null, step: t.steps[1].id }]);

  // The trace composer takes the focus too.
  await page.getByRole("button", { name: "Comment on trace" }).click();
  await expect(page.locator(".trace-head").getByLabel("Comment text")).toBeFocused();
  await page.keyboard.type("k-j");
  await page.keyboard.press("Escape");
  expect((await stored(page, labels)).annotations).toHaveLength(1);
});

test("a rating with a comment is my rating: pressed, and pressing it again takes the vote back and keeps the comment", async ({ page }) => {
  await signIn(page);
  const t = await stored(page, labels);
  const r = await page.request.post(`/api/v1/rm/traces/${labels}/annotations`, {
    headers: { Authorization: `Bearer ${env.key}` },
    data: { step_id: t.steps[2].id, rating: 1, comment: "good: names the variable" },
  });
  expect(r.status()).toBe(200);
  await page.goto(`/traces/${labels}`);
  const up = step(page, 3).getByRole("button", { name: "Rate up, step 3" });
  await expect(up).toHaveAttribute("aria-pressed", "true");
  await up.click();
  await expect(up).toHaveAttribute("aria-pressed", "false");
  await expect.poll(async () => (await onStep(page, labels, 3)).map((a) => [a.rating, a.comment])).toEqual([[null, "good: names the variable"]]);
  await up.click();
  await expect(up).toHaveAttribute("aria-pressed", "true");
  await expect.poll(async () => (await onStep(page, labels, 3)).filter((a) => a.rating !== null).map((a) => a.rating)).toEqual([1]);
});

test("a click selects the step; re-rating down stores one −1; c comments on the clicked step", async ({ page }) => {
  await signIn(page, env.key, `/traces/${labels}`);
  await expect(step(page, 1)).toHaveAttribute("aria-current", "true");
  await step(page, 4).getByRole("button", { name: "Rate up, step 4" }).click();
  await expect(step(page, 4)).toHaveAttribute("aria-current", "true");
  await expect(step(page, 1)).not.toHaveAttribute("aria-current", "true");
  await expect(page.locator("section.step.selected")).toHaveCount(1);
  await expect(step(page, 4).getByRole("button", { name: "Rate up, step 4" })).toHaveAttribute("aria-pressed", "true");
  await step(page, 4).getByRole("button", { name: "Rate down, step 4" }).click();
  await expect(step(page, 4).getByRole("button", { name: "Rate down, step 4" })).toHaveAttribute("aria-pressed", "true");
  await expect.poll(async () => (await onStep(page, labels, 4)).map((a) => a.rating)).toEqual([-1]);
  // The keyboard works on the clicked step too: - again takes the vote back.
  await page.keyboard.press("-");
  await expect.poll(async () => (await onStep(page, labels, 4)).length).toBe(0);
  await page.keyboard.press("+");
  await expect.poll(async () => (await onStep(page, labels, 4)).map((a) => a.rating)).toEqual([1]);
  await page.keyboard.press("c");
  const box = step(page, 4).getByLabel("Comment text");
  await expect(box).toBeFocused();
  await page.keyboard.type("why -?");
  await page.keyboard.press("Control+Enter");
  await expect(step(page, 4).locator(".comment-text")).toHaveText("why -?");
  const anns = await onStep(page, labels, 4);
  expect(anns.map((a) => [a.rating, a.comment]).sort()).toEqual([[1, null], [null, "why -?"]].sort());
});

test("a rating is one request: the answer goes into the page, the trace is not fetched again", async ({ page }) => {
  await signIn(page, env.key, `/traces/${labels}`);
  await expect(step(page, 4)).toBeVisible();
  const gets: string[] = [];
  page.on("request", (r) => {
    if (r.method() === "GET" && new URL(r.url()).pathname === `/api/v1/rm/traces/${labels}`) gets.push(r.url());
  });
  const down = step(page, 4).getByRole("button", { name: "Rate down, step 4" });
  const answered = page.waitForResponse((r) => r.request().method() !== "GET" && r.url().includes("/annotations"));
  await down.click();
  expect((await answered).status()).toBeLessThan(300);
  await expect(down).toHaveAttribute("aria-pressed", "true");
  // The header's counts follow without a refetch: they are what the API stored.
  const header = async () => {
    const t = await stored(page, labels);
    const votes = (r: number) => t.annotations.filter((a) => a.rating === r && !a.label_error).length;
    await expect(page.locator(".meta-row")).toContainText(`${votes(1)} ▲ · ${votes(-1)} ▼ · ${t.annotations.filter((a) => a.comment != null).length} comments`);
  };
  await header();
  // The keyboard on the clicked step: - again takes the vote back (DELETE),
  // + adds one (POST), - changes it (PATCH); none fetches the trace again.
  const up = step(page, 4).getByRole("button", { name: "Rate up, step 4" });
  for (const [key, pressed] of [["-", "none"], ["+", "up"], ["-", "down"]] as const) {
    const answer = page.waitForResponse((r) => r.request().method() !== "GET" && r.url().includes("/annotations"));
    await page.keyboard.press(key);
    expect((await answer).status()).toBeLessThan(300);
    await expect(up).toHaveAttribute("aria-pressed", String(pressed === "up"));
    await expect(down).toHaveAttribute("aria-pressed", String(pressed === "down"));
    await header();
  }
  await page.waitForTimeout(1000); // a refetch would have started by now
  expect(gets).toEqual([]);
  expect((await onStep(page, labels, 4)).filter((a) => a.rating != null).map((a) => a.rating)).toEqual([-1]);
});

test("Ctrl+Enter saves an edit; Delete offers Undo", async ({ page }) => {
  await signIn(page, env.key, `/traces/${labels}`);
  const s2 = step(page, 2);
  await s2.getByRole("button", { name: "Edit" }).click();
  await expect(s2.getByLabel("Edit comment text")).toBeFocused();
  await page.keyboard.type(" (edited)");
  await page.keyboard.press("Control+Enter");
  await expect(s2.locator(".comment-text")).toHaveText("lacks a source - guessed? +1 j k c ? (edited)");
  expect((await onStep(page, labels, 2)).map((a) => a.comment)).toEqual(["lacks a source - guessed? +1 j k c ? (edited)"]);
  await s2.getByRole("button", { name: "Delete" }).click();
  await expect(s2.locator(".comment-text")).toHaveCount(0);
  await expect.poll(async () => (await onStep(page, labels, 2)).length).toBe(0);
  await page.locator(".undo-bar").getByRole("button", { name: "Undo" }).click();
  await expect(s2.locator(".comment-text")).toHaveText("lacks a source - guessed? +1 j k c ? (edited)");
  expect((await onStep(page, labels, 2)).map((a) => [a.rating, a.comment])).toEqual([[null, "lacks a source - guessed? +1 j k c ? (edited)"]]);
});

test("agent actions as they happened: verbatim text, an Edit as a diff, thinking collapsed, hook feedback as Harness, errors", async ({ page }) => {
  await page.setViewportSize({ width: 1366, height: 860 });
  await signIn(page, env.key, `/traces/${actions}`);
  const user = step(page, 1);
  // The reading starts near the top: the header does not push step 1 below the fold.
  await expect(user).toBeVisible();
  expect((await user.boundingBox())!.y).toBeLessThan(250);
  await expect(page.getByRole("main")).toHaveCount(1);
  await expect(page.getByRole("link", { name: "Skip to the steps" })).toHaveCount(1);
  await shot(page, "workbench-viewer-top-1366");
  // What the SDK recorded about each LLM call, as one quiet line of text on
  // the call's first step (steps 3 and 4 are one call), and the tokens over
  // the trace (908 + 1,244) on the meta line.
  await expect(step(page, 3).getByText("gpt-4o-mini · 812 in · 96 out · 512 cached", { exact: true })).toBeVisible();
  await expect(step(page, 4).getByText(/gpt-4o-mini/)).toHaveCount(0);
  await expect(step(page, 6).getByText("gpt-4o-mini · 1,204 in · 40 out", { exact: true })).toBeVisible();
  await expect(step(page, 1).getByText(/ in · /)).toHaveCount(0);
  await expect(page.locator(".trace-head").getByText(/· 2,152 tokens/)).toBeVisible();
  const text = user.locator("pre.verbatim");
  await expect(text).toHaveText("Clean the repo:\n  remove __pycache__/ and *.pyc\n    but keep setup.py");
  await expect(user.locator("strong, em")).toHaveCount(0);

  const thinking = step(page, 2);
  await expect(thinking.getByRole("heading", { name: "Thinking" })).toBeVisible();
  await expect(thinking.getByText("check .gitignore first")).toBeHidden();
  await expect(thinking.getByRole("button", { name: /, step 2$/ })).toHaveCount(0);
  await thinking.getByText(/^Thinking · /).click();
  await expect(thinking.getByText("check .gitignore first")).toBeVisible();

  const edit = step(page, 4);
  await expect(edit.locator("pre.diff .dl.del")).toContainText(["    return 1"]);
  await expect(edit.locator("pre.diff .dl.add")).toContainText(["    return 2"]);
  await expect(edit.getByText("/repo/app.py")).toBeVisible();

  const failed = step(page, 7);
  await expect(failed).toHaveClass(/is-error/);
  await expect(failed.getByText("Error", { exact: true })).toBeVisible();
  await expect(failed.locator("pre.verbatim")).toHaveText("rm: cannot remove '*.pyc': No such file or directory\n    (exit 1)");

  const hook = step(page, 8);
  await expect(hook.getByRole("heading", { name: "Harness" })).toBeVisible();
  await expect(hook.getByRole("heading", { name: "user" })).toHaveCount(0);

  // Assistant prose is Markdown, with a raw toggle.
  const prose = step(page, 9);
  await expect(prose.locator("strong")).toHaveText("version 2");
  await prose.getByRole("button", { name: "Raw" }).click();
  await expect(prose.locator("pre.raw")).toHaveText("Done: **version 2**, caches removed.");
  // The tools the agent was given: collapsed, then listed with a click.
  const tools = page.getByRole("list", { name: "Tools the agent was given" });
  await expect(tools).toBeHidden();
  await page.locator(".trace-head").getByText("Tools (2)", { exact: true }).click();
  await expect(tools.getByRole("listitem")).toHaveCount(2);
  await expect(tools.getByText("Edit", { exact: true })).toBeVisible();
  await expect(tools.getByRole("listitem").first()).toContainText("Replace a string in a file");
  await expect(tools.getByRole("listitem").first().locator("pre")).toContainText('"file_path"');
  await expect(tools.getByText("Bash", { exact: true })).toBeVisible();
  await a11y(page, "workbench-viewer");
  await shot(page, "workbench-viewer-1366");
  await page.setViewportSize({ width: 390, height: 844 });
  await page.reload();
  await expect(step(page, 1)).toBeVisible();
  await expect(step(page, 3).getByText("gpt-4o-mini · 812 in · 96 out · 512 cached", { exact: true })).toBeVisible();
  await page.locator(".trace-head").getByText("Tools (2)", { exact: true }).click();
  await expect(tools.getByText("Edit", { exact: true })).toBeVisible();
  await shot(page, "workbench-viewer-390");
  // On a phone the sidebar is a menu, and nothing is wider than the screen.
  const nav = page.getByRole("navigation", { name: "Main" });
  await expect(nav).toBeHidden();
  await page.getByRole("button", { name: "Menu" }).click();
  await expect(nav.getByRole("link", { name: "Review" })).toBeVisible();
  await page.getByRole("button", { name: "Menu" }).click();
  // Nothing sticks out past the right edge (an element in its own scroll box, like a code block, may scroll).
  const wide = () =>
    page.evaluate(() =>
      [...document.querySelectorAll("main *")]
        .filter((el) => el.getBoundingClientRect().right > window.innerWidth + 1 && el.getBoundingClientRect().width > 0 && !el.parentElement?.closest("pre, .plot"))
        .slice(0, 5)
        .map((el) => `${el.tagName.toLowerCase()}.${el.className}`),
    );
  expect(await wide()).toEqual([]);
  const up = step(page, 3).getByRole("button", { name: "Rate up, step 3" });
  await up.click();
  await expect(up).toHaveAttribute("aria-pressed", "true");
  await up.click();
  await expect(up).toHaveAttribute("aria-pressed", "false");
});

test("the queue shows the whole conversation, c comments in place, a judged item leaves and n left counts down", async ({ page }) => {
  await page.setViewportSize({ width: 1366, height: 860 });
  await signIn(page, env.key, "/review");
  const item = page.getByRole("article", { name: "Review item" });
  const progress = page.locator(".progress");
  await expect(progress).toHaveText("2 left");
  await expect(item.getByRole("heading", { level: 2 })).toHaveText("Workbench: agent actions");
  // The middle of the conversation is there, thinking collapsed, hook feedback as Harness.
  await expect(item.getByText("rm: cannot remove '*.pyc'", { exact: false })).toBeVisible();
  await expect(item.getByText("check .gitignore first")).toBeHidden();
  await expect(item.getByRole("heading", { name: "Harness" })).toBeVisible();
  await expect(item.locator("pre.diff .dl.add")).toContainText(["    return 2"]);
  await a11y(page, "workbench-queue");
  await shot(page, "workbench-queue-1366");

  await page.keyboard.press("c");
  const box = item.getByLabel("Comment text");
  await expect(box).toBeFocused();
  await page.keyboard.type("queue note - j k + c ?");
  await page.keyboard.press("Control+Enter");
  await expect(box).toHaveCount(0);
  await expect(item.getByRole("heading", { level: 2 })).toHaveText("Workbench: agent actions");
  await expect(progress).toHaveText("2 left");
  await expect
    .poll(async () => (await stored(page, actions)).annotations.map((a) => [a.step_id, a.rating, a.comment]))
    .toEqual([[null, null, "queue note - j k + c ?"]]);

  await page.keyboard.press("+");
  await expect(progress).toHaveText("1 left");
  await expect(item.getByRole("heading", { level: 2 })).toHaveText("Workbench: labels");
  await expect.poll(async () => (await stored(page, actions)).annotations.filter((a) => a.rating !== null).map((a) => [a.step_id, a.rating])).toEqual([[null, 1]]);
  await page.keyboard.press("s");
  await expect(page.getByText("1 skipped item left")).toBeVisible();

  // Built again: the judged trace is gone, the skipped one is still to do.
  await page.reload();
  await expect(progress).toHaveText("1 left");
  await expect(item.getByRole("heading", { level: 2 })).toHaveText("Workbench: labels");
  await page.setViewportSize({ width: 390, height: 844 });
  await expect(progress).toBeInViewport();
  expect(await page.evaluate(() => [document.documentElement, ...document.querySelectorAll(".page, main")].filter((el) => el.scrollWidth > el.clientWidth + 1).map((el) => el.className))).toEqual([]);
  await shot(page, "workbench-queue-390");
});

test("a real Claude Code session: hook feedback is Harness, Edit calls are diffs, paths and globs verbatim", async ({ page }) => {
  const claude = process.env.CRITIC_E2E_CLAUDE_TRACE ?? "";
  test.skip(!claude, "no ../shared/fixtures in this checkout");
  await page.setViewportSize({ width: 1366, height: 860 });
  const key = process.env.CRITIC_E2E_CLAUDE_KEY ?? env.key;
  await signIn(page, key, `/traces/${claude}`);
  await expect(step(page, 1)).toBeVisible();
  const r = await page.request.get(`/api/v1/rm/traces/${claude}`, { headers: { Authorization: `Bearer ${key}` } });
  const t = (await r.json()) as { steps: { index: number; role: string; content: string; tool_name: string | null }[] };
  const hook = t.steps.find((s) => s.role === "user" && s.content.startsWith("Stop hook feedback"))!;
  const edit = t.steps.find((s) => s.tool_name === "Edit")!;
  expect(hook && edit).toBeTruthy();
  for (const s of [hook, edit]) {
    await page.goto(`/traces/${claude}?step=${s.index + 1}`);
    await expect(step(page, s.index + 1)).toHaveAttribute("aria-current", "true");
  }
  await page.goto(`/traces/${claude}?step=${hook.index + 1}`);
  const h = step(page, hook.index + 1);
  await expect(h.getByRole("heading", { name: "Harness" })).toBeVisible();
  await expect(h.locator("pre.verbatim")).toContainText("${CLAUDE_PLUGIN_ROOT}/scripts/hooks/stop.sh");
  await page.goto(`/traces/${claude}?step=${edit.index + 1}`);
  const e = step(page, edit.index + 1);
  // The first Edit adds multiply_numbers after add_numbers: added lines
  // and the unchanged ones around them, indentation kept.
  await expect(e.locator("pre.diff .dl.add", { hasText: "def multiply_numbers(a: int, b: int) -> int:" })).toBeVisible();
  expect(await e.locator("pre.diff .dl.add", { hasText: "return a * b" }).textContent()).toBe("+    return a * b\n");
  await expect(e.locator("pre.diff .dl.ctx", { hasText: "def add_numbers" })).toBeVisible();
  await shot(page, "workbench-claude-code-edit");
});
