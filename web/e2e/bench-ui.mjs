// make bench-ui's browser half (started by e2e/ui_bench_test.go): times the
// app in Chromium against the time the same browser needs just to fetch and
// parse the JSON the page shows (the limit). Each app figure is a cold load
// (a fresh browser context: no HTTP cache, a new renderer) timed by the
// page's own clock from navigation start to the painted frame; the limit is
// performance.now() around fetch + JSON.parse in the same browser, in the
// same run. Prints one line per figure and a JSON summary on the last line.
import { chromium } from "playwright-core";
import { cpuProfile, profile } from "./bench-profile.mjs";
import { coldFloor, coldPage, median, shown } from "./bench-paint.mjs";

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

function page(targets = {}) {
  return coldPage(browser, key, targets);
}

// The limit: fetch + JSON.parse of the same response, in the same browser,
// in an HTML page with no app code (bench-floor.html, left once it has
// painted its own /me). It was taken in /favicon.svg's document until 3
// December, where the same fetch + parse took 1.6–2× as long as in any HTML
// page (49–63 vs 27–37 ms for the trace): a limit that flattered every ratio.
async function limit(path) {
  const p = await page({ "/bench-floor.html": { sel: "#floor" } });
  await p.goto(url + "/bench-floor.html", { waitUntil: "commit" });
  await p.evaluate(shown);
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

// From navigation to the first rendered row, then to the end (scroll to
// the last step; the list's last page). Both are taken in the page (above);
// the harness's wall clock around the same steps is kept beside them.
async function app(path, first, end) {
  const out = { first: [], end: [], firstWall: [], endWall: [] };
  for (let i = 0; i < runs; i++) {
    const p = await page({ [path]: first, ...(end.path ? { [end.path]: end.want } : {}) });
    const apiCalls = [];
    if (i === runs - 1 && process.env.CRITIC_BENCH_DETAIL) p.on("request", (q) => q.url().includes("/api/") && apiCalls.push(q.method() + " " + new URL(q.url()).pathname.replace("/api/v1/rm", "")));
    const t0 = Date.now();
    await p.goto(url + path, { waitUntil: "commit" });
    out.first.push(await p.evaluate(shown));
    await p.waitForSelector(first.sel, { state: "visible", timeout: 120_000 });
    out.firstWall.push(Date.now() - t0);
    if (i === runs - 1 && process.env.CRITIC_BENCH_DETAIL) console.log("detail " + path + ": " + (await p.evaluate(detail)));
    const t1 = Date.now();
    out.end.push(await end.run(p));
    out.endWall.push(Date.now() - t1);
    if (apiCalls.length) console.log("detail " + path + ": API requests to the end: " + apiCalls.join(", "));
    await p.context().close();
  }
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, median(v)]));
}

// Where the time went on the last run: resource timings and the app's marks.
function detail() {
  const n = performance.getEntriesByType("navigation")[0];
  const res = performance.getEntriesByType("resource").map((r) => `${new URL(r.name).pathname.replace(/^(.{24}).{24,}(.{24})$/, "$1…$2")} ${r.startTime.toFixed(0)}→${r.responseEnd.toFixed(0)}`);
  const marks = performance.getEntriesByType("mark").map((m) => `${m.name} ${m.startTime.toFixed(0)}`);
  // The DOM the first screen laid out: elements in all, and under each of main's children.
  const main = document.querySelector("main") ?? document.body;
  const parts = [...main.children].map((c) => `${c.tagName.toLowerCase()}${c.className ? "." + String(c.className).split(" ")[0] : ""} ${c.getElementsByTagName("*").length}`);
  const dom = `dom ${document.getElementsByTagName("*").length} elements (main: ${parts.join(", ")})`;
  return `html ${n.responseEnd.toFixed(0)} dcl ${n.domContentLoadedEventEnd.toFixed(0)} | ${dom} | ${marks.join(", ")} | ` + res.join(", ");
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
const traceApp = await app(`/traces/${trace}`, { sel: 'section[aria-label="Step 1"]' }, {
  // Scroll the viewer to the bottom, a frame at a time, until the last step
  // has a box on screen; the time from the first scroll to the frame after.
  run: (p) =>
    p.evaluate(async (steps) => {
      const t = performance.now();
      const frame = () => new Promise((r) => requestAnimationFrame(r));
      const el = document.querySelector("main.viewer");
      for (let i = 0; i < 600; i++) {
        el.scrollTop = el.scrollHeight;
        await frame();
        const last = document.querySelector(`section[aria-label="Step ${steps}"]`)?.getBoundingClientRect();
        if (last && last.height > 0 && last.top < innerHeight && last.bottom > 0) {
          await new Promise((r) => {
            const c = new MessageChannel();
            c.port1.onmessage = r;
            c.port2.postMessage(0);
          });
          return performance.now() - t;
        }
      }
      throw new Error("never reached the last step");
    }, steps),
});
const lastPage = Math.ceil(total / 50) - 1;
const listLimit = await limit(`/api/v1/rm/traces?limit=50&offset=0`);
const lastLimit = await limit(`/api/v1/rm/traces?limit=50&offset=${lastPage * 50}`);
const lastPath = `/traces?page=${lastPage}`;
const lastText = `${lastPage * 50 + 1}–${total} of ${total}`;
const listApp = await app(`/traces`, { sel: "tbody tr" }, {
  // Open the last page (a new navigation, the app's files now cached).
  path: lastPath,
  want: { sel: "span", text: lastText },
  run: async (p) => {
    await p.goto(url + lastPath, { waitUntil: "commit" });
    const t = await p.evaluate(shown);
    await p.waitForSelector(`text=${lastText}`, { timeout: 120_000 });
    return t;
  },
});
// The cold floor (bench-paint.mjs says what it is).
function floor(api) {
  return coldFloor(browser, key, url, api, runs);
}

// In-app navigation: the app open on another page (cold-loaded, then left
// until the network is idle), a click on the link a user would click, timed
// by the page's clock from the click event to the frame that shows `want`
// (the same paint check as watch()). Waiting for the network to be idle
// lets the app modulepreload the pages one click away (PreloadPages, once
// the first screen's data is in), as it does for a user who reads the page
// before clicking; the click itself starts the trace's request (TraceLink).
async function inApp(from, ready, link, want) {
  const out = [];
  for (let i = 0; i < runs; i++) {
    const p = await openAt(from, ready);
    out.push((await clickThrough(p, link, want)).took);
    await p.context().close();
  }
  return median(out);
}

/** A fresh context with the app cold-loaded at from, left until the network is idle. */
async function openAt(from, ready) {
  const p = await page({ [from]: ready });
  await p.goto(url + from, { waitUntil: "commit" });
  await p.evaluate(shown);
  await p.waitForLoadState("networkidle");
  return p;
}

/** Clicks link and resolves when `want` is painted: took = click → painted, at = painted (ms since navigation start). */
async function clickThrough(p, link, want) {
  await p.evaluate((want) => {
    let t0 = null;
    addEventListener("click", (e) => (t0 = e.timeStamp), { capture: true, once: true });
    // The painted screen's <main> is kept (after the time is taken, in the
    // same task: nothing later, such as the markdown upgrade, is in it) for screenFloor.
    window.__benchNav = window.__benchPainted(want, () => t0 !== null).then((at) => {
      window.__benchScreen = document.querySelector("main")?.outerHTML;
      return { took: at - t0, at };
    });
  }, want);
  await p.click(link);
  return p.evaluate(() => Promise.race([window.__benchNav, new Promise((_, fail) => setTimeout(() => fail(new Error("in-app navigation: the screen was not shown in 120 s")), 120_000))]));
}

// The in-page floor: the screen's own cost without the app's code. The app
// open on `from` as for inApp; one click gives the painted screen's <main>
// (its elements, classes, text and inline styles, as the app built it);
// then, in fresh contexts opened the same way, the page's clock around
// fetch + JSON.parse of the same response (the limit's work), putting that
// DOM in place of <main> (the parser builds it: no app code runs), and the
// frame that paints it (watch()'s own check: the same element, text and
// frame as the app's figure). What the app adds beyond this is its own code
// (router, query cache, rendering); what this adds beyond the limit is the
// browser's cost of the screen itself (DOM, style, layout, text shaping,
// paint) on this machine.
async function screenFloor(from, ready, link, want, api) {
  let p = await openAt(from, ready);
  await clickThrough(p, link, want);
  const html = await p.evaluate(() => window.__benchScreen);
  await p.context().close();
  const out = [];
  for (let i = 0; i < runs; i++) {
    p = await openAt(from, ready);
    out.push(
      await p.evaluate(
        async ([html, api, key, want]) => {
          const t0 = performance.now();
          const r = await fetch(api, { headers: { Authorization: "Bearer " + key } });
          if (!(await r.json())) throw new Error("empty");
          const painted = window.__benchPainted(want);
          const t = document.createElement("template");
          t.innerHTML = html;
          document.querySelector("main").replaceWith(t.content);
          return (await painted) - t0;
        },
        [html, api, key, want],
      ),
    );
    await p.context().close();
  }
  return median(out);
}

const traceFloor = await floor(`/traces/${trace}`);
const listFloor = await floor(`/traces?limit=50&offset=0`);
const lastFloor = await floor(`/traces?limit=50&offset=${lastPage * 50}`);
// From the list (its first page) to the 2,500-step trace, the newest row.
const toTrace = [`/traces`, { sel: "tbody tr" }, `a[href="/traces/${trace}"]`, { sel: 'section[aria-label="Step 1"]' }];
const traceNav = await inApp(...toTrace);
// From the models page to the list, by the sidebar's Traces link.
const toList = [`/models`, { sel: 'nav a[href="/traces"]' }, 'nav a[href="/traces"]', { sel: "span", text: `1–50 of ${total}` }];
const listNav = await inApp(...toList);
const traceScreen = await screenFloor(...toTrace, `/api/v1/rm/traces/${trace}`);
const listScreen = await screenFloor(...toList, `/api/v1/rm/traces?limit=50&offset=0`);

const profiles = [];
if (process.env.CRITIC_BENCH_PROFILE) {
  const cold = (path, want) => profile(browser, () => page({ [path]: want }), async (p) => {
    await p.goto(url + path, { waitUntil: "commit" });
    return p.evaluate(shown);
  });
  profiles.push("profile, trace first screen: " + (await cold(`/traces/${trace}`, { sel: 'section[aria-label="Step 1"]' })));
  profiles.push("profile, list first screen: " + (await cold(`/traces`, { sel: "tbody tr" })));
  // In-app, sampled from just before the click (the page was opened and left idle first) to the painted frame.
  const [from, ready, link, want] = toTrace;
  profiles.push("in-app list → trace, " + (await cpuProfile(() => openAt(from, ready), async (p) => (await clickThrough(p, link, want)).took)));
  const cpu = (path, want) => cpuProfile(() => page({ [path]: want }), async (p) => {
    await p.goto(url + path, { waitUntil: "commit" });
    return p.evaluate(shown);
  });
  profiles.push("trace first screen, " + (await cpu(`/traces/${trace}`, { sel: 'section[aria-label="Step 1"]' })));
  profiles.push("list first screen, " + (await cpu(`/traces`, { sel: "tbody tr" })));
}
await browser.close();

const r = (a, b) => (a / b).toFixed(2) + "×";
const ms = (x) => x.toFixed(0) + " ms";
console.log(`trace, ${steps} steps: first screen ${ms(traceApp.first)}, scroll to the end ${ms(traceApp.end)}; fetch+parse (limit) ${ms(traceLimit)}; first/limit ${r(traceApp.first, traceLimit)}, (first+end)/limit ${r(traceApp.first + traceApp.end, traceLimit)}`);
console.log(`list, ${total} traces: first screen ${ms(listApp.first)}, last page ${ms(listApp.end)}; fetch+parse first page ${ms(listLimit)}, last page ${ms(lastLimit)}; first/limit ${r(listApp.first, listLimit)}, last/limit ${r(listApp.end, lastLimit)}`);
console.log(`harness wall clock (navigation request to Playwright seeing it): trace first ${ms(traceApp.firstWall)} (${r(traceApp.firstWall, traceLimit)}), end ${ms(traceApp.endWall)}; list first ${ms(listApp.firstWall)} (${r(listApp.firstWall, listLimit)}), last page ${ms(listApp.endWall)} (${r(listApp.endWall, lastLimit)})`);
console.log(`cold floor (a page with no app code: fetch, parse, paint one element; fresh context like the app's): trace ${ms(traceFloor)}, list first page ${ms(listFloor)}, last page ${ms(lastFloor)}; app/floor: trace first ${r(traceApp.first, traceFloor)}, list first ${r(listApp.first, listFloor)}; floor/limit: trace ${r(traceFloor, traceLimit)}, list ${r(listFloor, listLimit)}`);
console.log(`in-app navigation (app open on another page, click → painted screen): list → trace ${ms(traceNav)} (${r(traceNav, traceLimit)} the limit), models → list ${ms(listNav)} (${r(listNav, listLimit)} the limit)`);
console.log(`in-page floor (the open app page: fetch + parse the same JSON, then the screen's own DOM, captured from the app, in place of <main>, painted; no app code): trace ${ms(traceScreen)} (${r(traceScreen, traceLimit)} the limit), list ${ms(listScreen)} (${r(listScreen, listLimit)} the limit); in-app/in-page floor: list → trace ${r(traceNav, traceScreen)}, models → list ${r(listNav, listScreen)}`);
for (const l of profiles) console.log(l);
console.log(
  JSON.stringify({
    traceFirst: traceApp.first, traceEnd: traceApp.end, traceLimit, listFirst: listApp.first, listEnd: listApp.end, listLimit, lastLimit,
    traceFirstWall: traceApp.firstWall, traceEndWall: traceApp.endWall, listFirstWall: listApp.firstWall, listEndWall: listApp.endWall,
    traceFloor, listFloor, lastFloor, traceNav, listNav, traceScreen, listScreen,
  }),
);
