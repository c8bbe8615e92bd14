// Shared fixtures: every API response a test's page receives is validated
// against the OpenAPI document (a drifting handler fails the test that saw
// it), and helpers for signing in, accessibility scans and screenshots.
import { test as base, expect, type Page, type Response } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { readFileSync, mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const doc = JSON.parse(readFileSync(path.join(here, "../../handlers/rest/openapi.json"), "utf8"));
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
(addFormats as unknown as (a: unknown) => void)(ajv);
ajv.addSchema(doc, "openapi.json");

type Op = { re: RegExp; method: string; responses: Record<string, { content?: Record<string, { schema: unknown }> }> };
const ops: Op[] = [];
for (const [p, item] of Object.entries<Record<string, unknown>>(doc.paths)) {
  const re = new RegExp("^" + p.replace(/\{[^}]+\}/g, "[^/]+") + "$");
  for (const [method, op] of Object.entries(item)) {
    if (method === "parameters") continue;
    ops.push({ re, method: method.toUpperCase(), responses: (op as { responses: Op["responses"] }).responses });
  }
}
// Literal paths before templated ones (/traces/import before /traces/{id}).
ops.sort((a, b) => Number(a.re.source.includes("[^/]+")) - Number(b.re.source.includes("[^/]+")));
const validators = new Map<unknown, ReturnType<typeof ajv.compile>>();
function validatorFor(schema: unknown) {
  let v = validators.get(schema);
  if (!v) {
    v = ajv.compile(JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"openapi.json#/components/')));
    validators.set(schema, v);
  }
  return v;
}

export let checkedResponses = 0;

async function checkResponse(r: Response, problems: string[]) {
  const url = new URL(r.url());
  if (!url.pathname.startsWith("/api/")) return;
  const method = r.request().method();
  const op = ops.find((o) => o.method === method && o.re.test(url.pathname));
  if (!op) {
    problems.push(`${method} ${url.pathname}: not in the OpenAPI document`);
    return;
  }
  const status = String(r.status());
  const spec = op.responses[status];
  if (!spec) {
    problems.push(`${method} ${url.pathname}: status ${status} is not documented`);
    return;
  }
  const ct = (r.headers()["content-type"] ?? "").split(";")[0];
  const schema = spec.content?.[ct]?.schema;
  if (!spec.content) {
    const body = await r.body().catch(() => Buffer.alloc(0));
    if (body.length > 0) problems.push(`${method} ${url.pathname} ${status}: documented without a body, got ${body.length} bytes`);
    return;
  }
  if (!schema) {
    problems.push(`${method} ${url.pathname} ${status}: content type ${ct} is not documented`);
    return;
  }
  if (ct !== "application/json") return;
  let data: unknown;
  try {
    data = await r.json();
  } catch {
    return; // body gone (navigation); nothing to check
  }
  const v = validatorFor(schema);
  checkedResponses++;
  if (!v(data)) problems.push(`${method} ${url.pathname} ${status}: ${ajv.errorsText(v.errors)}`);
}

export const test = base.extend<{ apiProblems: string[] }>({
  apiProblems: [
    async ({ page }, use) => {
      const problems: string[] = [];
      const pending: Promise<void>[] = [];
      page.on("response", (r) => pending.push(checkResponse(r, problems)));
      await use(problems);
      await Promise.all(pending);
      expect(problems, "API responses that do not match handlers/rest/openapi.json").toEqual([]);
    },
    { auto: true },
  ],
});
export { expect };

export const env = {
  key: process.env.CRITIC_E2E_KEY ?? "",
  readOnlyKey: process.env.CRITIC_E2E_READONLY_KEY ?? "",
  otherTrace: process.env.CRITIC_E2E_OTHER_TRACE ?? "",
  bigTrace: process.env.CRITIC_E2E_BIG_TRACE ?? "",
  spansTrace: process.env.CRITIC_E2E_SPANS_TRACE ?? "",
  trainerKey: process.env.CRITIC_E2E_TRAINER_KEY ?? "",
  trainerReadOnlyKey: process.env.CRITIC_E2E_TRAINER_READONLY_KEY ?? "",
  labelsKey: process.env.CRITIC_E2E_LABELS_KEY ?? "",
  labeledTrace: process.env.CRITIC_E2E_LABELED_TRACE ?? "",
  baseModel: process.env.CRITIC_E2E_BASE_MODEL ?? "",
  gepaTaskBase: process.env.CRITIC_E2E_GEPA_TASK_BASE ?? "",
  gepaGate: process.env.CRITIC_E2E_GEPA_GATE ?? "",
  holdoutKey: process.env.CRITIC_E2E_HOLDOUT_KEY ?? "",
  sectionedTrace: process.env.CRITIC_E2E_SECTIONED_TRACE ?? "",
  twoTaskTrace: process.env.CRITIC_E2E_TWO_TASK_TRACE ?? "",
  shots: process.env.CRITIC_E2E_SHOTS ?? path.join(here, "../screenshots"),
};

/** Signs in with the link make run prints; the key must leave the address bar at once. */
export async function signIn(page: Page, key = env.key, to = "/") {
  await page.goto(to + "#key=" + encodeURIComponent(key));
  await expect(page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Traces" })).toBeVisible();
  expect(page.url()).not.toContain("key=");
}

/** axe-core on the page as it is: no serious or critical violations. */
export async function a11y(page: Page, what: string) {
  const res = await new AxeBuilder({ page }).analyze();
  const bad = res.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
  expect(bad.map((v) => `${what}: ${v.id} (${v.impact}): ${v.help} — ${v.nodes.map((n) => n.target.join(" ")).slice(0, 3).join(", ")}`)).toEqual([]);
}

export async function shot(page: Page, name: string) {
  mkdirSync(env.shots, { recursive: true });
  await page.screenshot({ path: path.join(env.shots, name + ".png") });
}
