// Driven by e2e/score_again_web_test.go, which releases the shared evaluator
// (a real worker trains the candidate and scores the traces) and names a
// trace release 1 scored. Skipped in the main suite, which has no release.
import { test, expect, env, signIn, a11y, shot } from "./fixtures";

const scoredTrace = process.env.CRITIC_E2E_EVALUATOR_TRACE ?? "";

test("Score again: a click asks the live release to score the trace once more", async ({ page }) => {
  test.skip(!scoredTrace, "no shared-evaluator release seeded");
  await signIn(page, env.key, `/traces/${scoredTrace}`);
  const status = page.getByText(/^Shared evaluator: /);
  await expect(status).toHaveText("Shared evaluator: scored by release 1");
  const again = page.getByRole("button", { name: "Score again" });
  await expect(again).toBeEnabled();
  await a11y(page, "score again");
  await shot(page, "score-again");

  // With the mouse, on the button itself.
  const box = (await again.boundingBox())!;
  const answered = page.waitForResponse((r) => r.url().endsWith(`/traces/${scoredTrace}/evaluator/rescore`) && r.request().method() === "POST");
  await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
  expect((await answered).status()).toBe(202);
  // The worker scores it again in the background; the viewer follows.
  await expect(page.getByRole("alert")).toHaveCount(0);
  await expect(status).toHaveText("Shared evaluator: scored by release 1", { timeout: 60_000 });
  await expect(again).toBeEnabled();
});
