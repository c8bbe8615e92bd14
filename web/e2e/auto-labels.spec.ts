// Driven by e2e/labeler_test.go (TestAutomaticLabelsInTheViewer), which
// runs a step-label model (the scripted test server) and a real worker, so
// the trace's labels are the model's, not imported. Skipped in the main
// suite, which has no step-label model.
import { test, expect, signIn, a11y } from "./fixtures";

const trace = process.env.CRITIC_E2E_AUTO_LABELED_TRACE ?? "";

test("automatic labels: the model's labels show as chips, the rescore icon labels the trace anew, and the model trained on the trace is a link", async ({ page }) => {
  test.skip(!trace, "no automatically labeled trace seeded");
  await signIn(page, undefined, `/traces/${trace}`);
  const ask = page.getByRole("region", { name: "Step 1" });
  await expect(ask.getByText("intent: request")).toBeVisible();
  await expect(page.getByRole("region", { name: "Step 2" }).getByText("type: tool_call")).toBeVisible();
  await expect(page.getByRole("region", { name: "Step 4" }).getByText("outcome: solved")).toBeVisible();
  await a11y(page, "viewer with automatic labels");

  // The rescore icon says what it does; after it the model's second opinion
  // (the scripted model now reads the request as a follow-up) replaces the label.
  const rescore = page.getByRole("button", { name: "Rescore: rerun automatic labels and scores" });
  await expect(rescore).toHaveAttribute("title", "Rescore: rerun automatic labels and scores");
  await rescore.click();
  await expect(ask.getByText("intent: follow_up")).toBeVisible({ timeout: 30_000 });
  await expect(ask.getByText("intent: request")).toHaveCount(0);

  // The model trained on this trace, with its status, links to its page.
  const trained = page.getByRole("group", { name: "Models trained on this trace" });
  await expect(trained).toContainText("invoices failed");
  await trained.getByRole("link", { name: "invoices" }).click();
  await expect(page).toHaveURL(/\/models\/[0-9a-f-]{36}$/);
  await expect(page.getByRole("heading", { level: 1 })).toContainText("invoices");
});
