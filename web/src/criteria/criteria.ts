// Criteria and guidelines on the client: their queries, the choices a
// criterion offers, which step a criterion applies to, and the reviewer's
// value on a target (annotations with a criterion_id, one per reviewer,
// target and criterion, as the server keeps them).
import { api, type Step } from "../api/client";
import { isThinking } from "../viewer/agentView";
import type { Annotate } from "../viewer/useAnnotate";
import type { AppliesTo, Criterion, Guidelines, Value, ValueAnnotation } from "./types";

/** The account's criteria (active ones; with archived ones on the settings page). */
export const criteriaQuery = (includeArchived = false) => ({
  queryKey: ["criteria", includeArchived],
  queryFn: () => api<{ criteria: Criterion[] }>(`/criteria${includeArchived ? "?include_archived=true" : ""}`).then((r) => r.criteria),
  staleTime: 30_000,
});

export const guidelinesQuery = {
  queryKey: ["guidelines"],
  queryFn: () => api<Guidelines>("/guidelines"),
  staleTime: 30_000,
};

/** What a step is as a criterion target: an assistant reply, a tool call, or neither (user, tool output, thinking). */
export function targetOf(s: Step): AppliesTo | null {
  if (s.role !== "assistant" || isThinking(s)) return null;
  return s.tool_name ? "tool_call" : "assistant";
}

export const APPLIES_TO: Record<AppliesTo, string> = { trace: "whole traces", assistant: "assistant replies", tool_call: "tool calls" };

export type Choice = { value: Value; label: string; key: string };

/**
 * A criterion's choices in order, each with its digit key: binary yes/no,
 * categorical its labels, scale 1..scale_max (10 is the 0 key).
 */
export function choicesOf(c: Criterion): Choice[] {
  const digit = (i: number) => (i === 9 ? "0" : String(i + 1));
  if (c.kind === "binary") return ["yes", "no"].map((v, i) => ({ value: v, label: v, key: digit(i) }));
  if (c.kind === "categorical") return c.labels.map((l, i) => ({ value: l.name, label: l.name, key: digit(i) }));
  return Array.from({ length: c.scale_max ?? 0 }, (_, i) => ({ value: i + 1, label: String(i + 1), key: digit(i) }));
}

// The criteria's letters: a letter arms its criterion for the next digit.
// None of the pages' own keys are here (j k: steps, c: comment, e: expand,
// s: skip), nor anything typed in a field (shortcuts never fire there).
const LETTERS = "abdfghilmnopqrtuvwxyz";

/** The letter of each active criterion, by its place in the account's list (stable whatever step is selected). */
export function lettersOf(criteria: Criterion[]): Map<string, string> {
  const m = new Map<string, string>();
  criteria.forEach((c, i) => i < LETTERS.length && m.set(c.criterion_id, LETTERS[i]));
  return m;
}

/** The reviewer's value of a criterion on a target (step id, or null for the trace). */
export function myValue(annotations: ValueAnnotation[], me: string, criterionId: string, stepId: string | null): ValueAnnotation | undefined {
  return annotations.find((a) => a.author_id === me && a.criterion_id === criterionId && (a.step_id ?? null) === stepId && a.value != null);
}

/**
 * Presses a choice: the reviewer's current value again takes it back, another
 * value replaces it, and no value adds one.
 */
export function pick(ann: Annotate, annotations: ValueAnnotation[], me: string, stepId: string | null, c: Criterion, value: Value) {
  const cur = myValue(annotations, me, c.criterion_id, stepId);
  if (cur && String(cur.value) === String(value)) ann.remove.mutate(cur.id);
  else if (cur) ann.edit.mutate({ id: cur.id, body: { value } });
  else ann.add.mutate({ ...(stepId ? { step_id: stepId } : {}), criterion_id: c.criterion_id, value });
}
