// Retention on the Team page (issue 37), driven with the mouse and the
// keyboard and checked through the API: the admin types a period, sees how
// many traces it would erase before saving, saves it and turns it off; a
// reviewer is offered no Retention section. Run by
// e2e/retention_web_test.go, which passes the reviewer's key.
import { test, expect, env, signIn, a11y, shot } from "./fixtures";
import type { Page } from "@playwright/test";

const reviewerKey = process.env.CRITIC_E2E_REVIEWER_KEY ?? "";
test.skip(!reviewerKey, "run by e2e/retention_web_test.go");

async function retention(page: Page): Promise<{ days: number | null; would_erase: number }> {
  const r = await page.request.get("/api/v1/rm/retention", { headers: { Authorization: `Bearer ${env.key}` } });
  expect(r.status()).toBe(200);
  return (await r.json()) as { days: number | null; would_erase: number };
}

test("an admin previews, saves and turns off the retention period", async ({ page, browser }) => {
  await page.setViewportSize({ width: 1366, height: 860 });
  await signIn(page);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Team" }).click();
  await expect(page.getByRole("heading", { name: "Retention", level: 2 })).toBeVisible();
  await expect(page.getByText("Now: off — no trace is erased by age.")).toBeVisible();

  const form = page.getByRole("form", { name: "Retention period" });
  await form.getByLabel("Days to keep traces").click();
  await page.keyboard.type("30");
  await expect(page.getByRole("status").filter({ hasText: "older than 30 days" })).toHaveText("0 traces are older than 30 days and would be erased.");
  expect((await retention(page)).days, "nothing saved before Save").toBeNull();
  await form.getByRole("button", { name: "Save retention" }).click();
  await expect(page.getByText("Now: traces older than 30 days are erased daily.", { exact: false })).toBeVisible();
  expect(await retention(page)).toMatchObject({ days: 30, would_erase: 0 });
  await shot(page, "team-retention-1366");
  await a11y(page, "Team page (retention)");

  await form.getByRole("button", { name: "Turn retention off" }).click();
  await expect(page.getByText("Now: off — no trace is erased by age.")).toBeVisible();
  expect((await retention(page)).days).toBeNull();

  // A reviewer's Team page has no Retention section.
  const ctx = await browser.newContext({ baseURL: process.env.CRITIC_E2E_URL, viewport: { width: 1366, height: 860 } });
  const rev = await ctx.newPage();
  await signIn(rev, reviewerKey, "/team");
  await expect(rev.getByRole("heading", { name: "Members", level: 2 })).toBeVisible();
  await expect(rev.getByRole("heading", { name: "Retention" })).toHaveCount(0);
  await ctx.close();
});
