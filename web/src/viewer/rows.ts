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

/**
 * A short key for one revision of a trace's steps (their ids, in order), for
 * query keys: joining 2,500 UUIDs made a 92 kB key that the query cache
 * hashed again on every render. 53 bits of cyrb53 over the ids plus their
 * count; an accidental collision would only reuse a cached estimate.
 */
export function revisionKey(steps: { id: string }[]): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (const s of steps) {
    for (let i = 0; i < s.id.length; i++) {
      const c = s.id.charCodeAt(i);
      h1 = Math.imul(h1 ^ c, 2654435761);
      h2 = Math.imul(h2 ^ c, 1597334677);
    }
    h1 = Math.imul(h1 ^ 44, 2654435761); // the separator
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return `${steps.length}:${(4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(36)}`;
}
