import { useMemo } from "react";
import type { Span } from "../api/client";

type Placed = { span: Span; depth: number; start: number; end: number };

/** Spans on one time axis; children (subagents, tools) nest under their parent by parent_id. */
export function Timeline({ spans, onPick }: { spans: Span[]; onPick: (stepIndex: number) => void }) {
  const { placed, t0, dur } = useMemo(() => {
    const byId = new Map(spans.map((s) => [s.id, s]));
    const depthOf = (s: Span, seen = new Set<string>()): number => {
      if (!s.parent_id || !byId.has(s.parent_id) || seen.has(s.id)) return 0;
      seen.add(s.id);
      return 1 + depthOf(byId.get(s.parent_id)!, seen);
    };
    // Nanoseconds exceed 2^53: subtract the earliest start as BigInt first.
    const starts = spans.map((s) => BigInt(s.start_ns));
    const min = starts.reduce((a, b) => (b < a ? b : a), starts[0] ?? 0n);
    const placed: Placed[] = spans.map((s) => ({ span: s, depth: depthOf(s), start: Number(BigInt(s.start_ns) - min) / 1e6, end: Number(BigInt(s.end_ns) - min) / 1e6 }));
    // Parents before children, then by start.
    const order = (p: Placed) => p.start;
    placed.sort((a, b) => order(a) - order(b) || a.depth - b.depth);
    const dur = Math.max(1e-6, ...placed.map((p) => p.end));
    return { placed, t0: min, dur };
  }, [spans]);
  void t0;
  return (
    <details className="timeline" open={spans.length <= 60}>
      <summary>
        Timeline · {spans.length} span{spans.length === 1 ? "" : "s"} · {fmtMs(dur)}
      </summary>
      <ol className="spans">
        {placed.map((p) => (
          <li key={p.span.id}>
            <button
              type="button"
              className="span-row"
              onClick={() => p.span.step_indices.length > 0 && onPick(p.span.step_indices[0])}
              title={`${p.span.name}${p.span.kind ? " (" + p.span.kind + ")" : ""}: ${fmtMs(p.end - p.start)}`}
            >
              <span className="span-name" style={{ paddingLeft: `${p.depth * 14}px` }}>
                {p.span.name}
                {p.span.kind && <span className="muted"> {p.span.kind}</span>}
              </span>
              <span className="span-track">
                <span className="span-bar" style={{ left: `${(p.start / dur) * 100}%`, width: `${Math.max(0.4, ((p.end - p.start) / dur) * 100)}%` }} />
              </span>
              <span className="span-dur muted">{fmtMs(p.end - p.start)}</span>
            </button>
          </li>
        ))}
      </ol>
    </details>
  );
}

function fmtMs(ms: number): string {
  if (ms < 1) return `${(ms * 1000).toFixed(0)} µs`;
  if (ms < 1000) return `${ms.toFixed(0)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}
