import type { Step } from "../api/client";

// What an LLM call recorded about itself, as importers keep it on the steps
// the call produced (steps[].metadata.model and .usage: the OTLP adapter's
// withCallMetadata; a stash trace may carry the same). One call that wrote
// a reply and two tool calls is three steps with the same model and usage.

type Usage = { input_tokens?: number; output_tokens?: number; total_tokens?: number; cached_input_tokens?: number; cached_tokens?: number };
type Call = { model: string; usage: Usage };

const count = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) && v >= 0 ? v : undefined);

/** The step's call, or null when no model or usage was recorded on it. */
function callOf(step: Step): Call | null {
  const md = (step.metadata ?? {}) as { model?: unknown; usage?: unknown };
  const model = typeof md.model === "string" ? md.model : "";
  const u = md.usage && typeof md.usage === "object" ? (md.usage as Record<string, unknown>) : {};
  const usage: Usage = {
    input_tokens: count(u.input_tokens),
    output_tokens: count(u.output_tokens),
    total_tokens: count(u.total_tokens),
    // The OTLP adapter writes cached_input_tokens; cached_tokens is the
    // spelling a hand-written trace is likely to use.
    cached_input_tokens: count(u.cached_input_tokens) ?? count(u.cached_tokens),
  };
  if (!model && Object.values(usage).every((v) => v === undefined)) return null;
  return { model, usage };
}

const callKey = (c: Call | null) => (c ? JSON.stringify([c.model, c.usage.input_tokens, c.usage.output_tokens, c.usage.total_tokens, c.usage.cached_input_tokens]) : "");

/**
 * The ids of steps that repeat the step before them's call (same model and
 * usage): the call's line is shown on its first step only, and its tokens
 * are counted once.
 */
export function repeatedCalls(steps: Step[]): Set<string> {
  const out = new Set<string>();
  let prev = "";
  for (const s of steps) {
    const k = callKey(callOf(s));
    if (k && k === prev) out.add(s.id);
    prev = k;
  }
  return out;
}

const n = (v: number) => v.toLocaleString("en-US");

/** The tokens spent over the trace, each call counted once; null when no step recorded usage. */
export function traceTokens(steps: Step[], repeated: Set<string>): { total: number; input: number; output: number; cached: number } | null {
  let seen = false;
  const sum = { total: 0, input: 0, output: 0, cached: 0 };
  for (const s of steps) {
    if (repeated.has(s.id)) continue;
    const u = callOf(s)?.usage;
    if (!u || (u.input_tokens === undefined && u.output_tokens === undefined && u.total_tokens === undefined)) continue;
    seen = true;
    sum.total += u.total_tokens ?? (u.input_tokens ?? 0) + (u.output_tokens ?? 0);
    sum.input += u.input_tokens ?? 0;
    sum.output += u.output_tokens ?? 0;
    sum.cached += u.cached_input_tokens ?? 0;
  }
  return seen ? sum : null;
}

/** The trace's token total for the header's meta line, with its parts in words. */
export function TraceTokens({ steps, repeated }: { steps: Step[]; repeated: Set<string> }) {
  const t = traceTokens(steps, repeated);
  if (!t) return null;
  const parts = [`${n(t.input)} in`, `${n(t.output)} out`, ...(t.cached ? [`${n(t.cached)} cached`] : [])].join(" · ");
  return (
    <span className="trace-tokens" title={`Tokens over the trace's LLM calls: ${parts}`}>
      {" "}
      · {n(t.total)} tokens
    </span>
  );
}

/**
 * A quiet line in an assistant step's header: the model that answered and
 * the call's tokens ("gpt-4o-mini · 812 in · 96 out · 512 cached"), as
 * text a screen reader reads, not a control.
 */
export function CallUsage({ step }: { step: Step }) {
  const c = callOf(step);
  if (!c) return null;
  const u = c.usage;
  const parts: string[] = [];
  if (c.model) parts.push(c.model);
  if (u.input_tokens !== undefined) parts.push(`${n(u.input_tokens)} in`);
  if (u.output_tokens !== undefined) parts.push(`${n(u.output_tokens)} out`);
  if (u.input_tokens === undefined && u.output_tokens === undefined && u.total_tokens !== undefined) parts.push(`${n(u.total_tokens)} tokens`);
  if (u.cached_input_tokens) parts.push(`${n(u.cached_input_tokens)} cached`);
  const text = parts.join(" · ");
  return (
    <span className="call-usage muted" title={`LLM call: ${text}`}>
      {text}
    </span>
  );
}
