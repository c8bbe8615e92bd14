// A reward model's learning report says how far the member labels it was
// trained on agree (issue 36): on the model page, the counts of labeled,
// co-rated, disputed, adjudicated and excluded targets and the alpha with
// its count and "too few to trust". Run by e2e/model_agreement_web_test.go,
// which seeds a fixed labeling (an admin and two reviewers over six traces:
// two agreed, one disputed, one disputed and adjudicated, two rated once)
// and a model trained with exclude_disputed.
import { test, expect, signIn, a11y } from "./fixtures";

const modelId = process.env.CRITIC_E2E_AGREEMENT_MODEL ?? "";
test.skip(!modelId, "run by e2e/model_agreement_web_test.go");

test("the model page shows the agreement of its training labels", async ({ page }) => {
  await signIn(page, undefined, `/models/${modelId}`);
  await expect(page.getByRole("heading", { name: "Agreement of the training labels", level: 2 })).toBeVisible();
  const table = page.getByRole("table", { name: "Agreement of the training labels" });
  const row = (name: string) => table.getByRole("row", { name: new RegExp("^" + name) }).getByRole("cell");
  await expect(row("Labeled targets")).toHaveText("6");
  await expect(row("Rated by two or more members")).toHaveText("4");
  await expect(row("Disputed")).toHaveText("2");
  await expect(row("Adjudicated")).toHaveText("1");
  await expect(row("Excluded as disputed")).toHaveText("1");
  await expect(page.getByLabel("Alpha of the training labels: 0.20, n=4, too few to trust")).toBeVisible();
  await a11y(page, "Model page with the agreement of its training labels");
});
