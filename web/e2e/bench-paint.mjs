// The paint clock make bench-ui and make bench-review share: a cold page
// (a fresh browser context, the API key in localStorage) whose own clock
// records when a screen is first painted, and the cold floor both measure
// the app against.

// Each navigation to a path in `targets` records, in the page and by the
// page's own clock, when what that screen is waiting for is first painted:
// a MutationObserver notices the element, the next animation frame checks
// it has a box (Playwright's "visible"), and the time is taken once that
// frame has been produced. Nothing polls, so the harness adds no work or
// latency to what is measured (Playwright's waitForSelector polls every
// frame and answers over CDP, which on a loaded machine added 100+ ms).
export function watch(targets) {
  // Resolves with performance.now() at the first painted frame that shows
  // `want` (selector, optional text) once ready() holds; used for the cold
  // load's screen below and for in-app navigation (clickThrough).
  window.__benchPainted = (want, ready = () => true) =>
    new Promise((resolve) => {
      let queued = false;
      let done = false;
      const check = () => {
        queued = false;
        if (done || !ready()) return;
        const el = [...document.querySelectorAll(want.sel)].find((e) => !want.text || e.textContent.includes(want.text));
        if (!el) return;
        const r = el.getBoundingClientRect();
        if (r.width === 0 || r.height === 0) return;
        done = true;
        mo.disconnect();
        const c = new MessageChannel();
        c.port1.onmessage = () => resolve(performance.now());
        c.port2.postMessage(0);
      };
      const mo = new MutationObserver(() => {
        if (!queued) (queued = true), requestAnimationFrame(check);
      });
      mo.observe(document, { childList: true, subtree: true, characterData: true });
    });
  const want = targets[location.pathname + location.search];
  if (want) window.__benchShown = window.__benchPainted(want);
}

// In the page: when watch() saw its screen painted (ms since navigation start).
export function shown() {
  return Promise.race([window.__benchShown, new Promise((_, fail) => setTimeout(() => fail(new Error(`${location.pathname}${location.search}: the screen was not shown in 120 s`)), 120_000))]);
}

/** A fresh context (no HTTP cache, a new renderer) signed in with key, watching targets. */
export async function coldPage(browser, key, targets = {}) {
  const ctx = await browser.newContext({ viewport: { width: 1360, height: 860 } });
  await ctx.addInitScript((k) => localStorage.setItem("critic.apiKey", k), key);
  await ctx.addInitScript(watch, targets);
  return ctx.newPage();
}

export const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** The median, over runs cold loads of url + path, of navigation start to the frame that paints want. */
export async function coldPaint(browser, key, url, path, want, runs) {
  const out = [];
  for (let i = 0; i < runs; i++) {
    const p = await coldPage(browser, key, { [path]: want });
    await p.goto(url + path, { waitUntil: "commit" });
    out.push(await p.evaluate(shown));
    await p.context().close();
  }
  return median(out);
}

// The cold floor: the same fresh-context cold navigation, on the same
// server, to the smallest page that fetches and parses the same JSON and
// paints one element from it (public/bench-floor.html: a static file beside
// the app's, so the same handler, headers and CSP; no app code). Playwright's
// route() could serve it without shipping a file, but intercepting any
// request makes Chromium pause every request of the page for a CDP round
// trip, the API call too, which would slow the floor and flatter the app.
export function coldFloor(browser, key, url, api, runs) {
  return coldPaint(browser, key, url, `/bench-floor.html?api=${encodeURIComponent(api)}`, { sel: "#floor" }, runs);
}
