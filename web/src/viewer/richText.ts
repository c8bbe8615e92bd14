// The trace viewer's markdown on demand. Its first screen paints messages as
// plain text; the renderer (marked + highlight.js + DOMPurify, a third of the
// app's code and a hundred-odd milliseconds of first-use warm-up) is fetched
// and evaluated only after that paint, and every visible message then
// upgrades in place. Rendered HTML is kept per message text, so a step that
// scrolls out of the virtualized window and back is not parsed again.
import { useEffect, useSyncExternalStore } from "react";
import { afterPaint } from "./afterPaint";

type Markdown = typeof import("./markdown");

let loaded: Markdown | null = null;
let loading: Promise<Markdown | null> | null = null;
const listeners = new Set<() => void>();

/** Loads the renderer (once); resolves null when its chunk cannot be fetched, and the text stays plain. */
export function loadMarkdown(): Promise<Markdown | null> {
  loading ??= import("./markdown").then(
    (m) => {
      performance.mark("critic:markdown-ready");
      loaded = m;
      for (const l of listeners) l();
      return m;
    },
    (e: unknown) => {
      console.warn("markdown renderer did not load; messages stay plain text", e);
      return null;
    },
  );
  return loading;
}

const subscribe = (l: () => void) => {
  listeners.add(l);
  return () => listeners.delete(l);
};

/** The renderer once it has loaded, null until then; the first caller schedules its load for after the current paint. */
export function useMarkdown(): Markdown | null {
  const m = useSyncExternalStore(subscribe, () => loaded);
  useEffect(() => {
    if (!loaded && !loading) afterPaint(() => void loadMarkdown());
  }, []);
  return m;
}

const CACHE = 600;
const cache = new Map<string, string>();

/** Assistant prose as HTML (markdown), cached by content. Everything else is shown verbatim (agentView.tsx). */
export function messageHTML(m: Markdown, text: string): string {
  let html = cache.get(text);
  if (html !== undefined) {
    cache.delete(text); // re-inserted below: the Map's order is recency
  } else {
    html = m.renderMarkdown(text);
    if (cache.size >= CACHE) cache.delete(cache.keys().next().value!);
  }
  cache.set(text, html);
  return html;
}
