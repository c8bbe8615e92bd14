import { useEffect } from "react";
import { useQueryClient, type QueryClient } from "@tanstack/react-query";

/**
 * The chunks (as main.tsx and vite.config.ts name them) one click away: the
 * sidebar's pages, the viewer every trace link opens, and the viewer's
 * markdown renderer.
 */
const NEXT = ["TracesPage", "TraceViewer", "ReviewPage", "ModelsPage", "SkillsPage", "SqlPage", "ComparisonsPage", "CriteriaPage", "TeamPage", "markdown"];

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

/**
 * Links NEXT's files through public/preload.js's __criticPreloadChunk (it
 * holds the build's route map and knows what is linked already); absent on a
 * development server's page, which has no route map.
 */
function preloadNext() {
  const preload = (window as { __criticPreloadChunk?: (name: string, idle: boolean) => void }).__criticPreloadChunk;
  for (const name of NEXT) preload?.(name, true);
}
