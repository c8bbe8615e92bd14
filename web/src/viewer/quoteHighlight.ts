// Quotes shown where they were taken: ranges over the rendered text of a
// step, painted with the CSS Custom Highlight API (no DOM changes, so the
// markdown React rendered stays as it is and selection keeps working).
// Browsers without the API simply show no highlight.

type HighlightCtor = new (...ranges: Range[]) => { add(r: Range): void; delete(r: Range): boolean };
const api = (globalThis as { CSS?: { highlights?: Map<string, unknown> } }).CSS?.highlights;
const Ctor = (globalThis as { Highlight?: HighlightCtor }).Highlight;
const shared = api && Ctor ? new Ctor() : null;
if (api && shared) api.set("critic-quote", shared);

/** Highlights every occurrence of each text inside el; returns the cleanup. */
export function highlightQuotes(el: HTMLElement, texts: string[]): () => void {
  if (!shared || texts.length === 0) return () => {};
  const nodes: Text[] = [];
  const starts: number[] = [];
  let flat = "";
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode() as Text | null; n; n = walker.nextNode() as Text | null) {
    nodes.push(n);
    starts.push(flat.length);
    flat += n.data;
  }
  const locate = (off: number): [Text, number] => {
    let lo = 0;
    let hi = nodes.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid] <= off) lo = mid;
      else hi = mid - 1;
    }
    return [nodes[lo], off - starts[lo]];
  };
  const ranges: Range[] = [];
  for (const t of texts) {
    if (!t) continue;
    for (let at = flat.indexOf(t); at >= 0; at = flat.indexOf(t, at + t.length)) {
      const r = document.createRange();
      const [sn, so] = locate(at);
      const [en, eo] = locate(at + t.length - 1);
      r.setStart(sn, so);
      r.setEnd(en, eo + 1);
      ranges.push(r);
      shared.add(r);
    }
  }
  return () => ranges.forEach((r) => shared.delete(r));
}
