// make bench-ui's browser half (started by e2e/ui_bench_test.go): times the
// app in Chromium against the time the same browser needs just to fetch and
// parse the JSON the page shows (the limit). Prints one line per figure and
// a JSON summary on the last line.
import { chromium } from "playwright-core";

const url = process.env.CRITIC_E2E_URL;
const key = process.env.CRITIC_E2E_KEY;
const trace = process.env.CRITIC_BENCH_TRACE;
const steps = Number(process.env.CRITIC_BENCH_STEPS);
const total = Number(process.env.CRITIC_BENCH_TRACES);
const runs = 5;

const browser = await chromium.launch({
  executablePath: process.env.CRITIC_CHROMIUM ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function page() {
  const ctx = await browser.newContext({ viewport: { width: 1360, height: 860 } });
  await ctx.addInitScript((k) => localStorage.setItem("critic.apiKey", k), key);
  return ctx.newPage();
}

// The limit: fetch + JSON.parse of the same response, in the same browser.
async function limit(path) {
  const p = await page();
  await p.goto(url + "/favicon.svg");
  const out = [];
  for (let i = 0; i < runs; i++)
    out.push(
      await p.evaluate(
        async ([path, key]) => {
          const t0 = performance.now();
          const r = await fetch(path, { headers: { Authorization: "Bearer " + key } });
          const data = await r.json();
          if (!data) throw new Error("empty");
          return performance.now() - t0;
        },
        [path, key],
      ),
    );
  await p.context().close();
  return median(out);
}

// From navigation to the first rendered row, then (scroll) to the last one.
async function app(path, firstSel, scroll) {
  const first = [];
  const end = [];
  for (let i = 0; i < runs; i++) {
    const p = await page();
    const t0 = Date.now();
    await p.goto(url + path, { waitUntil: "commit" });
    await p.waitForSelector(firstSel, { state: "visible", timeout: 120_000 });
    first.push(Date.now() - t0);
    if (i === runs - 1 && process.env.CRITIC_BENCH_DETAIL)
      console.log(
        "detail " + path + ": " +
          (await p.evaluate(() => {
            const n = performance.getEntriesByType("navigation")[0];
            const res = performance.getEntriesByType("resource").map((r) => `${new URL(r.name).pathname.slice(0, 40)} ${r.startTime.toFixed(0)}→${r.responseEnd.toFixed(0)}`);
            return `html ${n.responseEnd.toFixed(0)} dcl ${n.domContentLoadedEventEnd.toFixed(0)} now ${performance.now().toFixed(0)} | ` + res.join(", ");
          })),
      );
    const t1 = Date.now();
    await scroll(p);
    end.push(Date.now() - t1);
    await p.context().close();
  }
  return { first: median(first), end: median(end) };
}

// Wait until the server is idle: the snapshot projection behind /query has
// applied every import (on 2 cores it competes with the browser).
{
  const p = await page();
  await p.goto(url + "/favicon.svg");
  for (let i = 0; i < 600; i++) {
    const n = await p.evaluate(async (key) => {
      const r = await fetch("/api/v1/rm/query", { method: "POST", headers: { Authorization: "Bearer " + key, "Content-Type": "application/json" }, body: JSON.stringify({ sql: "SELECT count(*) FROM traces" }) });
      return r.ok ? (await r.json()).rows[0][0] : -1;
    }, key);
    if (n >= total) break;
    await p.waitForTimeout(500);
  }
  await p.context().close();
}
const traceLimit = await limit(`/api/v1/rm/traces/${trace}`);
const traceApp = await app(`/traces/${trace}`, 'section[aria-label="Step 1"]', async (p) => {
  // Scroll the viewer to the bottom until the last step is on screen.
  for (let i = 0; i < 200; i++) {
    await p.evaluate(() => {
      const el = document.querySelector("main.viewer");
      el.scrollTop = el.scrollHeight;
    });
    if (await p.locator(`section[aria-label="Step ${steps}"]`).isVisible()) return;
    await p.waitForTimeout(16);
  }
  throw new Error("never reached the last step");
});
const lastPage = Math.ceil(total / 50) - 1;
const listLimit = await limit(`/api/v1/rm/traces?limit=50&offset=0`);
const lastLimit = await limit(`/api/v1/rm/traces?limit=50&offset=${lastPage * 50}`);
const listApp = await app(`/traces`, "tbody tr", async (p) => {
  await p.goto(url + `/traces?page=${lastPage}`, { waitUntil: "commit" });
  await p.waitForSelector(`text=${lastPage * 50 + 1}–${total} of ${total}`, { timeout: 120_000 });
});
await browser.close();

const r = (a, b) => (a / b).toFixed(2) + "×";
console.log(`trace, ${steps} steps: first screen ${traceApp.first} ms, scroll to the end ${traceApp.end} ms; fetch+parse (limit) ${traceLimit.toFixed(0)} ms; first/limit ${r(traceApp.first, traceLimit)}, (first+end)/limit ${r(traceApp.first + traceApp.end, traceLimit)}`);
console.log(`list, ${total} traces: first screen ${listApp.first} ms, last page ${listApp.end} ms; fetch+parse first page ${listLimit.toFixed(0)} ms, last page ${lastLimit.toFixed(0)} ms; first/limit ${r(listApp.first, listLimit)}, last/limit ${r(listApp.end, lastLimit)}`);
console.log(JSON.stringify({ traceFirst: traceApp.first, traceEnd: traceApp.end, traceLimit, listFirst: listApp.first, listEnd: listApp.end, listLimit, lastLimit }));
