import type { Step } from "../api/client";

/** A displayed row: one step, or a tool call with its result when they are adjacent. */
export type Row = { steps: Step[] };

// Pairing never moves an output ahead of intervening messages: only a tool
// result immediately after its call (same tool_call_id, or the same tool
// name when neither has an id) joins the call's row.
export function buildRows(steps: Step[]): Row[] {
  const rows: Row[] = [];
  for (let i = 0; i < steps.length; i++) {
    const s = steps[i];
    const next = steps[i + 1];
    const isCall = s.role === "assistant" && (s.tool_name != null || s.tool_call_id != null);
    if (isCall && next && next.role === "tool") {
      const sameId = s.tool_call_id != null && s.tool_call_id === next.tool_call_id;
      const sameName = s.tool_call_id == null && next.tool_call_id == null && s.tool_name != null && s.tool_name === next.tool_name;
      if (sameId || sameName) {
        rows.push({ steps: [s, next] });
        i++;
        continue;
      }
    }
    rows.push({ steps: [s] });
  }
  return rows;
}

/** Row index of each step index. */
export function rowOfStep(rows: Row[]): number[] {
  const out: number[] = [];
  rows.forEach((r, i) => r.steps.forEach((s) => (out[s.index] = i)));
  return out;
}
