// The trace list's score columns (issue 35): credit, actions scored, trace
// score, outcome and model score, sorted by clicking a column header with
// the mouse and filtered by outcome and "Credit ≤ 0", every view in the
// address. Run by e2e/trace_list_scores_web_test.go on its own account:
// four traces, "Refund success" (credit +0.10, success, model score 1.5),
// "Refund partial" (partial success, nothing scored), "Refund failure"
// (credit −0.60, failure, −2) and "Plain chat" (no labels, model score 0.3).
import { test, expect, env, signIn, a11y, shot } from "./fixtures";
import type { Page } from "@playwright/test";

test.skip(process.env.CRITIC_E2E_LIST_SCORES !== "1", "run by e2e/trace_list_scores_web_test.go");

const titles = (page: Page) => page.locator("table.traces tbody td.title a");
const header = (page: Page, name: string) => page.getByRole("columnheader").filter({ has: page.getByRole("button", { name: new RegExp("^" + name) }) });

test("a click on a score column's header sorts by it, unscored traces last, and the address keeps the sort", async ({ page }) => {
  await page.setViewportSize({ width: 1366, height: 860 });
  await signIn(page, env.key, "/traces");
  await expect(titles(page)).toHaveText(["Plain chat", "Refund failure", "Refund partial", "Refund success"]);

  await header(page, "Credit").getByRole("button").click();
  await expect(page).toHaveURL(/[?&]sort=action_credit(&|$)/);
  await expect(header(page, "Credit")).toHaveAttribute("aria-sort", "ascending");
  await expect(titles(page)).toHaveText(["Refund failure", "Refund success", "Plain chat", "Refund partial"]);

  await header(page, "Credit").getByRole("button").click();
  await expect(page).toHaveURL(/[?&]sort=-action_credit(&|$)/);
  await expect(titles(page)).toHaveText(["Refund success", "Refund failure", "Plain chat", "Refund partial"]);

  // The credit is signed and colored as the viewer's badges.
  const failure = page.getByRole("row").filter({ hasText: "Refund failure" });
  await expect(failure.locator(".chip.credit")).toHaveText("-0.60");
  await expect(failure.locator(".chip.credit")).toHaveClass(/\bneg\b/);
  await expect(failure.locator(".chip.outcome")).toHaveText("Failure");
  const success = page.getByRole("row").filter({ hasText: "Refund success" });
  await expect(success.locator(".chip.credit")).toHaveText("+0.10");
  await expect(success.locator(".chip.credit")).toHaveClass(/\bpos\b/);

  // A reload (or a shared link) shows the same order.
  await page.reload();
  await expect(header(page, "Credit")).toHaveAttribute("aria-sort", "descending");
  await expect(titles(page)).toHaveText(["Refund success", "Refund failure", "Plain chat", "Refund partial"]);

  await header(page, "Outcome").getByRole("button").click();
  await expect(page).toHaveURL(/[?&]sort=outcome(&|$)/);
  await expect(titles(page)).toHaveText(["Refund failure", "Refund partial", "Refund success", "Plain chat"]);
  await header(page, "Model score").getByRole("button").click();
  await expect(page).toHaveURL(/[?&]sort=latest_score(&|$)/);
  await expect(titles(page)).toHaveText(["Refund failure", "Plain chat", "Refund success", "Refund partial"]);
  await header(page, "Trace score").getByRole("button").click();
  await expect(titles(page)).toHaveText(["Refund failure", "Refund partial", "Refund success", "Plain chat"]);
  // The whole list fits beside the sidebar at 1366 px: nothing to scroll sideways to.
  expect(await page.locator(".table-wrap").evaluate((el) => el.scrollWidth - el.clientWidth)).toBeLessThanOrEqual(0);
  await a11y(page, "trace list sorted by trace score");
  await shot(page, "trace-list-scores-1366");
});

test("the outcome filter and Credit ≤ 0 narrow the list and live in the address", async ({ page }) => {
  await page.setViewportSize({ width: 1366, height: 860 });
  await signIn(page, env.key, "/traces?sort=-trace_score");
  await page.getByLabel("Outcome").selectOption("failure");
  await expect(page).toHaveURL(/[?&]outcome=failure(&|$)/);
  await expect(page).toHaveURL(/[?&]sort=-trace_score(&|$)/);
  await expect(titles(page)).toHaveText(["Refund failure"]);
  await page.getByLabel("Outcome").selectOption("");
  await expect(titles(page)).toHaveCount(4);

  await page.getByRole("checkbox", { name: "Credit ≤ 0" }).click();
  await expect(page).toHaveURL(/[?&]action_credit_max=0(&|$)/);
  await expect(titles(page)).toHaveText(["Refund failure"]);
  await page.reload();
  await expect(page.getByRole("checkbox", { name: "Credit ≤ 0" })).toBeChecked();
  await expect(titles(page)).toHaveText(["Refund failure"]);
  await page.getByRole("button", { name: "Clear filters" }).click();
  await expect(titles(page)).toHaveCount(4);
  await expect(page).toHaveURL(/[?&]sort=-trace_score(&|$)/);
});

test("at 390 px the scores stay readable and the Sort select orders the cards", async ({ page }) => {
  await signIn(page, env.key, "/traces"); // the sidebar's links fold away at 390 px
  await page.setViewportSize({ width: 390, height: 844 });
  await page.getByLabel("Sort").selectOption("action_credit");
  await expect(page).toHaveURL(/[?&]sort=action_credit(&|$)/);
  await expect(titles(page)).toHaveText(["Refund failure", "Refund success", "Plain chat", "Refund partial"]);
  const failure = page.getByRole("row").filter({ hasText: "Refund failure" });
  await expect(failure.locator(".chip.credit")).toBeVisible();
  await expect(failure.locator(".chip.outcome")).toBeVisible();
  await expect(failure.locator("td.lesser")).toBeHidden();
  // The card names its consent switch, the header row being gone.
  await expect(failure.getByRole("switch")).toBeVisible();
  expect(await failure.locator("td.consent").evaluate((td) => getComputedStyle(td, "::before").content)).toBe('"Contributes "');
  // Nothing overflows the screen sideways.
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await a11y(page, "trace list at 390 px");
  await shot(page, "trace-list-scores-390");
});
