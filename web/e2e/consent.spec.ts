// Consent to train the shared evaluator, in the trace list (per row and for
// the selection) and in the viewer. e2e/web_test.go seeds an account of its
// own with "Consent A" and "Consent B" (off) and "Consent C" (opted in on
// import).
import type { APIRequestContext, Page } from "@playwright/test";
import { test, expect, env, signIn, a11y, shot } from "./fixtures";

const consentKey = process.env.CRITIC_E2E_CONSENT_KEY ?? "";
const auth = { Authorization: "Bearer " + consentKey };

type Summary = { id: string; title: string; contribute: boolean };

/** What the API says each trace's consent is, by title. */
async function apiConsent(request: APIRequestContext): Promise<Record<string, boolean>> {
  const r = await request.get("/api/v1/rm/traces?limit=100", { headers: auth });
  expect(r.status()).toBe(200);
  const out: Record<string, boolean> = {};
  for (const t of ((await r.json()) as { traces: Summary[] }).traces) out[t.title] = t.contribute;
  return out;
}

async function traceId(request: APIRequestContext, title: string): Promise<string> {
  const r = await request.get("/api/v1/rm/traces?limit=100", { headers: auth });
  const t = ((await r.json()) as { traces: Summary[] }).traces.find((x) => x.title === title);
  expect(t, title).toBeTruthy();
  return t!.id;
}

const rowSwitch = (page: Page, title: string) => page.getByRole("switch", { name: `Contribute ${title} to the shared evaluator` });

test("consent on the trace list: per row and for the selection, as the API and SQL show it", async ({ page }) => {
  test.skip(!consentKey, "no consent account seeded");
  await signIn(page, consentKey);
  await expect(page.getByRole("link", { name: "Consent A" })).toBeVisible();
  await expect(page.getByRole("columnheader", { name: "Contributes" })).toBeVisible();

  // The state comes from the summaries: C was opted in on import.
  await expect(rowSwitch(page, "Consent A")).not.toBeChecked();
  await expect(rowSwitch(page, "Consent B")).not.toBeChecked();
  await expect(rowSwitch(page, "Consent C")).toBeChecked();
  await a11y(page, "traces-consent");

  // One row on: the server's notice says what it covers; a reload shows it.
  await rowSwitch(page, "Consent A").click();
  await expect(page.getByRole("status")).toContainText("corrections, step ratings and reviewed comparisons may train future shared evaluator candidates");
  await expect(rowSwitch(page, "Consent A")).toBeChecked();
  expect(await apiConsent(page.request)).toEqual({ "Consent A": true, "Consent B": false, "Consent C": true });
  await page.reload();
  await expect(rowSwitch(page, "Consent A")).toBeChecked();

  // The selection: A and B on (A already was: nothing changes for it).
  await page.getByRole("checkbox", { name: "Select Consent A" }).check();
  await page.getByRole("checkbox", { name: "Select Consent B" }).check();
  await page.getByRole("button", { name: "Contribute selected" }).click();
  await expect(page.getByRole("status")).toContainText("2 traces now contribute: their corrections, step ratings and reviewed comparisons");
  await expect(rowSwitch(page, "Consent B")).toBeChecked();
  expect(await apiConsent(page.request)).toEqual({ "Consent A": true, "Consent B": true, "Consent C": true });

  // Every shown trace off: opting out says released weights cannot unlearn.
  await page.getByRole("checkbox", { name: "Select all shown" }).check();
  await page.getByRole("button", { name: "Stop contributing selected" }).click();
  await expect(page.getByRole("status")).toContainText("3 traces no longer contribute: they are excluded from every future shared evaluator candidate.");
  await expect(page.getByRole("status")).toContainText("Weights already released cannot unlearn data they were trained on.");
  for (const t of ["Consent A", "Consent B", "Consent C"]) await expect(rowSwitch(page, t)).not.toBeChecked();
  expect(await apiConsent(page.request)).toEqual({ "Consent A": false, "Consent B": false, "Consent C": false });
  await shot(page, "traces-consent");

  // One back on, then SQL's traces.contribute follows the log (the
  // snapshot trails it slightly, so poll).
  await rowSwitch(page, "Consent B").click();
  await expect(rowSwitch(page, "Consent B")).toBeChecked();
  await expect
    .poll(async () => {
      const r = await page.request.post("/api/v1/rm/query", {
        headers: auth,
        data: { sql: "SELECT title, contribute FROM traces WHERE title LIKE 'Consent %' ORDER BY title" },
      });
      return (await r.json()).rows;
    })
    .toEqual([
      ["Consent A", false],
      ["Consent B", true],
      ["Consent C", false],
    ]);
});

test("consent in the viewer: the switch, what opting out means, and the API after each change", async ({ page }) => {
  test.skip(!consentKey, "no consent account seeded");
  const id = await traceId(page.request, "Consent A");
  await signIn(page, consentKey, `/traces/${id}`);
  await expect(page.getByRole("heading", { level: 1, name: "Consent A" })).toBeVisible();
  const sw = page.getByRole("switch", { name: "Contribute this trace to the shared evaluator" });
  await expect(sw).not.toBeChecked();
  await expect(page.getByText("Off: its corrections, step ratings and reviewed comparisons train no shared evaluator candidate.")).toBeVisible();

  await sw.click();
  await expect(sw).toBeChecked();
  await expect(page.getByRole("status")).toContainText("may train future shared evaluator candidates");
  // Before opting out, the page says what opting out cannot do.
  await expect(page.getByText("weights already released cannot unlearn it.")).toBeVisible();
  await a11y(page, "viewer-consent");
  await shot(page, "viewer-consent");
  let r = await page.request.get(`/api/v1/rm/traces/${id}`, { headers: auth });
  expect((await r.json()).contribute).toBe(true);

  await sw.click();
  await expect(sw).not.toBeChecked();
  await expect(page.getByRole("status")).toContainText("excluded from every future shared evaluator candidate. Weights already released cannot unlearn data they were trained on.");
  r = await page.request.get(`/api/v1/rm/traces/${id}`, { headers: auth });
  expect((await r.json()).contribute).toBe(false);

  // The list shows what the viewer set.
  await page.getByRole("navigation", { name: "Breadcrumb" }).getByRole("link", { name: "Traces" }).click();
  await expect(rowSwitch(page, "Consent A")).not.toBeChecked();
});

test("a read-only key sees consent but cannot change it", async ({ page }) => {
  test.skip(!env.readOnlyKey, "no read-only key");
  await signIn(page, env.readOnlyKey);
  const first = page.getByRole("switch").first();
  await expect(first).toBeVisible();
  await expect(first).toBeDisabled();
  await expect(page.getByRole("button", { name: "Contribute selected" })).toHaveCount(0);
});
