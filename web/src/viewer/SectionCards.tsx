import { useMemo } from "react";
import type { TraceDetail } from "../api/client";
import { useSectionSummaries } from "./SectionCrumbs";

type Section = NonNullable<TraceDetail["sections"]>[number];

/** Sections shown as cards: tasks and subtasks (phases are dividers inside the trace, not places to go). */
const cardKids = (s: Section) => (s.children ?? []).filter((c) => c.kind === "task" || c.kind === "subtask");

/**
 * cardLevel resolves the overview's ?in= path (child positions among the
 * cards, "0.1") to the sections it opens: the cards to show and the
 * ancestors above them. An unknown path falls back to the top level, so a
 * stale link still shows the cards.
 */
export function cardLevel(sections: Section[], path: string): { cards: Section[]; trail: Section[]; parts: number[] } {
  let cards = sections;
  const trail: Section[] = [];
  const parts: number[] = [];
  for (const p of path ? path.split(".") : []) {
    const s = cards[Number(p)];
    if (!s || cardKids(s).length === 0) return { cards: sections, trail: [], parts: [] };
    trail.push(s);
    parts.push(Number(p));
    cards = cardKids(s);
  }
  return { cards, trail, parts };
}

/**
 * cardPathOf is the ?in= path of the cards holding step index: where "Back
 * to sections" returns from a step, beside the section it is in.
 */
export function cardPathOf(sections: Section[], index: number): string {
  const parts: number[] = [];
  let cards = sections;
  for (;;) {
    const k = cards.findIndex((s) => s.first_step_index <= index && index <= s.last_step_index);
    if (k < 0 || cardKids(cards[k]).length === 0) return parts.join(".");
    parts.push(k);
    cards = cardKids(cards[k]);
  }
}

/**
 * The section overview (spec 001): the trace's logical tasks and subtasks
 * as cards, each titled with its generated title (the derived one until
 * the worker tier answers) and its score when graded. A card with subtasks
 * opens them as cards; a leaf opens the complete chronological trace at its
 * first step. Below the top level a breadcrumb leads back up: ancestors
 * are buttons, the current level plain text; the top level has none (no
 * inert "Sections" label, no empty row).
 */
export function SectionCards({ traceId, stepsKey, sections, path, onPath, onEnter }: { traceId: string; stepsKey: string; sections: Section[]; path: string; onPath: (path: string) => void; onEnter: (section: Section) => void }) {
  const { cards, trail, parts } = useMemo(() => cardLevel(sections, path), [sections, path]);
  const wanted = useMemo(() => [...trail, ...cards], [trail, cards]);
  const known = useSectionSummaries(traceId, stepsKey, wanted);
  const titleOf = (s: Section) => {
    const k = known.get(s.first_step_id + ":" + s.last_step_id);
    return (k?.state === "done" && k.summary.title) || s.title;
  };
  return (
    <section className="section-cards" aria-label="Sections of this trace">
      {trail.length > 0 && (
        <nav className="crumbs section-crumbs" aria-label="Sections">
          <button type="button" className="link" onClick={() => onPath("")}>
            Sections
          </button>
          {trail.map((s, i) => (
            <span key={s.first_step_id + s.kind} className="crumb">
              <span aria-hidden="true"> › </span>
              {i === trail.length - 1 ? (
                <span aria-current="location" className="crumb-current">
                  {titleOf(s)}
                </span>
              ) : (
                <button type="button" className="link" onClick={() => onPath(parts.slice(0, i + 1).join("."))}>
                  {titleOf(s)}
                </button>
              )}
            </span>
          ))}
        </nav>
      )}
      <ol className="cards">
        {cards.map((s, k) => {
          const kids = cardKids(s);
          const sum = known.get(s.first_step_id + ":" + s.last_step_id);
          const score = sum?.state === "done" ? sum.summary.score : undefined;
          return (
            <li key={s.first_step_id + s.kind} className={"section-card" + (s.kind === "context" ? " context" : "")}>
              <h2>
                <button type="button" className="link" onClick={() => (kids.length > 0 ? onPath([...parts, k].join(".")) : onEnter(s))}>
                  {titleOf(s)}
                </button>
              </h2>
              <p className="muted small-text">
                {s.kind} · steps {s.first_step_index + 1}–{s.last_step_index + 1}
                {kids.length > 0 && <> · {kids.length} subtask{kids.length === 1 ? "" : "s"}</>}
                {s.kind === "context" && <> · context, not agent work</>}
              </p>
              {s.graded && (
                <p className="small-text">
                  {sum?.state === "pending" || !sum ? (
                    <span className="muted">assessing…</span>
                  ) : sum.state === "unavailable" ? (
                    <span className="muted">no score: {sum.reason}</span>
                  ) : (
                    <span className={"chip" + (score == null ? " unscored" : "")}>{score != null ? `score ${score.toFixed(2)}` : "Unscored"}</span>
                  )}
                  {sum?.state === "done" && sum.summary.summary && <span className="muted"> {sum.summary.summary}</span>}
                </p>
              )}
            </li>
          );
        })}
      </ol>
    </section>
  );
}
