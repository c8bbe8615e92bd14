// Teams (issue 36), driven with the mouse and the keyboard and checked
// through the API: the admin invites a reviewer on the Team page, the
// reviewer signs in with the one-time link in a fresh browser context (the
// same link again says it was already used), is
// offered no import, train or SQL control and rates a step; the admin sees
// both members' ratings in the viewer and the agreement figures and the
// disputed targets on the Team page, and settles one. Run by
// e2e/team_web_test.go, which seeds a second reviewer (Bea) and twelve
// co-rated traces.
import { test, expect, env, signIn, a11y, shot } from "./fixtures";
import type { Page } from "@playwright/test";

const traceId = process.env.CRITIC_E2E_TEAM_TRACE ?? "";
test.skip(!traceId, "run by e2e/team_web_test.go");

type Ann = { step_id: string | null; rating: number | null; author_name: string; member_id: string };
type Trace = { steps: { id: string }[]; annotations: Ann[] };
type Member = { id: string; name: string; role: string; removed: boolean };

async function get<T>(page: Page, path: string, key = env.key): Promise<T> {
  const r = await page.request.get(`/api/v1/rm${path}`, { headers: { Authorization: `Bearer ${key}` } });
  expect(r.status(), path).toBe(200);
  return (await r.json()) as T;
}

test("an admin invites a reviewer, who rates; the admin sees both ratings and the agreement", async ({ page, browser }) => {
  await page.setViewportSize({ width: 1366, height: 860 });
  await signIn(page);
  const me = await get<{ member: { id: string; name: string; role: string } }>(page, "/me");
  expect(me.member.role).toBe("admin");

  // The admin adds Rita as a reviewer: mouse to the field, keyboard for the name.
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Team" }).click();
  await expect(page.getByRole("heading", { name: "Team", level: 1 })).toBeVisible();
  const add = page.getByRole("form", { name: "Add a member" });
  await add.getByLabel("Name").click();
  await page.keyboard.type("Rita");
  await add.getByLabel("Role").selectOption("reviewer");
  await add.getByRole("button", { name: "Add member" }).click();
  const linkField = page.getByRole("textbox", { name: "Sign-in link for Rita" });
  await expect(linkField).toBeVisible();
  await expect(page.getByRole("button", { name: "Copy the sign-in link for Rita" })).toBeVisible();
  const link = await linkField.inputValue();
  expect(link).toContain("#invite=");
  expect(link).not.toContain("critic_"); // a one-time token, not an API key
  await expect(page.getByRole("row", { name: "Member Rita" })).toContainText("reviewer");
  await shot(page, "team-invite-1366");
  await a11y(page, "Team page (admin)");

  const members = await get<{ members: Member[] }>(page, "/members");
  expect(members.members.filter((m) => !m.removed).map((m) => [m.name, m.role]).sort()).toEqual(
    [[me.member.name, "admin"], ["Bea", "reviewer"], ["Rita", "reviewer"]].sort(),
  );

  // Rita, in a browser that has never seen the admin's key, opens the link.
  const ctx = await browser.newContext({ baseURL: process.env.CRITIC_E2E_URL, viewport: { width: 1366, height: 860 } });
  const rita = await ctx.newPage();
  await rita.goto("/" + new URL(link).hash);
  const nav = rita.getByRole("navigation", { name: "Main" });
  await expect(nav.getByRole("link", { name: "Traces" })).toBeVisible();
  await expect(rita.getByText("reviewer", { exact: true })).toBeVisible();
  await expect(nav.getByRole("link", { name: "Team" })).toBeVisible();
  await expect(nav.getByRole("link", { name: "SQL" })).toHaveCount(0);
  await expect(rita.getByRole("heading", { name: "Traces", level: 1 })).toBeVisible();
  expect(new URL(rita.url()).hash).toBe(""); // the token left the address bar
  // The same link again, in another fresh browser, is spent: it says so plainly.
  const again = await browser.newContext({ baseURL: process.env.CRITIC_E2E_URL, viewport: { width: 1366, height: 860 } });
  const late = await again.newPage();
  await late.goto("/" + new URL(link).hash);
  await expect(late.getByRole("alert")).toContainText("this sign-in link was already used; ask your admin for a new one");
  await expect(late.getByLabel("API key")).toBeVisible();
  await again.close();
  await expect(rita.getByRole("link", { name: "Team: refund request" })).toBeVisible();
  await expect(rita.getByRole("button", { name: "Import traces" })).toHaveCount(0);
  // Selecting traces offers no training to a reviewer.
  await rita.getByRole("checkbox", { name: "Select Team: refund request" }).click();
  await expect(rita.getByText("1 selected")).toBeVisible();
  await expect(rita.getByRole("button", { name: /reward model/i })).toHaveCount(0);

  await rita.getByRole("link", { name: "Team: refund request" }).click();
  const step2 = rita.getByRole("region", { name: "Step 2", exact: true });
  await expect(step2).toBeVisible();
  await expect(rita.getByRole("button", { name: /delete/i })).toHaveCount(0);
  await expect(rita.getByRole("button", { name: /^score/i })).toHaveCount(0);
  await step2.getByRole("button", { name: "Rate down, step 2" }).click();
  await expect(step2.getByRole("button", { name: "Rate down, step 2" })).toHaveAttribute("aria-pressed", "true");
  await expect(step2.getByText("Rita", { exact: true })).toBeVisible();

  // Rita's Team page is read-only.
  await nav.getByRole("link", { name: "Team" }).click();
  await expect(rita.getByRole("heading", { name: "Members", exact: true })).toBeVisible();
  await expect(rita.getByRole("row", { name: "Member Rita" })).toContainText("reviewer");
  await expect(rita.getByText("Members per item: 1")).toBeVisible();
  await expect(rita.getByRole("listitem", { name: /^Disputed: Team: refund request/ })).toBeVisible();
  await expect(rita.getByRole("form", { name: "Add a member" })).toHaveCount(0);
  await expect(rita.getByRole("button", { name: /^Remove/ })).toHaveCount(0);
  await expect(rita.getByRole("button", { name: "Adjudicate" })).toHaveCount(0);
  await shot(rita, "team-reviewer-1366");
  // The server refuses what the page does not offer.
  // With the key the link issued, stored as #key= stores it.
  const ritaKey = await rita.evaluate(() => localStorage.getItem("critic.apiKey"));
  expect(ritaKey).toMatch(/^critic_/);
  const refused = await rita.request.post("/api/v1/rm/members", { headers: { Authorization: `Bearer ${ritaKey}` }, data: { name: "Eve", role: "admin" } });
  expect(refused.status()).toBe(403);
  await ctx.close();

  // What the API stored: one rating per member on step 2, each attributed.
  const t = await get<Trace>(page, `/traces/${traceId}`);
  const onStep2 = t.annotations.filter((a) => a.step_id === t.steps[1].id && a.rating !== null).map((a) => [a.author_name, a.rating]);
  expect(onStep2.sort()).toEqual([[me.member.name, 1], ["Rita", -1]].sort());

  // The admin's viewer shows who rated what.
  await page.goto(`/traces/${traceId}`);
  const adminStep2 = page.getByRole("region", { name: "Step 2", exact: true });
  await expect(adminStep2.getByRole("listitem").filter({ hasText: "Rita" })).toContainText("−1");
  await expect(adminStep2.getByRole("listitem").filter({ hasText: me.member.name })).toContainText("+1");
  await shot(page, "team-viewer-ratings-1366");

  // Agreement on the Team page: the account's alpha over 13 co-rated targets.
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Team" }).click();
  const report = await get<{ account: { value: number | null; n: number; too_few: boolean }; co_rated: number; disputed: number }>(page, "/agreement");
  expect(report.co_rated).toBe(13);
  expect(report.disputed).toBe(3);
  expect(report.account.too_few).toBe(false);
  expect(report.account.value).not.toBeNull();
  await expect(page.getByLabel(new RegExp(`^Account alpha: ${report.account.value!.toFixed(2).replace("-", "\\-")}, n=${report.account.n}$`))).toBeVisible();
  await expect(page.getByLabel(/^Agreement of (.+ and Bea|Bea and .+): 83%, n=12$/)).toBeVisible();
  await expect(page.getByLabel(/^Agreement of (.+ and Rita|Rita and .+): 0%, n=1, too few to trust$/)).toBeVisible();
  // Per criterion: Grounded, judged by the admin and Bea (seeded), apart on one of four.
  await expect(page.getByRole("table", { name: "Agreement per criterion" }).getByLabel("Alpha for Grounded: 0.53, n=4, too few to trust")).toBeVisible();
  await expect(page.getByRole("heading", { name: "Disputed", exact: true })).toBeVisible();

  // The admin settles Rita's disputed step: the final judgment is up.
  const item = page.getByRole("listitem", { name: "Disputed: Team: refund request, step 2" });
  await expect(item).toContainText("Rita: ▼ down");
  await item.getByRole("button", { name: "Adjudicate" }).click();
  await item.getByLabel("▲ up").click();
  await item.getByLabel("Reason").click();
  await page.keyboard.type("The refund did go through.");
  await item.getByRole("button", { name: "Save final judgment" }).click();
  await expect(item).toContainText("Final: ▲ up — The refund did go through.");
  const disputed = await get<{ items: { trace_id: string; step_id: string | null; adjudication: { rating: number | null; reason: string } | null }[] }>(page, "/disputed");
  const settled = disputed.items.find((d) => d.trace_id === traceId && d.step_id === t.steps[1].id);
  expect(settled?.adjudication).toMatchObject({ rating: 1, reason: "The refund did go through." });
  await shot(page, "team-agreement-1366");

  // A viewer, added through the API, reads the trace with no rating or comment control.
  const v = await page.request.post("/api/v1/rm/members", { headers: { Authorization: `Bearer ${env.key}` }, data: { name: "Vic", role: "viewer" } });
  expect(v.status()).toBe(201);
  const vic = (await v.json()) as { api_key: string };
  const vctx = await browser.newContext({ baseURL: process.env.CRITIC_E2E_URL, viewport: { width: 1366, height: 860 } });
  const viewer = await vctx.newPage();
  await viewer.goto(`/traces/${traceId}#key=${encodeURIComponent(vic.api_key)}`);
  const vstep2 = viewer.getByRole("region", { name: "Step 2", exact: true });
  await expect(vstep2.getByText("Rita", { exact: true })).toBeVisible();
  await expect(viewer.getByText("viewer", { exact: true })).toBeVisible();
  await expect(viewer.getByRole("button", { name: /^Rate|^Comment|Delete|Edit/ })).toHaveCount(0);
  await expect(viewer.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "SQL" })).toHaveCount(0);
  await vctx.close();

  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByRole("heading", { name: "Team", level: 1 }).scrollIntoViewIfNeeded();
  await shot(page, "team-390");
  await page.getByRole("heading", { name: "Agreement", exact: true }).scrollIntoViewIfNeeded();
  await shot(page, "team-agreement-390");
});
