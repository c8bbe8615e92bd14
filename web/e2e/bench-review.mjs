// make bench-review's browser half (started by e2e/review_bench_test.go): a
// scripted reviewer works through the review queue with the keyboard only —
// for each item `c` (the composer opens, focused), the reason typed,
// Ctrl+Enter (saved), `+` (rated, the next item shown) — and waits, as a
// person would, for each step to show before the next key. Prints items
// per minute (wall clock from the first key to the last item gone) and the
// keys per rating with a reason, then the viewer's first-step-visible time
// on the 2,500-step trace beside the cold floor (bench-paint.mjs) measured
// in the same run, and a JSON summary on the last line.
import { chromium } from "playwright-core";
import { coldFloor, coldPage, coldPaint } from "./bench-paint.mjs";

const url = process.env.CRITIC_E2E_URL;
const key = process.env.CRITIC_E2E_KEY; // the reviewer, whose queue holds the items
const viewerKey = process.env.CRITIC_BENCH_VIEWER_KEY; // the owner of the long trace
const trace = process.env.CRITIC_BENCH_TRACE;
const steps = Number(process.env.CRITIC_BENCH_STEPS);
const items = Number(process.env.CRITIC_BENCH_ITEMS);
const runs = 5;

const browser = await chromium.launch({
  executablePath: process.env.CRITIC_CHROMIUM ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});

/** The reason typed for item i: shortcut characters in it must stay text. */
const reason = (i) => `item ${i + 1}: lacks a source - guessed? j k + c`;

const p = await coldPage(browser, key);
await p.goto(url + "/review");
const left = (n) => p.waitForFunction((n) => document.querySelector(".progress")?.textContent === `${n} left`, n, { timeout: 60_000 });
await left(items);
let keys = 0;
let typed = 0;
const press = async (k) => {
  keys++;
  await p.keyboard.press(k);
};
const t0 = Date.now();
for (let i = 0; i < items; i++) {
  await press("c");
  await p.waitForSelector(".review-card textarea:focus", { timeout: 60_000 });
  const text = reason(i);
  typed += text.length;
  await p.keyboard.type(text);
  await press("Control+Enter");
  await p.waitForSelector(".review-card textarea", { state: "detached", timeout: 60_000 });
  await press("+");
  if (i < items - 1) await left(items - i - 1);
  else await p.waitForFunction(() => document.body.textContent.includes("Done: you judged all"), null, { timeout: 60_000 });
}
const took = Date.now() - t0;
await p.context().close();

const viewerFirst = await coldPaint(browser, viewerKey, url, `/traces/${trace}`, { sel: 'section[aria-label="Step 1"]' }, runs);
const floor = await coldFloor(browser, viewerKey, url, `/traces/${trace}`, runs);
await browser.close();

const perMinute = items / (took / 60000);
const keysPerItem = keys / items;
console.log(
  `review queue, ${items} items by keyboard (c, the reason, Ctrl+Enter, +): ${(took / 1000).toFixed(1)} s, ${perMinute.toFixed(1)} items/min; ` +
    `${keysPerItem.toFixed(1)} keys per rating with a reason (goal <= 3) plus ${(typed / items).toFixed(0)} typed characters`,
);
console.log(
  `viewer, ${steps} steps: first step visible ${viewerFirst.toFixed(0)} ms (cold load, median of ${runs}); cold floor ${floor.toFixed(0)} ms; viewer/floor ${(viewerFirst / floor).toFixed(2)}×`,
);
console.log(JSON.stringify({ items, tookMs: took, perMinute, keysPerItem, typedPerItem: typed / items, viewerFirst, floor }));
