import { useCallback, useEffect, useId, useMemo, useRef, useState } from "react";
import { usePainted } from "./afterPaint";
import { useAuth } from "../auth/auth";
import { api, type Schemas, type TraceDetail } from "../api/client";
import { sectionPath } from "./TaskCard";
import "./sectionCrumbs.css";

type Section = NonNullable<TraceDetail["sections"]>[number];
type Summary = Schemas["SectionSummary"];
type Summaries = Schemas["SectionSummaries"];

/** What the viewer knows about one section's generated summary. */
type Known = { state: "pending" } | { state: "done"; summary: Summary } | { state: "unavailable"; reason: string };

/** The API's transport batch (spec 001: 1–4 ranges a request) and the requests allowed in flight at once. */
const BATCH = 4;
const IN_FLIGHT = 2;
const POLL_MS = 2000;

const rangeKey = (s: { first_step_id: string; last_step_id: string }) => s.first_step_id + ":" + s.last_step_id;

/**
 * useSectionSummaries asks POST /traces/{id}/section-summaries for the
 * sections it is given, each at most once per trace revision (stepsKey):
 * in batches of four ranges, at most two requests in flight, a range
 * answered pending asked again every two seconds until the worker tier has
 * answered, starting once the viewer's first screen is painted. Ordinary
 * trace refreshes (same steps) ask nothing again; a failed request leaves
 * the derived titles and says why.
 */
export function useSectionSummaries(traceId: string, stepsKey: string, wanted: Section[]) {
  const [known, setKnown] = useState<Map<string, Known>>(new Map());
  const asked = useRef(new Set<string>()); // queued, in flight or answered for this revision
  const queue = useRef<Section[]>([]);
  const inFlight = useRef(0);
  const generation = useRef(0);
  const timers = useRef<number[]>([]);

  // A new trace or revision starts over.
  useEffect(() => {
    generation.current++;
    asked.current = new Set();
    queue.current = [];
    inFlight.current = 0;
    setKnown(new Map());
    return () => {
      for (const t of timers.current) window.clearTimeout(t);
      timers.current = [];
    };
  }, [traceId, stepsKey]);

  const pump = useCallback(() => {
    const gen = generation.current;
    while (inFlight.current < IN_FLIGHT && queue.current.length > 0) {
      const batch = queue.current.splice(0, BATCH);
      inFlight.current++;
      const ranges = batch.map((s) => ({ first_step_id: s.first_step_id, last_step_id: s.last_step_id }));
      api<Summaries>(`/traces/${traceId}/section-summaries`, { method: "POST", json: { ranges } })
        .then((r) => {
          if (gen !== generation.current) return;
          const byRange = new Map((r.sections ?? []).map((s) => [rangeKey(s), s]));
          const entries = batch.map((s): [string, Known] => {
            const got = byRange.get(rangeKey(s));
            if (got && got.title != null) return [rangeKey(s), { state: "done", summary: got }];
            if (r.unavailable) return [rangeKey(s), { state: "unavailable", reason: got?.reason ?? r.unavailable_reason ?? "generation failed" }];
            return [rangeKey(s), { state: "pending" }];
          });
          setKnown((prev) => new Map([...prev, ...entries]));
          const again = batch.filter((_, i) => entries[i][1].state === "pending");
          if (again.length > 0) {
            timers.current.push(
              window.setTimeout(() => {
                if (gen !== generation.current) return;
                queue.current.push(...again);
                pump();
              }, POLL_MS),
            );
          }
        })
        .catch((e: Error) => {
          if (gen !== generation.current) return;
          setKnown((prev) => {
            const next = new Map(prev);
            for (const s of batch) next.set(rangeKey(s), { state: "unavailable", reason: e.message });
            return next;
          });
        })
        .finally(() => {
          if (gen !== generation.current) return;
          inFlight.current--;
          pump();
        });
    }
  }, [traceId]);

  const wantedKey = wanted.map(rangeKey).join(",");
  const painted = usePainted(); // asked once the first screen is on it (afterPaint.ts)
  // Generating summaries spends the operator's model budget: a read-only
  // key may not (403), so it keeps the derived titles and asks nothing.
  const { canWrite } = useAuth();
  useEffect(() => {
    if (!painted || !canWrite) return;
    let added = false;
    for (const s of wanted) {
      if (asked.current.has(rangeKey(s))) continue;
      asked.current.add(rangeKey(s));
      queue.current.push(s);
      added = true;
    }
    if (added) pump();
    // wantedKey stands for wanted's ranges.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [wantedKey, stepsKey, pump, painted, canWrite]);

  return known;
}

/**
 * The section breadcrumb (spec 001 "Trace sections"): task › subtask ›
 * phase of the selected step, following it as it moves. Titles are the
 * generated ones once POST /section-summaries has them (the derived title
 * until then, and when generation is unavailable); only ancestors are
 * clickable, the current section is plain text. A graded section shows its
 * 0–1 local success estimate, or Unscored with the reason; hovering or
 * focusing it shows the objective and the rationale.
 */
export function SectionCrumbs({
  traceId,
  stepsKey,
  sections,
  selected,
  onPick,
  said,
}: {
  traceId: string;
  stepsKey: string;
  sections: Section[];
  selected: number;
  onPick: (index: number) => void;
  /** A reason the page already says (a missing provider): not repeated here. */
  said?: string;
}) {
  const path = useMemo(() => sectionPath(sections, selected), [sections, selected]);
  const known = useSectionSummaries(traceId, stepsKey, path);
  const unavailable = path.map((s) => known.get(rangeKey(s))).find((k): k is Extract<Known, { state: "unavailable" }> => k?.state === "unavailable");
  if (path.length === 0) return null;
  return (
    <nav className="crumbs section-crumbs" aria-label="Sections">
      {path.map((s, i) => {
        const k = known.get(rangeKey(s));
        const title = (k?.state === "done" && k.summary.title) || s.title;
        const current = i === path.length - 1;
        return (
          <span key={rangeKey(s) + s.kind} className="crumb">
            {i > 0 && <span aria-hidden="true"> › </span>}
            {current ? (
              <span aria-current="location" className="crumb-current">
                {title}
              </span>
            ) : (
              <button type="button" className="link" onClick={() => onPick(s.first_step_index)}>
                {title}
              </button>
            )}
            {s.graded && <SectionScore known={k} />}
          </span>
        );
      })}
      {unavailable && unavailable.reason !== said && (
        <span className="muted small-text crumb-note" role="note">
          {" "}
          · derived titles: {unavailable.reason}
        </span>
      )}
    </nav>
  );
}

/** A graded section's score, with its objective and rationale on hover and focus. */
function SectionScore({ known }: { known: Known | undefined }) {
  const id = useId();
  if (!known || known.state === "unavailable") return null;
  if (known.state === "pending") return <span className="section-score muted"> assessing…</span>;
  const s = known.summary;
  const label = s.score != null ? `score ${s.score.toFixed(2)}` : "Unscored";
  return (
    <span className={"section-score chip" + (s.score == null ? " unscored" : "")} tabIndex={0} aria-describedby={id}>
      <span className="score-value">{label}</span>
      <span role="tooltip" id={id} className="section-tip">
        {s.objective && <>Objective: {s.objective}. </>}
        {s.reason && <>{s.score != null ? "Why" : "Unscored because"}: {s.reason}</>}
        {s.summary && <span className="section-summary"> {s.summary}</span>}
      </span>
    </span>
  );
}
