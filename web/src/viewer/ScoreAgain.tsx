import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, type Schemas, type TraceDetail } from "../api/client";

/** How long the viewer keeps refreshing after Score again: the worker tier scores the trace in the background. */
const WATCH_MS = 60_000;

/**
 * "Score again" for the shared evaluator (spec 002): POST
 * /traces/{id}/evaluator/rescore asks the live release to score the trace
 * once more with its saved checkpoint — no labeling, no retraining. Shown
 * while a release is live and the trace is not already being scored; the
 * earlier scores stay until the new ones land.
 */
export function ScoreAgain({ trace, onWatch }: { trace: TraceDetail; onWatch: (until: number) => void }) {
  const qc = useQueryClient();
  const again = useMutation({
    mutationFn: () => api<Schemas["TraceEvaluator"]>(`/traces/${trace.id}/evaluator/rescore`, { method: "POST" }),
    onSuccess: () => {
      onWatch(Date.now() + WATCH_MS);
      qc.invalidateQueries({ queryKey: ["trace", trace.id] });
    },
  });
  const ev = trace.evaluator;
  if (ev.live_release == null) return null;
  return (
    <>
      <button
        type="button"
        className="small"
        title="Run the shared evaluator's saved checkpoint on this trace again (no labeling, no retraining)"
        disabled={again.isPending || ev.status === "scoring"}
        onClick={() => again.mutate()}
      >
        Score again
      </button>
      {again.isError && (
        <span role="alert" className="error small-text">
          {(again.error as Error).message}
        </span>
      )}
    </>
  );
}
