// How the app loads (make bench-ui measures how fast): each page is its own
// chunk, modulepreloaded by public/preload.js from the build's route map; the
// viewer paints messages as plain text and upgrades them once the markdown
// renderer's chunk has loaded; a page whose chunk cannot be fetched says so.
import { test, expect, env, signIn, a11y } from "./fixtures";

test.describe.configure({ mode: "default" });

test("the viewer's chunk is modulepreloaded before the app runs, ICU warms up in a worker, and every file the route map names exists", async ({ page, request }) => {
  test.skip(!env.bigTrace, "no big trace seeded");
  await signIn(page);
  const worker = page.waitForEvent("worker");
  await page.goto(`/traces/${env.bigTrace}`);
  await expect(page.getByRole("region", { name: "Step 1", exact: true })).toBeVisible();
  // ICU's warm-up runs on another thread (public/warm-intl.js).
  expect(new URL((await worker).url()).pathname).toBe("/warm-intl.js");
  const routes = JSON.parse((await page.locator('meta[name="critic-route-chunks"]').getAttribute("content")) ?? "{}") as Record<string, string[]>;
  expect(Object.keys(routes)).toEqual(expect.arrayContaining(["TracesPage", "TraceViewer", "ReviewPage", "SqlPage", "markdown"]));
  // preload.js's links (the idle ones come later: PreloadPages).
  const preloaded = await page.locator('link[rel="modulepreload"]:not([data-idle])').evaluateAll((ls) => ls.map((l) => new URL((l as HTMLLinkElement).href).pathname));
  expect(preloaded).toEqual(expect.arrayContaining(routes.TraceViewer));
  // Only the current route's files before the first screen: the list's own chunk is not fetched here.
  const listOnly = routes.TracesPage.filter((f) => !routes.TraceViewer.includes(f));
  expect(listOnly.length).toBeGreaterThan(0);
  for (const f of listOnly) expect(preloaded).not.toContain(f);
  for (const f of new Set(Object.values(routes).flat())) {
    const r = await request.get(f);
    expect(r.status(), f).toBe(200);
    expect(r.headers()["cache-control"], f).toContain("immutable");
  }
});

test("the first screen does not wait for the markdown renderer: plain text first, markdown once it loads", async ({ page }) => {
  test.skip(!env.bigTrace, "no big trace seeded");
  await signIn(page);
  // Hold the renderer's chunk until the plain first screen has been checked.
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  await page.route(/\/assets\/markdown-[^/]+\.js$/, async (route) => {
    await held;
    await route.continue();
  });
  await page.goto(`/traces/${env.bigTrace}`);
  // Step 2 is the assistant's (Markdown is for assistant prose; the user's
  // step 1 is always shown verbatim).
  const step = page.getByRole("region", { name: "Step 2", exact: true });
  await expect(step).toBeVisible();
  // The message as written, markers and all, and no markdown yet.
  await expect(step).toContainText("message 2 of a long session: **bold** and `code`");
  await expect(step.locator("strong")).toHaveCount(0);
  release();
  await expect(step.locator("strong")).toHaveText("bold");
  await expect(step.locator("code")).toHaveText("code");
  await expect(step).not.toContainText("**bold**");
  await a11y(page, "viewer-upgraded");
});

test("a page whose code cannot be fetched says so and offers a reload", async ({ page }) => {
  // Gone from the start: the idle preload of the pages one click away must not have fetched it first.
  await page.route(/\/assets\/SqlPage-[^/]+\.js$/, (route) => route.fulfill({ status: 404, body: "404 page not found" }));
  await signIn(page);
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "SQL" }).click();
  await expect(page.getByRole("heading", { name: "This page could not be loaded" })).toBeVisible();
  await expect(page.getByRole("alert")).toContainText("reloading fetches the new version");
  await expect(page.getByRole("button", { name: "Reload" })).toBeVisible();
  await a11y(page, "chunk-error");
  // Another page still works; the failed one loads once its file is back and the tab reloads.
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Traces" }).click();
  await expect(page.getByRole("heading", { name: "Traces", level: 1 })).toBeVisible();
  await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "SQL" }).click();
  await expect(page.getByRole("heading", { name: "This page could not be loaded" })).toBeVisible();
  await page.unroute(/\/assets\/SqlPage-[^/]+\.js$/);
  await page.getByRole("button", { name: "Reload" }).click();
  await expect(page.getByRole("heading", { name: "SQL", level: 1 })).toBeVisible();
  await expect(page.getByRole("heading", { name: "This page could not be loaded" })).toHaveCount(0);
});

test("the sidebar's Traces link asks for the list's first page on the click, alongside the list's code, and only once", async ({ page }) => {
  await signIn(page);
  await page.goto("/models");
  const nav = page.getByRole("navigation", { name: "Main" });
  await expect(nav.getByRole("link", { name: "Models" })).toBeVisible();
  await page.waitForLoadState("networkidle");
  const lists: string[] = [];
  page.on("request", (r) => {
    const u = new URL(r.url());
    if (u.pathname === "/api/v1/rm/traces") lists.push(u.search);
  });
  // Hold the list's chunk: its first page must not wait for the code.
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  await page.route(/\/assets\/TracesPage-[^/]+\.js$/, async (route) => {
    await held;
    await route.continue();
  });
  await nav.getByRole("link", { name: "Traces" }).click();
  await expect.poll(() => lists).toContain("?limit=50&offset=0");
  release();
  await expect(page.getByRole("heading", { name: "Traces", level: 1 })).toBeVisible();
  await expect(page.getByText(/^1–\d+ of \d+$/)).toBeVisible();
  await page.waitForLoadState("networkidle");
  expect(lists).toEqual(["?limit=50&offset=0"]);
});

test("once the first screen's data is in, the pages one click away are preloaded while idle, and a trace link asks for its trace on the click", async ({ page }) => {
  test.skip(!env.bigTrace, "no big trace seeded");
  // Hold the viewer's chunk from the start: the trace must be asked for before the viewer's code has arrived.
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  await page.route(/\/assets\/TraceViewer-[^/]+\.js$/, async (route) => {
    await held;
    await route.continue();
  });
  await signIn(page, env.key, "/traces?q=" + encodeURIComponent("2,000-step session"));
  const link = page.getByRole("link", { name: "A 2,000-step session" });
  await expect(link).toBeVisible();
  const routes = JSON.parse((await page.locator('meta[name="critic-route-chunks"]').getAttribute("content")) ?? "{}") as Record<string, string[]>;
  const linked = (sel: string) => page.locator(sel).evaluateAll((ls) => ls.map((l) => new URL((l as HTMLLinkElement).href).pathname));
  await expect.poll(() => linked('link[rel="modulepreload"]')).toEqual(expect.arrayContaining([...routes.TraceViewer, ...routes.SqlPage, ...routes.markdown]));
  // The viewer's own files came from the idle preload, and nothing is linked twice.
  expect(await linked('link[rel="modulepreload"][data-idle]')).toEqual(expect.arrayContaining(routes.TraceViewer.filter((f) => !routes.TracesPage.includes(f))));
  const all = await linked('link[rel="modulepreload"]');
  expect(all.length).toBe(new Set(all).size);

  const asked: string[] = [];
  page.on("request", (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith("/api/v1/rm/traces/")) asked.push(u.pathname.slice("/api/v1/rm".length));
  });
  await link.click();
  await expect.poll(() => asked).toContain(`/traces/${env.bigTrace}`);
  release();
  await expect(page.getByRole("region", { name: "Step 1", exact: true })).toBeVisible();
  await page.waitForLoadState("networkidle");
  expect(asked.filter((p) => p === `/traces/${env.bigTrace}`)).toHaveLength(1);
});

test("the viewer's first screen does not wait for what sits beside it: section titles, the completion estimate and the models to score with are asked once it is painted", async ({ page }) => {
  test.skip(!env.sectionedTrace || !env.labelsKey, "no sectioned trace seeded");
  await page.addInitScript(() => {
    // The frame that first shows Step 1: its animation-frame callback runs
    // after the task that built the screen, just before the paint.
    const w = window as unknown as { __firstFrame?: number };
    const mo = new MutationObserver(() => {
      if (!document.querySelector('section[aria-label="Step 1"]')) return;
      mo.disconnect();
      requestAnimationFrame(() => (w.__firstFrame = performance.now()));
    });
    mo.observe(document, { childList: true, subtree: true });
  });
  const asked = ["section-summaries", "completion", "reward-models"].map((p) => page.waitForResponse((r) => new URL(r.url()).pathname.endsWith("/" + p)));
  await signIn(page, env.labelsKey, `/traces/${env.sectionedTrace}`);
  await expect(page.getByRole("region", { name: "Step 1", exact: true })).toBeVisible();
  await Promise.all(asked);
  const t = await page.evaluate(() => ({
    frame: (window as unknown as { __firstFrame: number }).__firstFrame,
    starts: performance
      .getEntriesByType("resource")
      .filter((r) => /\/(section-summaries|completion|reward-models)$/.test(new URL(r.name).pathname))
      .map((r) => [new URL(r.name).pathname.split("/").pop()!, r.startTime] as const),
  }));
  expect(t.frame).toBeGreaterThan(0);
  expect(new Set(t.starts.map(([p]) => p))).toEqual(new Set(["section-summaries", "completion", "reward-models"]));
  for (const [p, start] of t.starts) expect(start, `${p} was asked at ${start.toFixed(1)} ms, the first screen's frame began at ${t.frame.toFixed(1)} ms`).toBeGreaterThan(t.frame);
});
