import { useLayoutEffect, useMemo, useRef, useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { typingIn } from "../viewer/Shortcuts";
import type { Annotate } from "../viewer/useAnnotate";
import { choicesOf, criteriaQuery, lettersOf, myValue, pick, type Choice } from "./criteria";
import type { AppliesTo, Criterion, ValueAnnotation } from "./types";
import "./criteria.css";

/** One criterion on one target: what a row of the form shows and a key picks. */
export type Row = { criterion: Criterion; stepId: string | null; stepNumber?: number; annotations: ValueAnnotation[] };

/** The account's active criteria and their letters (empty until loaded, and when the account has none). */
export function useCriteria(): { criteria: Criterion[]; letters: Map<string, string>; forTarget: (t: AppliesTo | null) => Criterion[] } {
  const q = useQuery(criteriaQuery());
  const criteria = q.data ?? NONE;
  const letters = useMemo(() => lettersOf(criteria), [criteria]);
  return { criteria, letters, forTarget: (t) => (t ? criteria.filter((c) => c.applies_to === t) : NONE) };
}

const NONE: Criterion[] = [];

/**
 * The criteria keys of a page: a digit picks a choice of the armed
 * criterion (the first row unless a letter armed another), a criterion's
 * letter arms it, Escape disarms. Nothing fires while typing in a field, in
 * a dialog or with a modifier. A layout effect, as the pages' own keys: a
 * key pressed as a new item appears is not lost.
 */
export function useCriteriaKeys(rows: Row[], letters: Map<string, string>, me: string, ann: Annotate, enabled: boolean): string | null {
  const [armed, setArmed] = useState<string | null>(null);
  const live = useRef({ rows, letters, me, ann, enabled, armed });
  live.current = { rows, letters, me, ann, enabled, armed };
  useLayoutEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const { rows, letters, me, ann, enabled, armed } = live.current;
      if (!enabled || rows.length === 0 || e.ctrlKey || e.metaKey || e.altKey || typingIn(e)) return;
      if (e.key === "Escape" && armed) {
        setArmed(null);
        return;
      }
      if (/^[0-9]$/.test(e.key)) {
        const row = rows.find((r) => r.criterion.criterion_id === armed) ?? rows[0];
        const choice = choicesOf(row.criterion).find((c) => c.key === e.key);
        if (!choice) return;
        e.preventDefault();
        pick(ann, row.annotations, me, row.stepId, row.criterion, choice.value);
        setArmed(null);
        return;
      }
      const row = rows.find((r) => letters.get(r.criterion.criterion_id) === e.key);
      if (!row) return;
      e.preventDefault();
      setArmed(row.criterion.criterion_id);
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
  // A criterion armed on one target is not armed on the next.
  const armedRow = rows.find((r) => r.criterion.criterion_id === armed);
  return armedRow ? armed : null;
}

/**
 * The criteria of one target as a compact form: per criterion its letter,
 * name and a button per choice with its digit; the reviewer's value is
 * pressed, and pressing it again takes it back. Names carry the criterion
 * and the target: "Correctness: yes, step 4".
 */
export function CriteriaForm({
  rows,
  letters,
  me,
  ann,
  canWrite,
  armed,
  digits,
  title,
}: {
  rows: Row[];
  letters: Map<string, string>;
  me: string;
  ann: Annotate;
  canWrite: boolean;
  /** The criterion the next digit picks for (a letter armed it). */
  armed: string | null;
  /** The criterion bare digits pick for when nothing is armed (the page's first row), if it is on this form. */
  digits: string | null;
  title: string;
}) {
  if (rows.length === 0) return null;
  return (
    <div className="criteria-form" role="group" aria-label={title}>
      <div className="criteria-title">{title}</div>
      {rows.map((r) => {
        const c = r.criterion;
        const id = c.criterion_id;
        const mine = myValue(r.annotations, me, id, r.stepId);
        const target = r.stepId ? `step ${r.stepNumber}` : "trace";
        const letter = letters.get(id);
        const isArmed = armed === id;
        const bare = !armed && digits === id;
        return (
          <div key={id} className={"crit" + (isArmed ? " armed" : "")} data-criterion={c.name}>
            <div className="crit-name" title={c.description ?? undefined}>
              {letter && <kbd title={`Press ${letter}, then a digit`}>{letter}</kbd>} {c.name}
              {(isArmed || bare) && <span className="muted small-text"> · digits pick</span>}
            </div>
            <div className="crit-choices">
              {choicesOf(c).map((ch: Choice) => {
                const on = mine != null && String(mine.value) === String(ch.value);
                return (
                  <button
                    key={ch.key}
                    type="button"
                    className={"choice small" + (ch.key === ch.label ? " num" : "") + (on ? " on" : "")}
                    aria-pressed={on}
                    disabled={!canWrite || !me}
                    title={canWrite ? undefined : "Your role (or a read-only key) may not annotate: the values are shown, not changed"}
                    onClick={() => pick(ann, r.annotations, me, r.stepId, c, ch.value)}
                  >
                    {/* Named "Correctness: yes, step 4" by its content, not aria-label: the visible choice stays inside the name. */}
                    <span className="sr-only">{`${c.name}: ${ch.label}, ${target}`}</span>
                    {/* A scale's value is its own key (but 10, whose key is 0): shown once. */}
                    <span aria-hidden="true">{ch.key === ch.label ? <kbd>{ch.key}</kbd> : <><kbd>{ch.key}</kbd> {ch.label}</>}</span>
                  </button>
                );
              })}
            </div>
          </div>
        );
      })}
    </div>
  );
}

/** The key hint under a page's forms. */
export function criteriaHint(rows: Row[], armed: string | null): string {
  if (rows.length === 0) return "";
  const row = rows.find((r) => r.criterion.criterion_id === armed) ?? rows[0];
  const ch = choicesOf(row.criterion);
  const range = ch.length > 0 ? `${ch[0].key}–${ch[ch.length - 1].key}` : "";
  return armed ? `${range}: ${row.criterion.name}` : `${range}: ${row.criterion.name}${rows.length > 1 ? " · letter then digit: the others" : ""}`;
}

/** A criterion value in an annotation list: "Correctness: yes" (the name from the account's criteria, archived ones included). */
export function ValueChip({ criterionId, value }: { criterionId: string; value: string | number }) {
  const q = useQuery(criteriaQuery(true));
  const c = q.data?.find((x) => x.criterion_id === criterionId);
  return (
    <span className="chip criterion-value">
      {c?.name ?? "Criterion"}: {String(value)}
    </span>
  );
}
