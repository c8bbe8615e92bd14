import { useId, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { useMarkdown } from "../viewer/richText";
import { guidelinesQuery } from "./criteria";
import "./criteria.css";

const OPEN = "critic.guidelines.open";

/**
 * The account's guidelines as a collapsible panel (collapsed until the
 * reviewer opens it; the choice is remembered in this browser). Nothing
 * when the account has none.
 */
export function GuidelinesPanel() {
  const g = useQuery(guidelinesQuery);
  const [open, setOpen] = useState(() => localStorage.getItem(OPEN) === "1");
  const id = useId();
  if (!g.data?.markdown.trim()) return null;
  const toggle = () => {
    localStorage.setItem(OPEN, open ? "0" : "1");
    setOpen(!open);
  };
  return (
    <section className="guidelines" aria-label="Guidelines">
      <button type="button" className="ghost guidelines-toggle" aria-expanded={open} aria-controls={id} onClick={toggle}>
        <span aria-hidden="true">{open ? "▾ " : "▸ "}</span>Guidelines
      </button>
      {open && (
        <div id={id} className="guidelines-body">
          <MarkdownText text={g.data.markdown} />
        </div>
      )}
    </section>
  );
}

/**
 * Markdown the account wrote, rendered by the viewer's renderer (raw HTML
 * in it is shown as text and the result is sanitized); its plain text until
 * the renderer has loaded.
 */
export function MarkdownText({ text }: { text: string }) {
  const md = useMarkdown();
  if (!md) return <div className="md plain">{text}</div>;
  return <div className="md" dangerouslySetInnerHTML={{ __html: md.renderMarkdown(text) }} />;
}
