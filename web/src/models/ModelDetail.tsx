import { useEffect, useRef, useState } from "react";
import { Link, useParams } from "react-router";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, ApiError, type FeedbackEntry, type RewardModelDetail, type TraceList } from "../api/client";
import { useAuth } from "../auth/auth";
import { formatDate } from "../traces/format";
import { accuracyText, progressText, TRUST_MIN_PAIRS } from "./status";
import { LossCurve, type LossPoint } from "./LossCurve";
import { ModelSkills } from "../skills/ModelSkills";
import { BackgroundScoring } from "./BackgroundScoring";
import { TraceLink } from "../traces/TraceLink";
import { useRetryGate } from "./RetryGate";
import { LearningAgreement } from "./LearningAgreement";

/**
 * One reward model: its status live while it trains, the metrics with their
 * sample counts, the loss curve, the learning report (every finding with its
 * evidence), the traces it trained on, the weights, and on failure the
 * worker's log tail and Retry.
 */
export function ModelDetail() {
  const { id = "" } = useParams();
  // Every control gated here is admin-only (import, train, consent, criteria): reviewers and viewers do not see it.
  const { isAdmin: canWrite } = useAuth();
  const qc = useQueryClient();
  const model = useQuery({
    queryKey: ["reward-model", id],
    queryFn: () => api<RewardModelDetail>(`/reward-models/${id}`),
    refetchInterval: (q) => (q.state.data && (q.state.data.status === "queued" || q.state.data.status === "running") ? 1000 : false),
    retry: (n, e) => n < 2 && (e as ApiError).status >= 500,
  });
  // Loss points as the worker reported them while this page watched (the
  // API keeps only the latest report; the final loss is in the metrics).
  const [points, setPoints] = useState<LossPoint[]>([]);
  const m = model.data;
  useEffect(() => {
    const p = m?.progress as { phase?: string; step?: number; loss?: number } | null | undefined;
    if (!p || p.phase !== "training" || !p.step) return;
    setPoints((ps) => (ps.length && ps[ps.length - 1].step >= p.step! ? ps : [...ps, { step: p.step!, loss: p.loss ?? 0 }]));
  }, [m?.progress]);
  const wasActive = useRef(false);
  useEffect(() => {
    if (!m) return;
    const active = m.status === "queued" || m.status === "running";
    if (wasActive.current && !active) qc.invalidateQueries({ queryKey: ["reward-models"] });
    wasActive.current = active;
  }, [m, qc]);

  const retry = useMutation({
    mutationFn: () => api<RewardModelDetail>(`/reward-models/${id}/retry`, { method: "POST" }),
    onSuccess: () => {
      setPoints([]);
      qc.invalidateQueries({ queryKey: ["reward-model", id] });
      qc.invalidateQueries({ queryKey: ["reward-models"] });
    },
  });
  const gate = useRetryGate(m ?? { status: "", base_model: "" });
  const weights = useMutation({
    mutationFn: () => api<{ url: string }>(`/reward-models/${id}/weights`),
    onSuccess: (w) => {
      // The signed URL needs no key and answers as an attachment.
      const a = document.createElement("a");
      a.href = w.url;
      a.rel = "noopener";
      document.body.appendChild(a);
      a.click();
      a.remove();
    },
  });

  if (model.isPending)
    return (
      <main className="main muted" aria-busy="true">
        Loading model…
      </main>
    );
  if (model.isError) {
    const e = model.error as ApiError;
    return (
      <main className="main">
        <h1>{e.status === 404 ? "Model not found" : "Could not load the model"}</h1>
        <p role="alert">{e.status === 404 ? "This reward model does not exist or belongs to another account." : e.message}</p>
        <p>
          <Link to="/models">Back to Models</Link>
        </p>
      </main>
    );
  }
  const d = m!;
  const mt = d.metrics;
  const evalPairs = mt?.eval_pairs ?? 0;
  return (
    <main className="main">
      <nav className="crumbs" aria-label="Breadcrumb">
        <Link to="/models">Models</Link> <span aria-hidden="true">/</span>
      </nav>
      <header className="page-head">
        <h1>{d.name}</h1>
        <span className="spacer" />
        {d.status === "succeeded" && (
          <button type="button" className="primary" onClick={() => weights.mutate()} disabled={weights.isPending}>
            Download weights
          </button>
        )}
        {d.status === "failed" && canWrite && gate.canRetry && (
          <button type="button" className="primary" onClick={() => retry.mutate()} disabled={retry.isPending}>
            Retry
          </button>
        )}
      </header>
      {weights.isError && <p role="alert" className="error">{(weights.error as Error).message}</p>}
      {retry.isError && <p role="alert" className="error">{(retry.error as Error).message}</p>}
      <section className="panel" aria-labelledby="st-h">
        <h2 id="st-h" className="sr-only">
          Status
        </h2>
        <p className="status-line">
          Status:{" "}
          <strong className={"chip status-" + d.status} aria-label="Model status" role="status">
            {d.status}
          </strong>{" "}
          <span className="muted">{progressText(d)}</span>
        </p>
        {d.training_config.criterion_name != null && (
          <p>
            Trained on criterion: <strong>{d.training_config.criterion_name}</strong>
          </p>
        )}
        <p className="muted small-text">
          {d.base_model} · {d.worker_id && d.compute === "worker" ? "" : d.compute}
          {d.worker_id && (
            <>
              {d.compute === "worker" ? "" : " · "}
              {d.status === "succeeded" ? "trained by" : "on"} worker <span aria-label="Worker">{d.worker_id}</span>
            </>
          )}{" "}
          · {d.epochs} epoch{d.epochs === 1 ? "" : "s"} · max {d.max_pairs} pairs · {d.trace_count} traces · created{" "}
          <time dateTime={d.created_at}>{formatDate(d.created_at)}</time>
          {d.finished_at && (
            <>
              {" "}
              · finished <time dateTime={d.finished_at}>{formatDate(d.finished_at)}</time>
            </>
          )}
        </p>
        {d.status === "failed" && d.error && (
          <>
            <p className="error" aria-label="Failure reason">
              {d.error.split("\n")[0]}
            </p>
            {gate.advice && canWrite && (
              <p role="note" aria-label="What to change">
                {gate.advice}
              </p>
            )}
            {d.error.includes("\n") && (
              <details open className="disclosure">
                <summary>Worker log (last 2,000 characters)</summary>
                <pre className="raw log" aria-label="Worker log" tabIndex={0}>
                  {d.error.slice(d.error.indexOf("\n") + 1)}
                </pre>
              </details>
            )}
          </>
        )}
        {d.feedback_unavailable && <p className="muted">Feedback extraction: {d.feedback_unavailable}</p>}
        {d.erased_notice && (
          <p role="note" aria-label="Erased traces">
            {d.erased_notice}
          </p>
        )}
      </section>

      {mt && (
        <section className="panel" aria-labelledby="mt-h">
          <h2 id="mt-h">Metrics</h2>
          {evalPairs < TRUST_MIN_PAIRS && (
            <p className="warn-text" role="note">
              Too few to trust: {evalPairs} held-out pair{evalPairs === 1 ? "" : "s"}. With a handful of pairs held-out accuracy is noise; check the scores on separate traces before relying on them.
            </p>
          )}
          <table className="kvtable">
            <tbody>
              <tr>
                <th scope="row">Eval accuracy (whole traces)</th>
                <td>{accuracyText(mt.eval_accuracy, mt.eval_pairs)}</td>
              </tr>
              <tr>
                <th scope="row">Action eval accuracy</th>
                <td>{accuracyText(mt.action_eval_accuracy, mt.action_eval_pairs)}</td>
              </tr>
              <tr>
                <th scope="row">Tool-call eval accuracy</th>
                <td>{accuracyText(mt.tool_eval_accuracy, mt.tool_eval_pairs)}</td>
              </tr>
              <tr>
                <th scope="row">Training pairs</th>
                <td>
                  {mt.train_pairs} trace pairs, {mt.action_train_pairs ?? 0} action pairs
                </td>
              </tr>
              <tr>
                <th scope="row">Excluded cross-split pairs</th>
                <td>{mt.excluded_cross_trace_pairs ?? 0}</td>
              </tr>
              <tr>
                <th scope="row">Final loss</th>
                <td>{mt.final_loss != null ? mt.final_loss.toFixed(4) : "—"}</td>
              </tr>
              {d.reward_stats && (
                <tr>
                  <th scope="row">Calibration</th>
                  <td>
                    mean {d.reward_stats.mean.toFixed(3)}, std {d.reward_stats.std.toFixed(3)} over {d.reward_stats.count} training texts: calibrated score = sigmoid((score − mean) / std), 0.5 at the
                    mean (the review queue and GEPA use it)
                  </td>
                </tr>
              )}
              <tr>
                <th scope="row">Run</th>
                <td>
                  {mt.epochs} epochs on {mt.device} in {mt.seconds != null ? mt.seconds.toFixed(1) : "?"} s
                </td>
              </tr>
            </tbody>
          </table>
          <p className="muted small-text">0.5 is chance. Accuracy measures agreement with your supervision, not task success.</p>
        </section>
      )}
      {(mt?.loss_per_step?.length || points.length > 0 || d.status === "running") && (
        <section className="panel" aria-labelledby="lc-h">
          <h2 id="lc-h">Training curve</h2>
          {mt?.loss_per_step?.length ? (
            <LossCurve points={mt.loss_per_step.map((loss, i) => ({ step: i + 1, loss }))} recorded />
          ) : (
            <LossCurve points={points} />
          )}
          {mt?.eval_per_epoch && mt.eval_per_epoch.length > 0 && (
            <table className="kvtable" aria-label="Eval accuracy per epoch">
              <thead>
                <tr>
                  <th scope="col">Epoch</th>
                  <th scope="col">Eval accuracy</th>
                </tr>
              </thead>
              <tbody>
                {mt.eval_per_epoch.map((e) => (
                  <tr key={e.epoch}>
                    <td>{e.epoch}</td>
                    <td>{accuracyText(e.eval_accuracy, e.eval_pairs)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
      )}
      {d.status === "succeeded" && <BackgroundScoring model={d} />}
      {d.status === "succeeded" && <ModelSkills modelId={d.id} />}
      <Feedback entries={d.feedback} />
      <LearningAgreement model={d} />
      <TrainedOn ids={d.trace_ids} />
    </main>
  );
}

function Feedback({ entries }: { entries: FeedbackEntry[] | null }) {
  return (
    <section className="panel" aria-labelledby="fb-h">
      <h2 id="fb-h">Learning report</h2>
      {entries == null ? (
        <p className="muted">No feedback extracted yet: ratings train the model; comments are read once extraction runs.</p>
      ) : entries.length === 0 ? (
        <p className="muted">Extraction found nothing in the comments to learn from.</p>
      ) : (
        <ul className="findings">
          {entries.map((f) => (
            <li key={f.id} className={"finding" + (f.included_in_training ? "" : " excluded")}>
              <div className="annotation-head">
                <span className={"chip " + (f.label === "good" || f.label === "positive" ? "pos" : f.label === "bad" || f.label === "negative" ? "neg" : "")}>{f.label}</span>
                <span>confidence {f.confidence}</span>
                <span>source {f.source}</span>
                <span className={f.included_in_training ? "ok" : "muted"}>{f.included_in_training ? "included in training" : `not included (${f.outcome})`}</span>
                {f.included_in_evaluation && <span className="chip" title="Its pairs landed on the held-out side of the training split: they measure the model rather than train it.">held out for evaluation</span>}
                {f.erased ? (
                  <span className="chip" title="Its trace was deleted: the evidence, reason and actions that quoted it are erased.">
                    trace erased · step {f.step_index + 1}
                  </span>
                ) : (
                  <TraceLink id={f.trace_id} step={f.step_index + 1}>
                    Step {f.step_index + 1}
                  </TraceLink>
                )}
              </div>
              {f.evidence_quote && <blockquote className="quote">“{f.evidence_quote}”</blockquote>}
              {f.reason && <p className="comment-text">{f.reason}</p>}
              {f.alternative_action && (
                <details className="disclosure">
                  <summary>Better alternative</summary>
                  <p className="comment-text">{f.alternative_action}</p>
                </details>
              )}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function TrainedOn({ ids }: { ids: string[] }) {
  // Titles from the newest 1000 traces; any other id is shown as it is.
  const list = useQuery({ queryKey: ["traces", "titles"], queryFn: () => api<TraceList>("/traces?limit=1000"), staleTime: 30_000 });
  const titles = new Map((list.data?.traces ?? []).map((t) => [t.id, t.title]));
  return (
    <section className="panel" aria-labelledby="to-h">
      <h2 id="to-h">Trained on {ids.length} traces</h2>
      <ul className="plain">
        {ids.map((t) => (
          <li key={t}>
            <TraceLink id={t}>{titles.get(t) || t}</TraceLink>
          </li>
        ))}
      </ul>
    </section>
  );
}
