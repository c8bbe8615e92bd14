// Markdown for trace messages: marked for the syntax, highlight.js for
// fenced and recognised code, DOMPurify because trace content is untrusted.
// Very large or very deeply nested content is shown raw instead (text.ts
// decides). The trace viewer loads this module on demand (richText.ts), after
// its first screen is painted as plain text.
import { Marked } from "marked";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

// The languages agents write most; others render as plain code.
for (const [name, lang] of Object.entries({ bash, diff, go, javascript, json, markdown, python, rust, sql, typescript, xml, yaml })) hljs.registerLanguage(name, lang);
hljs.registerAliases(["sh", "shell", "zsh", "console"], { languageName: "bash" });
hljs.registerAliases(["js", "jsx"], { languageName: "javascript" });
hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
hljs.registerAliases(["py"], { languageName: "python" });
hljs.registerAliases(["html", "svg"], { languageName: "xml" });
hljs.registerAliases(["yml"], { languageName: "yaml" });
import DOMPurify from "dompurify";
import { escapeHtml } from "./text";

export { canRender, prettyJSON, RAW_LIMIT } from "./text";

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

export function renderMarkdown(s: string): string {
  const html = md.parse(s, { async: false }) as string;
  return DOMPurify.sanitize(html, { USE_PROFILES: { html: true } });
}
