import { useQuery } from "@tanstack/react-query";
import { api, type Schemas, type Step } from "../api/client";

type Completion = Schemas["Completion"];

/**
 * The completion curve of each graded task (POST /traces/{id}/completion):
 * how far the task had got by each checkpoint, 0–1. It asks once per trace
 * revision, polls while the worker tier is still answering (pending), and
 * says why when the server has no model for it (unavailable).
 */
export function CompletionCurve({ traceId, steps, onPick }: { traceId: string; steps: Step[]; onPick: (i: number) => void }) {
  const key = steps.map((s) => s.id).join(",");
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
  const n = Math.max(1, steps.length - 1);
  const W = 1000;
  const H = 60;
  return (
    <figure className="credit-strip">
      <figcaption className="muted small-text">Completion per task (0–1 at each checkpoint); click a point to open its step.</figcaption>
      {tasks.map((t) => {
        const pts = (t.checkpoints ?? []).filter((p) => p.completion != null && at.has(p.step_id)).map((p) => ({ i: at.get(p.step_id)!, v: p.completion!, why: p.reason }));
        const d = pts.map((p, k) => `${k ? "L" : "M"}${((p.i / n) * W).toFixed(1)},${(H - 4 - p.v * (H - 8)).toFixed(1)}`).join(" ");
        return (
          <svg key={t.first_step_id} viewBox={`0 0 ${W} ${H}`} preserveAspectRatio="none" role="img" aria-label={`Completion of ${t.objective ?? "a task"}: ${pts.map((p) => `step ${p.i + 1} ${Math.round(p.v * 100)}%`).join(", ")}`}>
            <line x1={0} x2={W} y1={H - 4} y2={H - 4} className="base" />
            <path d={d} fill="none" stroke="var(--accent)" strokeWidth={2} vectorEffect="non-scaling-stroke" />
            {pts.map((p) => (
              <rect key={p.i} x={(p.i / n) * W - 4} y={H - 8 - p.v * (H - 8)} width={8} height={8} className="pos" onClick={() => onPick(p.i)}>
                <title>{`Step ${p.i + 1}: ${Math.round(p.v * 100)}% — ${p.why}`}</title>
              </rect>
            ))}
          </svg>
        );
      })}
    </figure>
  );
}
