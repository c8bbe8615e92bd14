import { useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { usePainted } from "./afterPaint";
import { api, type RewardModel, type ScoringRun, type TraceDetail } from "../api/client";

/**
 * "Score actions": runs POST /traces/{id}/score with a chosen succeeded
 * model and shows the run's status and error; the viewer refreshes the
 * trace while a run is queued or running, so the credit badges appear when
 * it succeeds.
 */
export function ScoreActions({ trace, onScored }: { trace: TraceDetail; onScored: (modelId: string) => void }) {
  const qc = useQueryClient();
  // Asked once the trace's first screen is painted (afterPaint.ts); the control appears when the models are in.
  const painted = usePainted();
  const models = useQuery({ queryKey: ["reward-models"], queryFn: () => api<RewardModel[]>("/reward-models"), staleTime: 10_000, enabled: painted });
  const ok = (models.data ?? []).filter((m) => m.status === "succeeded");
  const [pick, setPick] = useState("");
  const model = pick || ok[0]?.id || "";
  const score = useMutation({
    mutationFn: () => api<ScoringRun>(`/traces/${trace.id}/score`, { method: "POST", json: { reward_model_id: model } }),
    onSuccess: () => {
      onScored(model);
      qc.invalidateQueries({ queryKey: ["trace", trace.id] });
    },
  });
  if (models.isPending || ok.length === 0) return null;
  // The trace's own record of the run, or the answer to the request until the trace shows it.
  const run = trace.scoring_runs.find((r) => r.reward_model_id === model) ?? (score.data?.reward_model_id === model ? score.data : undefined);
  return (
    <div className="row wrap score-actions">
      <label className="field inline">
        <span>Score with</span>
        <select value={model} onChange={(e) => setPick(e.target.value)}>
          {ok.map((m) => (
            <option key={m.id} value={m.id}>
              {m.name}
            </option>
          ))}
        </select>
      </label>
      <button type="button" onClick={() => score.mutate()} disabled={!model || score.isPending || run?.status === "queued" || run?.status === "running"}>
        Score actions
      </button>
      {run && (
        <span role="status" className={"small-text " + (run.status === "failed" ? "error" : "muted")}>
          Scoring run {run.status}
          {run.error && <>: {run.error}</>}
        </span>
      )}
      {score.isError && (
        <span role="alert" className="error">
          {(score.error as Error).message}
        </span>
      )}
    </div>
  );
}
