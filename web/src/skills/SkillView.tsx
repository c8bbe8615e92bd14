import { useState } from "react";
import { renderMarkdown, canRender } from "../viewer/markdown";
import { splitSkill } from "./gepa";

/**
 * A SKILL.md as an agent will load it: the frontmatter's name and
 * description, the body rendered as Markdown (sanitized: it was written by a
 * model from untrusted traces), and a Raw toggle that shows the file byte
 * for byte.
 */
export function SkillView({ md, label }: { md: string; label: string }) {
  const [raw, setRaw] = useState(false);
  const s = splitSkill(md);
  const rendered = canRender(s.body);
  return (
    <div className="skill" role="group" aria-label={label}>
      <div className="row">
        {s.name && (
          <span className="small-text">
            <span className="muted">name</span> <code>{s.name}</code>
          </span>
        )}
        <span className="spacer" />
        <button type="button" className="ghost" aria-pressed={raw} onClick={() => setRaw(!raw)} disabled={!rendered}>
          Raw
        </button>
      </div>
      {s.description && (
        <p className="small-text">
          <span className="muted">description</span> {s.description}
        </p>
      )}
      {raw || !rendered ? (
        <pre className="raw" aria-label={label + " (raw)"} tabIndex={0}>
          {md}
        </pre>
      ) : (
        <div className="md" dangerouslySetInnerHTML={{ __html: renderMarkdown(s.body) }} />
      )}
    </div>
  );
}
