// Who did what (issue 36): after two reviewers rate, the admin's Team page
// shows each member's annotations, traces judged and what their queue
// still offers under overlap 2; a member's name opens the trace list
// filtered to what they annotated, the filter in the address; the admin
// reads a reviewer's review queue; a reviewer's Team page shows their own
// row alone. Run by e2e/team_progress_web_test.go,
// which seeds the reviewers (Rita, Rob) and their ratings.
import { test, expect, env, signIn, a11y, shot } from "./fixtures";

const ritaKey = process.env.CRITIC_E2E_RITA_KEY ?? "";
test.skip(!ritaKey, "run by e2e/team_progress_web_test.go");

test("the admin sees who did what and filters the trace list by member", async ({ page, browser }) => {
  await page.setViewportSize({ width: 1366, height: 860 });
  await signIn(page);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Team" }).click();
  await expect(page.getByRole("heading", { name: "Progress", exact: true })).toBeVisible();
  await expect(page.getByLabel("Queue coverage")).toHaveText("1 of 3 traces judged by 2 members");
  const rows = page.getByRole("table", { name: "Progress by member" });
  // Member, annotations, judged, remaining.
  await expect(rows.getByRole("row", { name: "Progress of Rita" }).getByRole("cell")).toHaveText(["Rita", "2", "2", "1", /\d/]);
  await expect(rows.getByRole("row", { name: "Progress of Rob" }).getByRole("cell")).toHaveText(["Rob", "2", "1", "2", /\d/]);
  await expect(rows.getByRole("row", { name: "Progress of Vic" }).getByRole("cell")).toHaveText(["Vic", "0", "0", "—", "never"]);
  await a11y(page, "Team page progress (admin)");
  await shot(page, "team-progress-1366");

  // Rob's name opens the list of the traces he annotated.
  await rows.getByRole("link", { name: "Rob" }).click();
  await expect(page).toHaveURL(/\/traces\?member=/);
  const filter = page.getByRole("combobox", { name: "Annotated by" });
  await expect(filter.locator("option:checked")).toHaveText("Rob");
  await expect(page.getByRole("link", { name: /^Progress: / })).toHaveText(["Progress: t3", "Progress: t1"]);
  // The keyboard picks another member; the address follows.
  await filter.focus();
  await filter.selectOption({ label: "Rita" });
  await expect(page.getByRole("link", { name: /^Progress: / })).toHaveText(["Progress: t2", "Progress: t1"]);
  expect(new URL(page.url()).searchParams.get("member")).toBeTruthy();
  await page.reload();
  await expect(page.getByRole("combobox", { name: "Annotated by" }).locator("option:checked")).toHaveText("Rita");
  await expect(page.getByRole("link", { name: /^Progress: / })).toHaveCount(2);
  await page.getByRole("button", { name: "Clear filters" }).click();
  await expect(page.getByRole("link", { name: /^Progress: / })).toHaveCount(3);

  // The admin looks at Rita's review queue: only t3 is left for her.
  await page.goto("/review");
  await expect(page.getByText("2 left")).toBeVisible();
  await page.getByRole("combobox", { name: "Queue of" }).selectOption({ label: "Rita" });
  await expect(page.getByText("1 left")).toBeVisible();
  await expect(page.getByText("Rita's queue: what it still offers them under the review overlap.", { exact: false })).toBeVisible();
  expect(new URL(page.url()).searchParams.get("member")).toBeTruthy();

  // Rita sees her own progress only, and no member filter.
  const ctx = await browser.newContext({ baseURL: process.env.CRITIC_E2E_URL, viewport: { width: 1366, height: 860 } });
  const rita = await ctx.newPage();
  await rita.goto("/team#key=" + encodeURIComponent(ritaKey));
  await expect(rita.getByRole("heading", { name: "Your progress", exact: true })).toBeVisible();
  const mine = rita.getByRole("table", { name: "Progress by member" });
  await expect(mine.getByRole("row", { name: "Progress of Rita" }).getByRole("cell")).toHaveText(["Rita", "2", "2", "1", /\d/]);
  await expect(mine.getByRole("row", { name: /^Progress of / })).toHaveCount(1);
  await rita.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Traces" }).click();
  await expect(rita.getByRole("link", { name: /^Progress: / })).toHaveCount(3);
  await expect(rita.getByRole("combobox", { name: "Annotated by" })).toHaveCount(0);
  await ctx.close();
  void env;
});
