// CRITIC_BENCH_PROFILE=1 make bench-ui: where a cold load's time goes. One
// extra cold load of a screen (after the measured runs, so no figure is
// affected) under a Chromium trace (CDP Tracing, devtools.timeline), cut at
// the frame the screen was painted in, and summed on the renderer's main
// thread: the top-level tasks only, so nothing is counted twice.
//  - network: the navigation and resource timings (request → response end);
//  - script: compile + evaluation of each file (its URL), then the tasks that
//    run later code of each file (for the entry chunk: React's scheduler,
//    i.e. render + commit; for a page chunk: its effects and callbacks);
//  - style (UpdateLayoutTree), layout, paint (PrePaint, Paint, Layerize,
//    Commit), HTML parsing, GC, and the idle time in between.

const CATS = ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8.execute", "blink.user_timing", "loading"].join(",");

// Which bucket a top-level task on the main thread belongs to.
function bucket(e) {
  const n = e.name;
  const d = e.args?.data ?? {};
  const file = (u) => (u ? new URL(u, "http://x").pathname.replace(/-[A-Za-z0-9_-]{8}\.js$/, ".js") : "?");
  switch (n) {
    case "ParseHTML":
      return "parse HTML";
    case "EvaluateScript":
    case "v8.compile":
    case "v8.compileModule":
    case "v8.evaluateModule":
    case "v8.produceModuleCache":
    case "CompileScript":
      return "script eval " + file(d.url ?? e.args?.fileName ?? e.args?.data?.fileName);
    case "FunctionCall":
    case "TimerFire":
    case "FireAnimationFrame":
    case "EventDispatch":
    case "RunMicrotasks":
    case "XHRReadyStateChange":
    case "v8.run":
      return "script run " + file(d.url ?? d.scriptName);
    case "UpdateLayoutTree":
    case "RecalculateStyles":
    case "ParseAuthorStyleSheet":
      return "style";
    case "Layout":
      return "layout";
    case "PrePaint":
    case "Paint":
    case "Layerize":
    case "UpdateLayer":
    case "Commit":
    case "PaintImage":
    case "CompositeLayers":
      return "paint";
    case "MinorGC":
    case "MajorGC":
    case "V8.GC_SCAVENGER":
    case "BlinkGC.AtomicPhase":
      return "GC";
    default:
      return null;
  }
}

/** Traces one cold load; `load(page)` navigates and resolves to the painted time (ms since navigation start). */
export async function profile(browser, newPage, load) {
  const p = await newPage();
  await browser.startTracing(p, { categories: CATS.split(",") });
  const shownAt = await load(p);
  return summarize(p, browser, shownAt);
}

/** One more cold load under V8's sampling profiler: self time per function (top 25) until the painted frame. */
export async function cpuProfile(newPage, load) {
  const p = await newPage();
  const cdp = await p.context().newCDPSession(p);
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: 200 });
  await cdp.send("Profiler.start");
  const shownAt = await load(p);
  const { profile: prof } = await cdp.send("Profiler.stop");
  await p.context().close();
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const t0 = prof.startTime;
  let t = t0;
  for (let i = 0; i < prof.samples.length; i++) {
    t += prof.timeDeltas[i];
    const n = byId.get(prof.samples[i]);
    const f = n.callFrame;
    const file = f.url ? new URL(f.url).pathname.replace(/-[A-Za-z0-9_-]{8}\.js$/, ".js") : "";
    const k = `${f.functionName || "(anonymous)"} ${file}:${f.lineNumber + 1}`;
    self.set(k, (self.get(k) ?? 0) + (prof.timeDeltas[i + 1] ?? 0));
  }
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const top = [...self].sort((a, b) => b[1] - a[1]).slice(0, 25);
  return `cpu profile to ${shownAt.toFixed(0)} ms (sampled ${(total / 1000).toFixed(0)} ms): ` + top.map(([k, us]) => `${k} ${(us / 1000).toFixed(1)}`).join("; ");
}

async function summarize(p, browser, shownAt) {
  const timing = await p.evaluate(() => {
    const n = performance.getEntriesByType("navigation")[0];
    return {
      html: [n.requestStart, n.responseEnd],
      resources: performance.getEntriesByType("resource").map((r) => [new URL(r.name).pathname + new URL(r.name).search, r.startTime, r.responseEnd, r.transferSize]),
    };
  });
  const buf = await browser.stopTracing();
  await p.context().close();
  const events = JSON.parse(buf.toString()).traceEvents ?? [];
  // The renderer main thread of this page: the one that ran its navigation.
  const nav = events.find((e) => e.name === "navigationStart" && e.args?.data?.isLoadingMainFrame && e.args?.data?.documentLoaderURL?.startsWith("http"));
  if (!nav) return "profile: no navigationStart in the trace";
  const main = events.filter((e) => e.pid === nav.pid && e.tid === nav.tid && e.ph === "X" && e.ts >= nav.ts);
  const end = nav.ts + shownAt * 1000;
  main.sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  const sums = new Map();
  let busy = 0;
  // Walk the nesting: a task's time goes to the deepest bucketed event that
  // encloses it, clipped at the painted frame.
  const stack = [];
  const add = (k, us) => sums.set(k, (sums.get(k) ?? 0) + us);
  let covered = [];
  for (const e of main) {
    if (e.ts >= end) break;
    while (stack.length && stack[stack.length - 1].ts + stack[stack.length - 1].dur <= e.ts) stack.pop();
    stack.push(e);
    if (e.name === "RunTask" || e.name === "ThreadControllerImpl::RunTask") {
      if (stack.length === 1) covered.push([e.ts, Math.min(e.ts + e.dur, end)]);
    }
  }
  for (const [a, b] of covered) busy += b - a;
  // Bucketed time: innermost bucket wins; compute self time per bucketed event.
  const bucketed = main.filter((e) => e.ts < end && bucket(e));
  bucketed.sort((a, b) => a.ts - b.ts || b.dur - a.dur);
  const st = [];
  const self = new Map();
  for (const e of bucketed) {
    const eEnd = Math.min(e.ts + e.dur, end);
    while (st.length && st[st.length - 1].end <= e.ts) st.pop();
    const parent = st[st.length - 1];
    const d = eEnd - e.ts;
    if (parent) self.set(parent.e, (self.get(parent.e) ?? 0) - Math.min(d, parent.end - e.ts));
    self.set(e, (self.get(e) ?? 0) + d);
    st.push({ e, end: eEnd });
  }
  for (const [e, us] of self) add(bucket(e), us);
  const ms = (us) => (us / 1000).toFixed(0);
  const rows = [...sums].filter(([, us]) => us >= 500).sort((a, b) => b[1] - a[1]);
  const named = rows.reduce((s, [, us]) => s + us, 0);
  const net = timing.resources
    .filter((r) => r[1] < shownAt)
    .map((r) => `${r[0].replace(/-[A-Za-z0-9_-]{8}\.js/, ".js").slice(0, 48)} ${r[1].toFixed(0)}→${r[2].toFixed(0)}`)
    .join(", ");
  return [
    `painted at ${shownAt.toFixed(0)} ms; main thread busy ${ms(busy)} ms (tasks), idle ${(shownAt - busy / 1000).toFixed(0)} ms`,
    `  main thread: ` + rows.map(([k, us]) => `${k} ${ms(us)}`).join(", ") + `; other work in tasks ${ms(Math.max(0, busy - named))}`,
    `  network: html ${timing.html[0].toFixed(0)}→${timing.html[1].toFixed(0)}, ${net}`,
  ].join("\n");
}
