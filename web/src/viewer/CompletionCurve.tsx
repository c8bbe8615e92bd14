import { useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { api, type Schemas, type Step } from "../api/client";
import "./completionCurve.css";

type Completion = Schemas["Completion"];
type Point = { i: number; v: number | null; why: string };

/**
 * The displayed row a checkpoint belongs to: a tool result shares the row
 * of the call right before it (spec 001: tool-result checkpoints map to
 * their paired displayed row).
 */
function rowIndex(steps: Step[], i: number): number {
  const s = steps[i];
  const prev = i > 0 ? steps[i - 1] : undefined;
  if (s.role === "tool" && prev && prev.role === "assistant" && prev.tool_name && prev.tool_call_id && prev.tool_call_id === s.tool_call_id) return i - 1;
  return i;
}

/** Runs of consecutive estimated points: a null estimate breaks the line. */
function runs(points: Point[]): { i: number; v: number; why: string }[][] {
  const out: { i: number; v: number; why: string }[][] = [];
  let cur: { i: number; v: number; why: string }[] = [];
  for (const p of points) {
    if (p.v == null) {
      if (cur.length) out.push(cur);
      cur = [];
    } else cur.push({ i: p.i, v: p.v, why: p.why });
  }
  if (cur.length) out.push(cur);
  return out;
}

/** Fritsch–Carlson tangents: a cubic through the points that never overshoots them (monotone between neighbours). */
function tangents(xs: number[], ys: number[]): number[] {
  const n = xs.length;
  if (n < 2) return [0];
  const d = xs.slice(1).map((x, k) => (ys[k + 1] - ys[k]) / (x - xs[k]));
  const m = xs.map((_, k) => (k === 0 ? d[0] : k === n - 1 ? d[n - 2] : d[k - 1] * d[k] <= 0 ? 0 : (d[k - 1] + d[k]) / 2));
  for (let k = 0; k < n - 1; k++) {
    if (d[k] === 0) {
      m[k] = m[k + 1] = 0;
      continue;
    }
    const a = m[k] / d[k];
    const b = m[k + 1] / d[k];
    if (a < 0) m[k] = 0;
    if (b < 0) m[k + 1] = 0;
    const s = a * a + b * b;
    if (s > 9) {
      const t = 3 / Math.sqrt(s);
      m[k] = t * a * d[k];
      m[k + 1] = t * b * d[k];
    }
  }
  return m;
}

/** The curve's value at x between checkpoints k and k+1 (cubic Hermite with the tangents above). */
function valueAt(xs: number[], ys: number[], m: number[], k: number, x: number): number {
  const h = xs[k + 1] - xs[k];
  const t = (x - xs[k]) / h;
  const t2 = t * t;
  const t3 = t2 * t;
  return (2 * t3 - 3 * t2 + 1) * ys[k] + (t3 - 2 * t2 + t) * h * m[k] + (-2 * t3 + 3 * t2) * ys[k + 1] + (t3 - t2) * h * m[k + 1];
}

/**
 * The completion curve of each graded task (POST /traces/{id}/completion):
 * the estimated progress toward each independent request, on a fixed
 * 0–100% axis, a smooth line through the checkpoints that never overshoots
 * them; a null estimate and the end of a task break the line. Hovering
 * reads the value at any step, saying when it lies between checkpoints
 * (interpolated); clicking opens the step. It asks once per
 * trace revision, polls only while the worker tier is still answering
 * (pending), and says why when the server has no model for it
 * (unavailable).
 */
export function CompletionCurve({ traceId, steps, onPick }: { traceId: string; steps: Step[]; onPick: (i: number) => void }) {
  const key = steps.map((s) => s.id).join(",");
  const [hover, setHover] = useState<{ task: number; i: number } | null>(null);
  const q = useQuery({
    queryKey: ["completion", traceId, key],
    queryFn: () => api<Completion>(`/traces/${traceId}/completion`, { method: "POST", json: {} }),
    refetchInterval: (s) => (s.state.data?.pending ? 2000 : false),
    staleTime: Infinity,
  });
  const c = q.data;
  if (!c) return null;
  if (c.unavailable) return <p className="muted small-text">Completion curve unavailable: {c.unavailable_reason}</p>;
  const tasks = (c.tasks ?? []).filter((t) => (t.checkpoints ?? []).some((p) => p.completion != null));
  if (tasks.length === 0) return c.pending ? <p className="muted small-text">Estimating completion…</p> : null;
  const at = new Map(steps.map((s, i) => [s.id, i]));
  const n = steps.length;
  const W = 1000;
  const H = 60;
  const X = (i: number) => ((i + 0.5) / n) * W;
  const Y = (v: number) => H - 4 - v * (H - 8);
  const stepAt = (clientX: number, el: Element) => {
    const r = el.getBoundingClientRect();
    return Math.min(n - 1, Math.max(0, Math.floor(((clientX - r.left) / r.width) * n)));
  };
  const model = tasks.map((t) => {
    const points: Point[] = (t.checkpoints ?? []).filter((p) => at.has(p.step_id)).map((p) => ({ i: rowIndex(steps, at.get(p.step_id)!), v: p.completion ?? null, why: p.reason }));
    const segs = runs(points).map((r) => {
      const xs = r.map((p) => p.i);
      const ys = r.map((p) => p.v);
      return { r, xs, ys, m: tangents(xs, ys) };
    });
    return { t, points, segs };
  });
  const describe = (task: number, i: number): string => {
    const { points, segs } = model[task];
    const exact = points.find((p) => p.i === i);
    if (exact) return exact.v != null ? `${Math.round(exact.v * 100)}% — ${exact.why}` : `no estimate — ${exact.why}`;
    for (const s of segs) {
      for (let k = 0; k + 1 < s.xs.length; k++) {
        if (s.xs[k] < i && i < s.xs[k + 1]) return `${Math.round(valueAt(s.xs, s.ys, s.m, k, i) * 100)}% (interpolated between steps ${s.xs[k] + 1} and ${s.xs[k + 1] + 1})`;
      }
    }
    return "no estimate here";
  };
  return (
    <figure className="credit-strip completion-curve">
      <figcaption className="muted small-text">Estimated completion of each request (0–100%, a model&apos;s estimate, not a measured ratio); click to open a step.</figcaption>
      <p className="strip-preview small-text" aria-live="polite">
        {hover ? (
          <>
            <strong>Step {hover.i + 1}</strong> · {describe(hover.task, hover.i)}
          </>
        ) : (
          <span className="muted">Hover for the estimate at a step.</span>
        )}
      </p>
      {model.map(({ t, points, segs }, ti) => (
        <div key={t.first_step_id} className="curve-row">
          <svg
            viewBox={`0 0 ${W} ${H}`}
            preserveAspectRatio="none"
            role="img"
            aria-label={`Completion of ${t.objective ?? "a task"}: ${points.map((p) => `step ${p.i + 1} ${p.v != null ? Math.round(p.v * 100) + "%" : "no estimate"}`).join(", ")}`}
            onMouseMove={(e) => setHover({ task: ti, i: stepAt(e.clientX, e.currentTarget) })}
            onClick={(e) => onPick(stepAt(e.clientX, e.currentTarget))}
            onMouseLeave={() => setHover(null)}
          >
            <line x1={0} x2={W} y1={Y(0)} y2={Y(0)} className="base" />
            <line x1={0} x2={W} y1={Y(1)} y2={Y(1)} className="base faint" />
            {segs.map((s) => (
              <path
                key={s.xs[0]}
                className="curve"
                fill="none"
                vectorEffect="non-scaling-stroke"
                d={s.r
                  .map((p, k) => {
                    if (k === 0) return `M${X(p.i).toFixed(1)},${Y(p.v).toFixed(1)}`;
                    const h = s.xs[k] - s.xs[k - 1];
                    const c1x = X(s.xs[k - 1] + h / 3);
                    const c1y = Y(s.ys[k - 1] + (s.m[k - 1] * h) / 3);
                    const c2x = X(s.xs[k] - h / 3);
                    const c2y = Y(s.ys[k] - (s.m[k] * h) / 3);
                    return `C${c1x.toFixed(1)},${c1y.toFixed(1)} ${c2x.toFixed(1)},${c2y.toFixed(1)} ${X(p.i).toFixed(1)},${Y(p.v).toFixed(1)}`;
                  })
                  .join(" ")}
              />
            ))}
            {points
              .filter((p) => p.v != null)
              .map((p) => (
                <rect key={p.i} x={X(p.i) - 4} y={Y(p.v!) - 4} width={8} height={8} className="point">
                  <title>{`Step ${p.i + 1}: ${Math.round(p.v! * 100)}% — ${p.why}`}</title>
                </rect>
              ))}
            {hover?.task === ti && <rect x={(hover.i / n) * W} width={Math.max(W / n, 2)} y={0} height={H} className="hov" />}
          </svg>
          <div className="axis small-text muted" aria-hidden="true">
            <span>100%</span>
            <span>0%</span>
          </div>
        </div>
      ))}
    </figure>
  );
}
