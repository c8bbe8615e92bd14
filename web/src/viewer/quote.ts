import type { Schemas } from "../api/client";

export type Quote = Schemas["Quote"];

const CONTEXT = 32;

// A quote is anchored in the step's raw content: the selected text plus up
// to 32 characters before and after it, so prefix+text+suffix occurs in the
// content (what the API checks) even where the rendering differs. When the
// rendered selection is not in the raw text (markdown markup in between),
// its whitespace-normalised form is tried; failing that the caller asks for
// a selection in the raw view.
export function anchorQuote(content: string, selected: string): Quote | null {
  let text = selected;
  let at = content.indexOf(text);
  if (at < 0) {
    const t = selected.replace(/\s+/g, " ").trim();
    if (!t) return null;
    at = content.indexOf(t);
    if (at < 0) {
      // Match across any whitespace in the raw content.
      const re = new RegExp(t.split(" ").map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("\\s+"));
      const m = re.exec(content);
      if (!m) return null;
      at = m.index;
      text = m[0];
    } else text = t;
  }
  if (!text) return null;
  return {
    text,
    prefix: content.slice(Math.max(0, at - CONTEXT), at),
    suffix: content.slice(at + text.length, at + text.length + CONTEXT),
  };
}
