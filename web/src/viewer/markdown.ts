// Markdown for trace messages: marked for the syntax, highlight.js for
// fenced and recognised code, DOMPurify because trace content is untrusted.
// Very large or very deeply nested content is shown raw instead (rendering
// it can stall or overflow a tab's stack).
import { Marked } from "marked";
import hljs from "highlight.js/lib/common";
import DOMPurify from "dompurify";

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]!);

export function highlight(code: string, lang?: string): string {
  try {
    if (lang && hljs.getLanguage(lang)) return hljs.highlight(code, { language: lang, ignoreIllegals: true }).value;
    if (code.length < 20000) return hljs.highlightAuto(code).value;
  } catch {
    /* fall through to plain text */
  }
  return escapeHtml(code);
}

const md = new Marked({
  gfm: true,
  breaks: true,
  renderer: {
    code({ text, lang }) {
      const l = (lang ?? "").split(/\s/)[0];
      return `<pre class="code"><code class="hljs${l ? " language-" + escapeHtml(l) : ""}">${highlight(text, l || undefined)}</code></pre>`;
    },
    // Pseudo-XML in prompts (<system-reminder>…) stays visible as text.
    html({ text }) {
      return escapeHtml(text);
    },
  },
});

export const RAW_LIMIT = 150_000;

function tooDeep(s: string): boolean {
  let depth = 0;
  for (const line of s.split("\n", 2000)) {
    const m = /^(\s*(?:[>*+-]|\d+\.)\s*)+/.exec(line);
    depth = Math.max(depth, m ? m[0].length : 0);
  }
  return depth > 100;
}

export function canRender(s: string): boolean {
  return s.length <= RAW_LIMIT && !tooDeep(s);
}

export function renderMarkdown(s: string): string {
  const html = md.parse(s, { async: false }) as string;
  return DOMPurify.sanitize(html, { USE_PROFILES: { html: true } });
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
