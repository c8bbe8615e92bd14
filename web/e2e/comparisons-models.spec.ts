// Driven by e2e/models_comparison_web_test.go, which seeds one comparison of
// two models' preferred actions (they disagree on a prompt two rollouts
// answered differently). Skipped in the main suite, which has none.
import { test, expect, signIn, a11y, shot } from "./fixtures";

test("comparisons: two models' preferred actions, picked with the keyboard", async ({ page }) => {
  test.skip(!process.env.CRITIC_E2E_COMPARE_MODELS, "no models comparison seeded");
  await signIn(page);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Comparisons" }).click();
  await expect(page.locator(".progress")).toHaveText("1 to compare");
  const card = page.getByRole("article", { name: "Comparison" });
  await expect(card).toContainText("two of your reward models prefer different actions here");
  await expect(card.getByRole("region", { name: "Context" })).toContainText("user: Sort 3, 1, 2 ascending");
  // Which model preferred which is never shown.
  await expect(card).not.toContainText("model_a");
  await expect(card).not.toContainText("first");
  await a11y(page, "comparisons-models");
  await shot(page, "comparisons-models");
  const a = await card.getByRole("region", { name: "Action A" }).textContent();
  await page.keyboard.press(a!.includes("1, 2, 3") ? "a" : "b");
  await expect(page.getByText(/^Nothing to compare/)).toBeVisible();
});
