import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, type RewardModelDetail } from "../api/client";
import { useAuth } from "../auth/auth";

type Background = RewardModelDetail["background_scoring"];

/**
 * A ready model's background scoring (spec 001 "Learned action credit"):
 * how many of the account's traces it has scored, queued, running and
 * failed for good (three automatic attempts), polled while any is queued
 * or running, and Pause/Resume so an account with many models controls
 * its cost. Explicit "Score actions" works while paused.
 */
export function BackgroundScoring({ model }: { model: RewardModelDetail }) {
  // Every control gated here is admin-only (import, train, consent, criteria): reviewers and viewers do not see it.
  const { isAdmin: canWrite } = useAuth();
  const qc = useQueryClient();
  const key = ["reward-model", model.id];
  const bg = model.background_scoring;
  const active = bg.queued + bg.running > 0;
  // Shares the page's query: this observer only adds polling while work is in flight.
  useQuery({
    queryKey: key,
    queryFn: () => api<RewardModelDetail>(`/reward-models/${model.id}`),
    refetchInterval: active ? 2000 : false,
  });
  const toggle = useMutation({
    mutationFn: (paused: boolean) => api<Background>(`/reward-models/${model.id}/background-scoring`, { method: "PUT", json: { paused } }),
    onSuccess: (next) => qc.setQueryData<RewardModelDetail>(key, (m) => (m ? { ...m, background_scoring: next } : m)),
  });
  if (model.metrics?.action_scoring_version !== 1) {
    return (
      <section className="panel" aria-labelledby="bg-h">
        <h2 id="bg-h">Background scoring</h2>
        <p className="muted">This model was not trained on action comparisons, so it scores no traces in the background.</p>
      </section>
    );
  }
  return (
    <section className="panel" aria-labelledby="bg-h">
      <header className="page-head">
        <h2 id="bg-h">Background scoring</h2>
        <span className="spacer" />
        {canWrite && (
          <button type="button" onClick={() => toggle.mutate(!bg.paused)} disabled={toggle.isPending}>
            {bg.paused ? "Resume background scoring" : "Pause background scoring"}
          </button>
        )}
      </header>
      <p className="muted" role="status">
        {bg.paused
          ? "Paused: new and changed traces wait until you resume (Score actions on a trace still works)."
          : "New and changed traces are scored after 30 seconds without changes."}
      </p>
      <table className="kvtable" aria-label="Background scoring">
        <tbody>
          <tr>
            <th scope="row">Scored</th>
            <td>{bg.scored}</td>
          </tr>
          <tr>
            <th scope="row">Queued</th>
            <td>{bg.queued}</td>
          </tr>
          <tr>
            <th scope="row">Running</th>
            <td>{bg.running}</td>
          </tr>
          <tr>
            <th scope="row">Failed</th>
            <td>{bg.failed > 0 ? `${bg.failed} (three automatic attempts used; Score actions on the trace retries)` : 0}</td>
          </tr>
        </tbody>
      </table>
      {toggle.isError && (
        <p role="alert" className="error">
          {(toggle.error as Error).message}
        </p>
      )}
    </section>
  );
}
