import { useEffect } from "react";
import { useQueryClient, type QueryClient } from "@tanstack/react-query";

/**
 * The chunks (as main.tsx and vite.config.ts name them) one click away: the
 * sidebar's pages, the viewer every trace link opens, and the viewer's
 * markdown renderer.
 */
const NEXT = ["TracesPage", "TraceViewer", "ReviewPage", "ModelsPage", "SkillsPage", "SqlPage", "ComparisonsPage", "markdown"];

/**
 * Once the current screen's data has arrived and the tab is idle, fetches
 * and compiles (modulepreload: nothing is evaluated) the code of the pages
 * one click away, so a click waits for its data only. Rendered after the
 * page inside its Suspense boundary: it mounts once the page's own chunk has
 * loaded and the page's queries have started, so it never competes with
 * the first screen.
 */
export function PreloadPages() {
  const qc = useQueryClient();
  useEffect(() => whenSettled(qc, preloadNext), [qc]);
  return null;
}

const onIdle: (f: () => void) => number = window.requestIdleCallback ? (f) => window.requestIdleCallback(f, { timeout: 5000 }) : (f) => window.setTimeout(f, 200);
const cancelIdle: (h: number) => void = window.cancelIdleCallback ? (h) => window.cancelIdleCallback(h) : (h) => window.clearTimeout(h);

/** Runs run once, when no query is fetching and the main thread is idle; the returned function cancels it. */
function whenSettled(qc: QueryClient, run: () => void): () => void {
  let done = false;
  let handle = 0;
  const check = () => {
    if (done || qc.isFetching() > 0) return;
    done = true;
    unsubscribe();
    handle = onIdle(run);
  };
  const unsubscribe = qc.getQueryCache().subscribe(check);
  check();
  return () => {
    done = true;
    unsubscribe();
    cancelIdle(handle);
  };
}

/** Adds a modulepreload link (marked data-idle) for each file of NEXT the page has not linked yet. */
function preloadNext() {
  let routes: Record<string, string[]> = {};
  try {
    routes = JSON.parse(document.querySelector('meta[name="critic-route-chunks"]')?.getAttribute("content") || "{}");
  } catch {
    return; // a development server's page has no route map
  }
  const linked = new Set([...document.querySelectorAll('link[rel="modulepreload"]')].map((l) => new URL((l as HTMLLinkElement).href).pathname));
  for (const name of NEXT)
    for (const file of routes[name] ?? []) {
      if (linked.has(file)) continue;
      linked.add(file);
      const link = document.createElement("link");
      link.rel = "modulepreload";
      link.href = file;
      link.dataset.idle = "";
      document.head.appendChild(link);
    }
}
