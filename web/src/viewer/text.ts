// The cheap half of message rendering, with no dependencies: what decides
// whether content can be rendered as markdown at all and how tool output
// JSON is laid out. It is in the viewer's first chunk; markdown.ts (marked,
// highlight.js, DOMPurify) loads after the first screen has painted.

export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

export const RAW_LIMIT = 150_000;

function tooDeep(s: string): boolean {
  let depth = 0;
  for (const line of s.split("\n", 2000)) {
    const m = /^(\s*(?:[>*+-]|\d+\.)\s*)+/.exec(line);
    depth = Math.max(depth, m ? m[0].length : 0);
  }
  return depth > 100;
}

/** Whether content may go through the markdown renderer (very large or very deeply nested content is shown raw: rendering it can stall or overflow a tab's stack). */
export function canRender(s: string): boolean {
  return s.length <= RAW_LIMIT && !tooDeep(s);
}

/** A JSON string pretty-printed, or null when it is not JSON. */
export function prettyJSON(s: string): string | null {
  const t = s.trim();
  if (!(t.startsWith("{") || t.startsWith("["))) return null;
  try {
    return JSON.stringify(JSON.parse(t), null, 2);
  } catch {
    return null;
  }
}
