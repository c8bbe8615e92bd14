import { useQuery } from "@tanstack/react-query";
import { usePainted } from "./afterPaint";
import { useAuth } from "../auth/auth";
import { api, type Schemas, type Step } from "../api/client";
import type { Row } from "./rows";
import "./completionCurve.css";

type Completion = Schemas["Completion"];
type Point = { i: number; v: number | null; why: string };
type Seg = { r: { i: number; v: number; why: string }[]; xs: number[]; ys: number[]; m: number[] };

/** One task's curve: its checkpoints (on their displayed rows), the unbroken runs between null estimates, and its step range. */
export type TaskCurve = { objective: string; first: number; last: number; points: Point[]; segs: Seg[] };

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
 * useCompletion asks POST /traces/{id}/completion once per trace revision
 * (the step ids' revisionKey), and again every two seconds only while the worker tier is
 * still answering (pending). enabled is false when no section is graded:
 * there is nothing to estimate then, so nothing is asked. It is asked
 * once the viewer's first screen is painted (afterPaint.ts).
 */
export function useCompletion(traceId: string, stepsKey: string, enabled: boolean) {
  // Estimating spends the operator's model budget: never for a read-only key (403).
  const { canWrite } = useAuth();
  const painted = usePainted(enabled && canWrite); // enabled arrives with the trace's data
  return useQuery({
    queryKey: ["completion", traceId, stepsKey],
    queryFn: () => api<Completion>(`/traces/${traceId}/completion`, { method: "POST", json: {} }),
    refetchInterval: (s) => (s.state.data?.pending ? 2000 : false),
    staleTime: Infinity,
    enabled: painted,
  });
}

/**
 * The curves of the tasks that have at least one estimate. A checkpoint
 * sits on its displayed row: a tool result's on the row's first step, the
 * call it is paired with (spec 001), so the point lies where the reader
 * sees it in the list. A null estimate and a task's end break the line.
 */
export function completionCurves(c: Completion | undefined, steps: Step[], rows: Row[], stepRow: number[]): TaskCurve[] {
  if (!c || c.unavailable) return [];
  const at = new Map(steps.map((s, i) => [s.id, i]));
  const rowStart = (i: number) => rows[stepRow[i]]?.steps[0].index ?? i;
  return (c.tasks ?? [])
    .filter((t) => (t.checkpoints ?? []).some((p) => p.completion != null))
    .map((t) => {
      const points: Point[] = (t.checkpoints ?? []).filter((p) => at.has(p.step_id)).map((p) => ({ i: rowStart(at.get(p.step_id)!), v: p.completion ?? null, why: p.reason }));
      const segs = runs(points).map((r) => {
        const xs = r.map((p) => p.i);
        const ys = r.map((p) => p.v);
        return { r, xs, ys, m: tangents(xs, ys) };
      });
      return { objective: t.objective ?? "a task", first: at.get(t.first_step_id) ?? 0, last: at.get(t.last_step_id) ?? steps.length - 1, points, segs };
    });
}

/**
 * What the curve says at step i: a checkpoint's estimate and reason, or the
 * smooth curve's value between two checkpoints, marked interpolated; null
 * outside every task's line.
 */
export function describeCompletion(curves: TaskCurve[], i: number): string | null {
  const t = curves.find((c) => c.first <= i && i <= c.last);
  if (!t) return null;
  const exact = t.points.find((p) => p.i === i);
  if (exact) return exact.v != null ? `${Math.round(exact.v * 100)}% — ${exact.why}` : `no estimate — ${exact.why}`;
  for (const s of t.segs) {
    for (let k = 0; k + 1 < s.xs.length; k++) {
      if (s.xs[k] < i && i < s.xs[k + 1]) return `${Math.round(valueAt(s.xs, s.ys, s.m, k, i) * 100)}% (interpolated between steps ${s.xs[k] + 1} and ${s.xs[k + 1] + 1})`;
    }
  }
  return "no estimate here";
}

/** The accessible name of the overlay: every task's checkpoints, in order. */
export function completionLabel(curves: TaskCurve[]): string {
  return curves.map((t) => `Completion of ${t.objective}: ${t.points.map((p) => `step ${p.i + 1} ${p.v != null ? Math.round(p.v * 100) + "%" : "no estimate"}`).join(", ")}`).join("; ");
}

/**
 * The completion overlay drawn over the credit minimap (spec 001): a faint
 * teal curve on the minimap's fixed 0–100% right axis, a smooth line
 * through each task's checkpoints that never overshoots them. It lies on
 * top of the credit bars and takes the pointer for both; the minimap
 * handles hover and clicks, so a checkpoint's point opens its step too.
 */
export function CompletionLayer({ curves, n, W, H }: { curves: TaskCurve[]; n: number; W: number; H: number }) {
  const X = (i: number) => ((i + 0.5) / n) * W;
  const Y = (v: number) => H - 3 - v * (H - 6);
  return (
    <svg viewBox={`0 0 ${W} ${H}`} preserveAspectRatio="none" role="img" aria-label={completionLabel(curves)} className="completion-layer">
      {curves.flatMap((t, ti) =>
        t.segs.map((s) => (
          <path
            key={ti + ":" + s.xs[0]}
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
        )),
      )}
      {curves.flatMap((t, ti) =>
        t.points
          .filter((p) => p.v != null)
          .map((p) => (
            <rect key={ti + ":" + p.i} x={X(p.i) - 4} y={Y(p.v!) - 3} width={8} height={6} className="point">
              <title>{`Step ${p.i + 1}: ${Math.round(p.v! * 100)}% — ${p.why}`}</title>
            </rect>
          )),
      )}
    </svg>
  );
}
