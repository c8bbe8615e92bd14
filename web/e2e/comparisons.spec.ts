// Driven by e2e/comparisons_web_test.go, which seeds two comparisons (the
// feedback model's alternatives, recorded by a real worker). Skipped in the
// main suite, which has none.
import { test, expect, env, signIn, a11y, shot } from "./fixtures";

test("comparisons: A / B pick a side, E is a tie with a comment, then nothing is left", async ({ page }) => {
  test.skip(!process.env.CRITIC_E2E_COMPARE, "no comparisons seeded");
  await signIn(page);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Comparisons" }).click();
  await expect(page.getByRole("heading", { level: 1, name: "Comparisons" })).toBeVisible();
  await expect(page.locator(".progress")).toHaveText("2 to compare");
  const card = page.getByRole("article", { name: "Comparison" });
  // Which side is the original is never shown.
  await expect(card).not.toContainText("original");
  await a11y(page, "comparisons");
  await shot(page, "comparisons");

  // In queue order (oldest finding first): the numbers get the side with the
  // ascending sort; the letters a comment (C focuses it; typing there is not
  // a shortcut), then E for a tie.
  for (const left of ["2 to compare", "1 to compare"]) {
    await expect(page.locator(".progress")).toHaveText(left);
    const title = await card.getByRole("heading", { level: 2 }).textContent();
    if (title === "Sorting numbers") {
      // Opt this trace in from here; the server's notice says what it covers.
      const consent = page.getByRole("checkbox", { name: "Contribute this trace to the shared evaluator" });
      await expect(consent).not.toBeChecked();
      await consent.check();
      await expect(page.getByRole("status")).toContainText("corrections, step ratings and reviewed comparisons");
      await expect(consent).toBeChecked();
      const a = await card.getByRole("region", { name: "Action A" }).textContent();
      await page.keyboard.press(a!.includes("Sorted ascending") ? "a" : "b");
    } else {
      expect(title).toBe("Sorting letters");
      await page.keyboard.press("c");
      await expect(page.getByLabel("Comment (optional)")).toBeFocused();
      await page.keyboard.type("both fine");
      // Tab out of the comment and E at once, as a quick reviewer does (a
      // full make test once stored "both fin": the key listener still held
      // the comment of one render earlier; it is now a layout effect).
      await page.keyboard.press("Tab");
      await page.keyboard.press("e");
    }
    await expect(page.locator(".progress")).not.toHaveText(left);
  }
  await expect(page.getByText(/^Nothing to compare/)).toBeVisible();
  await a11y(page, "comparisons-empty");
});
