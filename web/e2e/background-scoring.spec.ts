// Driven by e2e/background_scoring_test.go, which trains a model with the
// real worker and lets background scoring score fourteen traces. Skipped in
// the main suite, which has no such model.
import { test, expect, signIn, a11y, shot } from "./fixtures";

test("model page: background scoring's counts, paused and resumed", async ({ page }) => {
  const id = process.env.CRITIC_E2E_BG_MODEL;
  test.skip(!id, "no background-scored model seeded");
  await signIn(page, undefined, `/models/${id}`);
  const panel = page.getByRole("region", { name: "Background scoring" });
  const table = panel.getByRole("table", { name: "Background scoring" });
  await expect(table.getByRole("row", { name: /Scored/ })).toContainText("14");
  await expect(table.getByRole("row", { name: /Queued/ })).toContainText("0");
  await expect(table.getByRole("row", { name: /Failed/ })).toContainText("0");
  await a11y(page, "background-scoring");
  await shot(page, "background-scoring");
  await panel.getByRole("button", { name: "Pause background scoring" }).click();
  await expect(panel.getByRole("button", { name: "Resume background scoring" })).toBeVisible();
  await expect(panel.getByRole("status")).toContainText("Paused");
  // The state is the server's: a reload shows it paused.
  await page.reload();
  await panel.getByRole("button", { name: "Resume background scoring" }).click();
  await expect(panel.getByRole("button", { name: "Pause background scoring" })).toBeVisible();
  await expect(panel.getByRole("status")).not.toContainText("Paused");
});
