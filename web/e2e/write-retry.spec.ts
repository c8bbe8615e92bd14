// Driven by e2e/write_retry_web_test.go, which imports a two-step trace for
// these tests alone and checks the event log afterwards. Skipped in the main
// suite. A write the server could not take (503 while it starts or drains,
// a dropped connection) is sent again with the same Idempotency-Key, so it
// is neither lost nor stored twice.
import type { Page, Route } from "@playwright/test";
import { test, expect, env, signIn, shot } from "./fixtures";

const trace = process.env.CRITIC_E2E_RETRY_TRACE ?? "";
const annotations = `**/api/v1/rm/traces/${trace}/annotations`;

/** The trace's annotations as the API stores them. */
async function stored(page: Page) {
  const r = await page.request.get(`/api/v1/rm/traces/${trace}`, { headers: { Authorization: "Bearer " + env.key } });
  expect(r.status()).toBe(200);
  return (await r.json()).annotations as { comment?: string | null; rating?: number | null; step_id?: string | null }[];
}

const unavailable = (route: Route, retryAfter: string) =>
  route.fulfill({
    status: 503,
    headers: { "Retry-After": retryAfter },
    contentType: "application/json",
    body: JSON.stringify({ detail: "the service is starting; retry shortly", code: "unavailable" }),
  });

test("a comment answered 503 once is retried with the same key, saved and stored once", async ({ page }) => {
  test.skip(!trace, "no trace seeded for the retry tests");
  await signIn(page, env.key, `/traces/${trace}`);
  const step = page.getByRole("region", { name: "Step 1", exact: true });
  await expect(step).toHaveAttribute("aria-current", "true");
  const keys: (string | undefined)[] = [];
  await page.route(annotations, async (route) => {
    if (route.request().method() !== "POST") return route.fallback();
    keys.push(route.request().headers()["idempotency-key"]);
    if (keys.length === 1) return unavailable(route, "2");
    return route.fallback();
  });

  await page.keyboard.press("c");
  const box = step.getByLabel("Comment text");
  await expect(box).toBeFocused();
  await box.pressSequentially("asked for the order number first");
  await box.press("Control+Enter");
  // The user sees the change is not saved yet, and why.
  const notice = page.getByRole("status").filter({ hasText: "not saved yet" });
  await expect(notice).toContainText("Your change is not saved yet: the server answered 503 (unavailable). Retrying (try 2");
  await shot(page, "write-retry-notice-1366");
  await expect(step.locator(".comment-text", { hasText: "asked for the order number first" })).toBeVisible();
  await expect(notice).toHaveCount(0);
  await expect(page.getByRole("alert")).toHaveCount(0);

  expect(keys).toHaveLength(2);
  expect(keys[0]).toMatch(/^[0-9a-f]{32}$/);
  expect(keys[1]).toBe(keys[0]);
  const saved = (await stored(page)).filter((a) => a.comment === "asked for the order number first");
  expect(saved).toHaveLength(1);
});

test("a rating whose answer was lost after the server stored it is retried and replayed, not stored twice", async ({ page }) => {
  test.skip(!trace, "no trace seeded for the retry tests");
  await signIn(page, env.key, `/traces/${trace}`);
  await expect(page.getByRole("region", { name: "Step 1", exact: true })).toHaveAttribute("aria-current", "true");
  let posts = 0;
  await page.route(annotations, async (route) => {
    if (route.request().method() !== "POST") return route.fallback();
    posts++;
    if (posts === 1) {
      // The request reaches the server, which stores the rating; the
      // connection drops before the browser sees the answer.
      const answer = await route.fetch();
      expect(answer.status()).toBe(200);
      return route.abort("connectionreset");
    }
    return route.fallback();
  });
  const replayed = page.waitForResponse((r) => r.url().endsWith(`/traces/${trace}/annotations`) && r.request().method() === "POST");

  await page.keyboard.press("j");
  const step = page.getByRole("region", { name: "Step 2", exact: true });
  await expect(step).toHaveAttribute("aria-current", "true");
  await page.keyboard.press("+");
  const r = await replayed;
  expect(r.status()).toBe(200);
  expect(r.headers()["idempotent-replayed"]).toBe("true");
  await expect(step.getByRole("button", { name: "Rate up, step 2" })).toHaveAttribute("aria-pressed", "true");
  await expect(page.getByRole("alert")).toHaveCount(0);
  expect(posts).toBe(2);
  const votes = (await stored(page)).filter((a) => a.step_id && a.rating === 1);
  expect(votes).toHaveLength(1);
});

test("a re-rating (PATCH) answered 503 once and a vote taken back (DELETE) whose answer was lost are each retried with their key and stored once", async ({ page }) => {
  test.skip(!trace, "no trace seeded for the retry tests");
  await signIn(page, env.key, `/traces/${trace}`);
  const step = page.getByRole("region", { name: "Step 4", exact: true });
  const up = step.getByRole("button", { name: "Rate up, step 4" });
  const down = step.getByRole("button", { name: "Rate down, step 4" });
  await up.click();
  await expect(up).toHaveAttribute("aria-pressed", "true");
  const r = await page.request.get(`/api/v1/rm/traces/${trace}`, { headers: { Authorization: "Bearer " + env.key } });
  const stepId = ((await r.json()).steps as { id: string }[])[3].id;
  const votes = async () => (await stored(page)).filter((a) => a.step_id === stepId && a.rating != null).map((a) => a.rating);
  expect(await votes()).toEqual([1]);

  const keys: Record<string, (string | undefined)[]> = { PATCH: [], DELETE: [] };
  await page.route("**/api/v1/rm/annotations/*", async (route) => {
    const method = route.request().method();
    if (!(method in keys)) return route.fallback();
    keys[method].push(route.request().headers()["idempotency-key"]);
    if (method === "PATCH" && keys.PATCH.length === 1) return unavailable(route, "2");
    if (method === "DELETE" && keys.DELETE.length === 1) {
      // The server removes the vote; the connection drops before the
      // browser sees the 204. Without the key, the retry would be 404.
      const answer = await route.fetch();
      expect(answer.status()).toBe(204);
      return route.abort("connectionreset");
    }
    return route.fallback();
  });

  // Changing the vote is a PATCH of the same annotation.
  await down.click();
  const notice = page.getByRole("status").filter({ hasText: "not saved yet" });
  await expect(notice).toContainText("Your change is not saved yet: the server answered 503 (unavailable). Retrying (try 2");
  await expect(down).toHaveAttribute("aria-pressed", "true");
  await expect(up).toHaveAttribute("aria-pressed", "false");
  await expect(notice).toHaveCount(0);
  await expect(page.getByRole("alert")).toHaveCount(0);
  expect(keys.PATCH).toHaveLength(2);
  expect(keys.PATCH[0]).toMatch(/^[0-9a-f]{32}$/);
  expect(keys.PATCH[1]).toBe(keys.PATCH[0]);
  expect(await votes()).toEqual([-1]);

  // The same value again takes the vote back: a DELETE.
  const replayed = page.waitForResponse((res) => /\/api\/v1\/rm\/annotations\/[^/]+$/.test(res.url()) && res.request().method() === "DELETE");
  await down.click();
  const res = await replayed;
  expect(res.status()).toBe(204);
  expect(res.headers()["idempotent-replayed"]).toBe("true");
  await expect(down).toHaveAttribute("aria-pressed", "false");
  await expect(page.getByRole("alert")).toHaveCount(0);
  expect(keys.DELETE).toHaveLength(2);
  expect(keys.DELETE[1]).toBe(keys.DELETE[0]);
  expect(keys.DELETE[0]).not.toBe(keys.PATCH[0]);
  expect(await votes()).toEqual([]);
});

test("a write the server keeps refusing fails with an error that names the problem, and nothing is stored", async ({ page }) => {
  test.skip(!trace, "no trace seeded for the retry tests");
  await signIn(page, env.key, `/traces/${trace}`);
  await page.setViewportSize({ width: 390, height: 844 }); // a reviewer on a phone
  const step = page.getByRole("region", { name: "Step 1", exact: true });
  await expect(step).toHaveAttribute("aria-current", "true");
  let posts = 0;
  await page.route(annotations, async (route) => {
    if (route.request().method() !== "POST") return route.fallback();
    posts++;
    // Longer than the client retries: it gives up at once.
    return unavailable(route, "60");
  });
  await page.keyboard.press("c");
  const box = step.getByLabel("Comment text");
  await expect(box).toBeFocused();
  await box.pressSequentially("this one cannot be saved");
  await box.press("Control+Enter");
  await expect(page.getByRole("alert")).toContainText(
    /the service is starting; retry shortly — gave up after 1 try in \d+ s \(the server asked to wait 60 s more\)\. Reload to see whether it was saved\./,
  );
  await shot(page, "write-retry-gave-up-390");
  expect(posts).toBe(1);
  expect((await stored(page)).filter((a) => a.comment === "this one cannot be saved")).toHaveLength(0);
});
