// The trace viewer's markdown on demand. Its first screen paints messages as
// plain text; the renderer (marked + highlight.js + DOMPurify, a third of the
// app's code and a hundred-odd milliseconds of first-use warm-up) is fetched
// and evaluated only after that paint, and every visible message then
// upgrades in place. Rendered HTML is kept per message text, so a step that
// scrolls out of the virtualized window and back is not parsed again.
import { useEffect, useSyncExternalStore } from "react";
import { prettyJSON } from "./text";
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

/** A message's HTML (pretty, highlighted JSON for tool output; markdown otherwise), cached by content. */
export function messageHTML(m: Markdown, text: string, isTool: boolean): string {
  const k = (isTool ? "t" : "m") + text;
  let html = cache.get(k);
  if (html !== undefined) {
    cache.delete(k); // re-inserted below: the Map's order is recency
  } else {
    const json = isTool ? prettyJSON(text) : null;
    html = json ? `<pre class="code"><code class="hljs language-json">${m.highlight(json, "json")}</code></pre>` : m.renderMarkdown(text);
    if (cache.size >= CACHE) cache.delete(cache.keys().next().value!);
  }
  cache.set(k, html);
  return html;
}
