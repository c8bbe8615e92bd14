import { test, expect, env, signIn, a11y, shot, checkedResponses } from "./fixtures";

test.describe.configure({ mode: "default" });

const longAnswer =
  "I've issued a full refund to your card for order 5521.\n\n" +
  "Here is what happens next:\n\n" +
  Array.from({ length: 30 }, (_, i) => `${i + 1}. Step ${i + 1} of the refund process, described in some detail so the message is long.`).join("\n") +
  "\n\n```python\ndef refund(order):\n    return order.total\n```\n\nThe END of the message.";

const importData = JSON.stringify({
  id: "e2e-refund-5521",
  title: "Refund for order 5521 (e2e)",
  steps: [
    { role: "system", content: "You are a support agent. Refunds need a delivered order." },
    { role: "user", content: "Please refund order 5521, it arrived broken." },
    { role: "assistant", content: "", tool_name: "lookup_order", tool_input: { order_id: "5521" }, tool_call_id: "call_1" },
    { role: "tool", content: '{"status": "delivered", "damaged": true}', tool_name: "lookup_order", tool_call_id: "call_1" },
    { role: "assistant", content: longAnswer },
  ],
});

test("sign in with a pasted API key; a bad key says so", async ({ page }) => {
  await page.goto("/");
  await expect(page.getByRole("button", { name: "Sign in" })).toBeDisabled();
  await a11y(page, "sign-in");
  await shot(page, "signin");
  await page.getByLabel("API key").fill("critic_not-a-real-key");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("alert")).toContainText("not valid");
  await page.getByLabel("API key").fill(env.key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("heading", { name: "Traces" })).toBeVisible();
  // The key is kept in storage, never in a URL.
  expect(await page.evaluate(() => localStorage.getItem("critic.apiKey"))).toBe(env.key);
  expect(page.url()).not.toContain(env.key);
  await page.reload();
  await expect(page.getByRole("heading", { name: "Traces" })).toBeVisible();
});

test("import through the UI, then filter by text, source and date", async ({ page }) => {
  await signIn(page);
  await page.getByRole("button", { name: "Import traces" }).click();
  await page.getByLabel("Format").selectOption("stash");
  await page.getByLabel("Source id (optional)").fill("e2e-support");
  await page.getByLabel("Data").fill(importData);
  await page.getByRole("button", { name: "Import", exact: true }).click();
  await expect(page.getByRole("status")).toContainText("Imported 1 trace as stash");
  await a11y(page, "import dialog");
  await shot(page, "import-dialog");
  await page.getByRole("button", { name: "Close", exact: true }).click();
  await expect(page.getByRole("dialog")).toHaveCount(0);
  await expect(page.getByRole("link", { name: "Refund for order 5521 (e2e)" })).toBeVisible();
  await a11y(page, "traces");
  await shot(page, "traces");

  // Text search over step content (not in any title).
  await page.getByRole("searchbox", { name: "Search" }).fill("arrived broken");
  await page.getByRole("searchbox", { name: "Search" }).press("Enter");
  await expect(page).toHaveURL(/q=arrived\+broken/);
  await expect(page.getByRole("link", { name: "Refund for order 5521 (e2e)" })).toBeVisible();
  await expect(page.locator("tbody tr")).toHaveCount(1);
  await page.getByRole("button", { name: "Clear filters" }).click();
  await expect(page.locator("tbody tr")).not.toHaveCount(1);

  // Source filter, and its rename control.
  await page.getByLabel("Source", { exact: true }).selectOption("e2e-support");
  await expect(page.locator("tbody tr")).toHaveCount(1);
  await page.getByRole("button", { name: "Rename source" }).click();
  await page.getByLabel("Source name").fill("E2E support bot");
  await page.getByRole("button", { name: "Save name" }).click();
  await expect(page.locator("tbody tr").first()).toContainText("E2E support bot");

  // Inclusive local dates: today keeps it, a range ending yesterday does not.
  const today = await page.evaluate(() => new Date().toLocaleDateString("en-CA"));
  const yesterday = await page.evaluate(() => new Date(Date.now() - 86400000).toLocaleDateString("en-CA"));
  await page.getByLabel("Imported from").fill(today);
  await page.getByLabel("Imported to").fill(today);
  await expect(page.locator("tbody tr")).toHaveCount(1);
  await page.getByLabel("Imported from").fill("2020-01-01");
  await page.getByLabel("Imported to").fill(yesterday);
  await expect(page.getByText("No traces match these filters")).toBeVisible();
  await a11y(page, "traces-empty");
});

test("selection: the header checkbox toggles shown rows, hidden selections are counted, Select only shown replaces", async ({ page }) => {
  await signIn(page);
  const rows = page.locator("tbody tr");
  await expect(rows.first()).toBeVisible();
  const n = await rows.count();
  await page.getByRole("checkbox", { name: "Select all shown" }).check();
  await expect(page.getByText(`${n} selected`)).toBeVisible();
  await page.getByLabel("Source", { exact: true }).selectOption("e2e-support");
  await expect(rows).toHaveCount(1);
  await expect(page.getByText(`${n} selected (${n - 1} hidden by the filters)`)).toBeVisible();
  await page.getByRole("button", { name: "Select only shown" }).click();
  await expect(page.getByText("1 selected", { exact: true })).toBeVisible();
});

test("a trace erased on the server and imported again is left out and named", async ({ page, request }) => {
  const auth = { Authorization: "Bearer " + env.key };
  const data = JSON.stringify({
    id: "e2e-erased-once",
    title: "Erased once (e2e)",
    steps: [
      { role: "user", content: "Cancel order 77." },
      { role: "assistant", content: "Cancelled." },
    ],
  });
  const first = await request.post("/api/v1/rm/traces/import", { headers: auth, data: { format: "stash", data } });
  expect(first.status()).toBe(200);
  const id = ((await first.json()) as { trace_ids: string[] }).trace_ids[0];
  expect((await request.delete(`/api/v1/rm/traces/${id}`, { headers: auth })).status()).toBe(204);

  await signIn(page);
  await page.getByRole("button", { name: "Import traces" }).click();
  await page.getByLabel("Format").selectOption("stash");
  await page.getByLabel("Data").click();
  await page.keyboard.type(data);
  await page.getByRole("button", { name: "Import", exact: true }).click();
  const status = page.getByRole("status");
  await expect(status).toContainText("Imported 0 traces as stash");
  await expect(status).toContainText("1 left out: erased before");
  await expect(status).toHaveClass(/warn-text/); // not the success colour: nothing was stored
  await shot(page, "import-erased");
  await page.getByRole("button", { name: "Close", exact: true }).click();
  await expect(page.getByRole("link", { name: "Erased once (e2e)" })).toHaveCount(0);
  // Nothing of it was stored again.
  const list = await request.get("/api/v1/rm/traces?limit=100&q=" + encodeURIComponent("Cancel order 77"), { headers: auth });
  expect(list.status()).toBe(200);
  expect(((await list.json()) as { traces: unknown[] }).traces).toHaveLength(0);
  expect((await request.get(`/api/v1/rm/traces/${id}`, { headers: auth })).status()).toBe(404);
});

test("open a trace: rate, quote, comment, flag, edit, delete, and it all survives reload", async ({ page }) => {
  await signIn(page);
  await page.getByRole("link", { name: "Refund for order 5521 (e2e)" }).click();
  await expect(page.getByRole("heading", { name: "Refund for order 5521 (e2e)" })).toBeVisible();
  await a11y(page, "viewer");
  await shot(page, "viewer");
  // No shared-evaluator release on this deployment: the trace says it waits.
  await expect(page.getByText("Shared evaluator: waiting for the first release")).toBeVisible();

  // Tool call and its adjacent result share a row; both are steps.
  const call = page.getByRole("region", { name: "Step 3", exact: true });
  const result = page.getByRole("region", { name: "Step 4", exact: true });
  await expect(call).toContainText("lookup_order");
  await expect(result).toContainText("delivered");
  await expect(call.getByRole("button", { name: "Copy tool input" })).toBeVisible();
  await expect(result.getByRole("button", { name: "Copy tool output" })).toBeVisible();
  // System steps take comments only.
  const system = page.getByRole("region", { name: "Step 1", exact: true });
  await expect(system.getByRole("button", { name: "Comment" })).toBeVisible();
  await expect(system.getByRole("button", { name: /^Rate up, step \d+$/ })).toHaveCount(0);

  // Rate the tool call up.
  const up = call.getByRole("button", { name: "Rate up, step 3" });
  await expect(up).toHaveAttribute("aria-pressed", "false");
  await up.click();
  await expect(up).toHaveAttribute("aria-pressed", "true");

  // The long answer has a preview; Read full message expands, Show less collapses.
  const answer = page.getByRole("region", { name: "Step 5", exact: true });
  await expect(answer).not.toContainText("The END of the message.");
  await answer.getByRole("button", { name: "Read full message" }).click();
  await expect(answer).toContainText("The END of the message.");
  await expect(answer.locator("pre code.hljs")).toContainText("def refund");
  await answer.getByRole("button", { name: "Show less" }).click();
  await expect(answer).not.toContainText("The END of the message.");

  // Quote by selecting text, then comment on it.
  await answer.locator(".content").evaluate((el, word) => {
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const i = n.textContent!.indexOf(word);
      if (i >= 0) {
        const r = document.createRange();
        r.setStart(n, i);
        r.setEnd(n, i + word.length);
        const s = getSelection()!;
        s.removeAllRanges();
        s.addRange(r);
        el.dispatchEvent(new MouseEvent("mouseup", { bubbles: true }));
        return;
      }
    }
    throw new Error("text not found: " + word);
  }, "full refund");
  await answer.getByRole("button", { name: "Quote selection" }).click();
  await answer.getByLabel("Comment text").fill("Promised a refund before checking the damage policy");
  await answer.getByRole("button", { name: "Save comment" }).click();
  await expect(answer.locator("blockquote mark")).toHaveText("full refund");
  await expect(answer).toContainText("Promised a refund before checking the damage policy");
  // The quote is highlighted where it was taken, in the rendered message.
  await expect
    .poll(() => page.evaluate(() => String((CSS as unknown as { highlights: Map<string, Set<Range>> }).highlights.get("critic-quote")?.values().next().value ?? "")))
    .toBe("full refund");

  // A plain comment on the user step, then edit it.
  const user = page.getByRole("region", { name: "Step 2", exact: true });
  await user.getByRole("button", { name: "Comment" }).click();
  await user.getByLabel("Comment text").fill("Clear request");
  await user.getByRole("button", { name: "Save comment" }).click();
  await expect(user).toContainText("Clear request");
  await user.getByRole("button", { name: "Edit" }).click();
  await user.getByLabel("Edit comment text").fill("Clear request with an order number");
  await user.getByRole("button", { name: "Save comment" }).click();
  await expect(user).toContainText("Clear request with an order number");

  // Flag the quoted comment as a label error with a note.
  await answer.getByRole("button", { name: "Flag label error" }).click();
  await answer.getByLabel("Why is this label wrong?").fill("the policy allows it");
  await answer.getByRole("button", { name: "Save flag" }).click();
  await expect(answer).toContainText("Label error: the policy allows it");

  // Rate the trace down, then delete that rating via its annotation.
  await page.getByRole("button", { name: "Rate trace down" }).click();
  await expect(page.getByRole("button", { name: "Rate trace down" })).toHaveAttribute("aria-pressed", "true");
  await a11y(page, "viewer-annotated");
  await shot(page, "viewer-annotated");

  await page.reload();
  await expect(call.getByRole("button", { name: "Rate up, step 3" })).toHaveAttribute("aria-pressed", "true");
  await expect(answer.locator("blockquote mark")).toHaveText("full refund");
  await expect(answer).toContainText("Label error: the policy allows it");
  await expect(user).toContainText("Clear request with an order number");
  await expect(page.getByRole("button", { name: "Rate trace down" })).toHaveAttribute("aria-pressed", "true");

  // Delete the user-step comment; gone after reload too.
  await user.getByRole("button", { name: "Delete" }).click();
  await expect(user).not.toContainText("Clear request");
  await page.reload();
  await expect(page.getByRole("region", { name: "Step 2", exact: true })).toBeVisible();
  await expect(page.getByRole("region", { name: "Step 2", exact: true })).not.toContainText("Clear request");

  // The list counts what changed: 1 up (step), 1 down (trace), 1 comment (the flagged one), 1 flagged.
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Traces" }).click();
  const row = page.locator("tr", { has: page.getByRole("link", { name: "Refund for order 5521 (e2e)" }) });
  await expect(row).toContainText("1 flagged");
});

test("keyboard: j/k move, +/- rate, c comments, e expands, ? lists shortcuts, typing never triggers them", async ({ page }) => {
  await signIn(page);
  await page.getByRole("link", { name: "Refund for order 5521 (e2e)" }).click();
  await expect(page.getByRole("region", { name: "Step 1", exact: true })).toHaveAttribute("aria-current", "true");
  await page.keyboard.press("j");
  await page.keyboard.press("j");
  await expect(page.getByRole("region", { name: "Step 3", exact: true })).toHaveAttribute("aria-current", "true");
  await expect(page).toHaveURL(/step=3/);
  await page.keyboard.press("k");
  await expect(page.getByRole("region", { name: "Step 2", exact: true })).toHaveAttribute("aria-current", "true");
  await page.keyboard.press("j");
  await page.keyboard.press("j");
  await page.keyboard.press("j");
  const answer = page.getByRole("region", { name: "Step 5", exact: true });
  await expect(answer).toHaveAttribute("aria-current", "true");
  await page.keyboard.press("-");
  await expect(answer.getByRole("button", { name: "Rate down, step 5" })).toHaveAttribute("aria-pressed", "true");
  await page.keyboard.press("+");
  await expect(answer.getByRole("button", { name: "Rate up, step 5" })).toHaveAttribute("aria-pressed", "true");
  await expect(answer.getByRole("button", { name: "Rate down, step 5" })).toHaveAttribute("aria-pressed", "false");
  await page.keyboard.press("e");
  await expect(answer).toContainText("The END of the message.");
  await page.keyboard.press("Escape");
  await expect(answer).not.toContainText("The END of the message.");
  await page.keyboard.press("c");
  const box = answer.getByLabel("Comment text");
  await expect(box).toBeFocused();
  await box.pressSequentially("just keep typing: j k + - e c ?");
  await expect(box).toHaveValue("just keep typing: j k + - e c ?");
  await expect(answer).toHaveAttribute("aria-current", "true");
  await expect(answer.getByRole("button", { name: "Rate up, step 5" })).toHaveAttribute("aria-pressed", "true");
  await expect(page.getByRole("dialog")).toHaveCount(0);
  await box.press("Control+Enter");
  await expect(answer.locator(".comment-text", { hasText: "just keep typing" })).toBeVisible();
  await page.keyboard.press("?");
  const dialog = page.getByRole("dialog", { name: "Keyboard shortcuts" });
  await expect(dialog).toBeVisible();
  await expect(dialog).toContainText("next / previous step");
  await a11y(page, "shortcuts");
  await shot(page, "shortcuts");
  await page.keyboard.press("Escape");
  await expect(dialog).toHaveCount(0);
});

test("a 2,000-step session renders only what is on screen and j reaches the end", async ({ page }) => {
  test.skip(!env.bigTrace, "no big trace seeded");
  await signIn(page, env.key, `/traces/${env.bigTrace}`);
  await expect(page.getByRole("region", { name: "Step 1", exact: true })).toBeVisible();
  const inDom = await page.locator("section.step").count();
  expect(inDom).toBeLessThan(60);
  await page.goto(`/traces/${env.bigTrace}?step=1999`);
  await expect(page.getByRole("region", { name: "Step 1999", exact: true })).toHaveAttribute("aria-current", "true");
  await page.keyboard.press("j");
  await expect(page.getByRole("region", { name: "Step 2000", exact: true })).toBeVisible();
  await expect(page.getByRole("region", { name: "Step 2000", exact: true })).toHaveAttribute("aria-current", "true");
  await expect(page.getByRole("region", { name: "Step 1", exact: true })).toHaveCount(0);
});

test("spans appear as a timeline with nested children", async ({ page }) => {
  test.skip(!env.spansTrace, "no spans trace seeded");
  await signIn(page, env.key, `/traces/${env.spansTrace}`);
  await expect(page.getByText(/Timeline · 3 spans/)).toBeVisible();
  await expect(page.getByRole("button", { name: /subagent/ })).toBeVisible();
  await a11y(page, "viewer-spans");
  await shot(page, "viewer-spans");
});

test("review queue: one item at a time, rate with one key, auto-advance, n left", async ({ page }) => {
  await signIn(page);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Review" }).click();
  const progress = page.locator(".progress");
  await expect(progress).toHaveText(/^\d+ left$/);
  const total = parseInt((await progress.textContent())!, 10);
  await a11y(page, "review");
  await shot(page, "review");
  const first = await page.getByRole("article", { name: "Review item" }).getByRole("heading", { level: 2 }).textContent();
  await page.keyboard.press("+");
  await expect(progress).toHaveText(`${total - 1} left`);
  await expect(page.getByRole("article", { name: "Review item" }).getByRole("heading", { level: 2 })).not.toHaveText(first!);
  // The rating landed on the first item's trace.
  await page.keyboard.press("ArrowLeft");
  await expect(page.getByRole("article", { name: "Review item" }).getByRole("heading", { level: 2 })).toHaveText(first!);
  await expect(page.getByRole("button", { name: "Rate up" })).toHaveAttribute("aria-pressed", "true");
});

test("themes: the toggle at the bottom of the sidebar switches and is remembered", async ({ page }) => {
  await signIn(page);
  const html = page.locator("html");
  const before = await html.getAttribute("data-theme");
  await page.getByRole("button", { name: "Theme" }).click();
  const after = before === "dark" ? "light" : "dark";
  await expect(html).toHaveAttribute("data-theme", after);
  await page.reload();
  await expect(html).toHaveAttribute("data-theme", after);
  // Beside the sidebar the whole list fits: a long source name ("E2E
  // support bot") wraps instead of pushing the last column, Contributes,
  // out of sight.
  await expect(page.getByRole("columnheader", { name: "Contributes" })).toBeVisible();
  expect(await page.locator(".table-wrap").evaluate((el) => el.scrollWidth - el.clientWidth)).toBeLessThanOrEqual(0);
  await a11y(page, "traces-" + after);
  await shot(page, "traces-" + after);
  await page.getByRole("link", { name: "Refund for order 5521 (e2e)" }).click();
  await expect(page.getByRole("region", { name: "Step 5", exact: true })).toBeVisible();
  await a11y(page, "viewer-" + after);
  await shot(page, "viewer-" + after);
  await page.getByRole("button", { name: "Theme" }).click();
  await expect(html).toHaveAttribute("data-theme", before!);
});

test("a read-only key sees no write controls", async ({ page }) => {
  await signIn(page, env.readOnlyKey);
  await expect(page.getByText("read-only")).toBeVisible();
  await expect(page.getByRole("button", { name: "Import traces" })).toHaveCount(0);
  const link = page.getByRole("link").filter({ hasText: /./ }).nth(2);
  await expect(page.locator("tbody tr").first()).toBeVisible();
  await page.locator("tbody tr td.title a").first().click();
  await expect(page.getByRole("region", { name: "Step 1", exact: true })).toBeVisible();
  await expect(page.getByRole("button", { name: /^Rate up, step \d+$/ })).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Comment" })).toHaveCount(0);
  await expect(page.getByRole("button", { name: "Flag label error" })).toHaveCount(0);
  void link;
  await a11y(page, "viewer-readonly");
  await shot(page, "viewer-readonly");
});

test("another account's trace id is not found", async ({ page }) => {
  await signIn(page, env.key, `/traces/${env.otherTrace}`);
  await expect(page.getByRole("heading", { name: "Trace not found" })).toBeVisible();
  await a11y(page, "not-found");
  await shot(page, "not-found");
});

test("the API never falls back to the app", async ({ request }) => {
  // The earlier tests' pages really were checked against the OpenAPI document.
  expect(checkedResponses).toBeGreaterThan(20);
  const r = await request.get("/api/v1/nothing-here");
  expect(r.status()).toBe(404);
  expect(r.headers()["content-type"]).toContain("application/json");
  const asset = await request.get("/");
  expect(asset.headers()["cache-control"]).toBe("no-cache");
  const html = await asset.text();
  const js = /src="(\/assets\/[^"]+\.js)"/.exec(html)![1];
  const a = await request.get(js);
  expect(a.headers()["cache-control"]).toContain("immutable");
});
