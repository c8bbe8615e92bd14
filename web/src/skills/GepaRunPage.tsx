import { useEffect, useRef } from "react";
import { Link, useParams } from "react-router";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, ApiError, type RewardModel } from "../api/client";
import { CopyButton } from "../shell/Dialog";
import { formatDate } from "../traces/format";
import { active, downloadSkill, gain, gepaProgressText, installCommand, score, splitSkill, type GepaRun } from "./gepa";
import { SkillView } from "./SkillView";

/**
 * One GEPA run: its status and progress live while it runs, then the seed
 * and best scores (held-out ones when the run had enough examples), every
 * candidate with its score, the best SKILL.md rendered and raw, Download
 * skill and the exact command that installs it for Claude Code; on failure
 * the end of the worker's log.
 */
export function GepaRunPage() {
  const { id = "" } = useParams();
  const qc = useQueryClient();
  const run = useQuery({
    queryKey: ["gepa-run", id],
    queryFn: () => api<GepaRun>(`/gepa-runs/${id}`),
    refetchInterval: (q) => (q.state.data && active(q.state.data) ? 1000 : false),
    retry: (n, e) => n < 2 && (e as ApiError).status >= 500,
  });
  const r = run.data;
  const model = useQuery({
    queryKey: ["reward-model", r?.reward_model_id],
    queryFn: () => api<RewardModel>(`/reward-models/${r!.reward_model_id}`),
    enabled: !!r,
    staleTime: 60_000,
  });
  const wasActive = useRef(false);
  useEffect(() => {
    if (!r) return;
    if (wasActive.current && !active(r)) qc.invalidateQueries({ queryKey: ["gepa-runs"] });
    wasActive.current = active(r);
  }, [r, qc]);
  const download = useMutation({ mutationFn: () => downloadSkill(id) });

  if (run.isPending)
    return (
      <main className="main muted" aria-busy="true">
        Loading GEPA run…
      </main>
    );
  if (run.isError) {
    const e = run.error as ApiError;
    return (
      <main className="main">
        <h1>{e.status === 404 ? "GEPA run not found" : "Could not load the GEPA run"}</h1>
        <p role="alert">{e.status === 404 ? "This GEPA run does not exist or belongs to another account." : e.message}</p>
        <p>
          <Link to="/skills">Back to Skills</Link>
        </p>
      </main>
    );
  }
  const d = r!;
  const p = d.progress;
  const title = d.skill_name ?? "GEPA run " + d.id.slice(0, 8);
  return (
    <main className="main">
      <nav className="crumbs" aria-label="Breadcrumb">
        <Link to="/skills">Skills</Link> <span aria-hidden="true">/</span>
      </nav>
      <header className="page-head">
        <h1>{title}</h1>
        <span className="spacer" />
        {d.status === "succeeded" && (
          <button type="button" className="primary" onClick={() => download.mutate()} disabled={download.isPending}>
            Download skill
          </button>
        )}
      </header>
      {download.isError && (
        <p role="alert" className="error">
          {(download.error as Error).message}
        </p>
      )}
      <section className="panel" aria-labelledby="gst-h">
        <h2 id="gst-h" className="sr-only">
          Status
        </h2>
        <p className="status-line">
          Status:{" "}
          <strong className={"chip status-" + d.status} aria-label="GEPA run status" role="status">
            {d.status}
          </strong>{" "}
          <span className="muted">{gepaProgressText(d)}</span>
        </p>
        {d.status === "running" && p && (
          <p>
            <progress aria-label="Metric calls used" max={p.max_metric_calls} value={p.metric_calls} />{" "}
            <span className="progress">
              {p.metric_calls} / {p.max_metric_calls}
            </span>
          </p>
        )}
        <p className="muted small-text">
          reward model{" "}
          <Link to={`/models/${d.reward_model_id}`}>{model.data?.name ?? d.reward_model_id}</Link> · task model <code>{d.task_model}</code>
          {d.task_api_base && (
            <>
              {" "}
              at <code>{d.task_api_base}</code>
            </>
          )}{" "}
          · reflection model <code>{d.reflection_model}</code> · budget {d.max_metric_calls} metric calls
          {d.metric_calls != null && <> ({d.metric_calls} used)</>} · {d.examples} example{d.examples === 1 ? "" : "s"} · created{" "}
          <time dateTime={d.created_at}>{formatDate(d.created_at)}</time>
          {d.finished_at && (
            <>
              {" "}
              · finished <time dateTime={d.finished_at}>{formatDate(d.finished_at)}</time>
            </>
          )}
        </p>
        {d.status === "failed" && d.error && (
          <details open className="disclosure">
            <summary>Worker log (end)</summary>
            <pre className="raw log" aria-label="Worker log" tabIndex={0}>
              {d.error}
            </pre>
          </details>
        )}
      </section>
      {d.status === "succeeded" && <Result run={d} />}
    </main>
  );
}

function Result({ run }: { run: GepaRun }) {
  const h = run.holdout;
  const name = run.skill_name ?? splitSkill(run.best_skill ?? "").name ?? "skill";
  const cmd = installCommand(run.id, name);
  const cands = run.candidates ?? [];
  const max = Math.max(...cands.map((c) => c.score), 1e-9);
  return (
    <>
      <section className="panel" aria-labelledby="sc-h">
        <h2 id="sc-h">Scores</h2>
        <table className="kvtable">
          <tbody>
            <tr>
              <th scope="row">Seed skill</th>
              <td>{score(run.seed_score)}</td>
            </tr>
            <tr>
              <th scope="row">Best skill</th>
              <td>
                {score(run.best_score)} <span className="muted">({gain(run.best_score, run.seed_score)} over the seed)</span>
              </td>
            </tr>
            {h && (
              <>
                <tr>
                  <th scope="row">Held-out seed ({h.examples} traces)</th>
                  <td>{score(h.seed_score)}</td>
                </tr>
                <tr>
                  <th scope="row">Held-out best ({h.examples} traces)</th>
                  <td>
                    {score(h.best_score)} <span className="muted">({gain(h.best_score, h.seed_score)} over the seed)</span>
                  </td>
                </tr>
              </>
            )}
          </tbody>
        </table>
        <p className="muted small-text">
          Means of the calibrated score sigmoid((reward − mean) / std) of the reward model, 0 to 1, 0.5 = the calibration mean; seed and best come from the same model on the same examples, every one of them, so treat their gain as in-sample.{" "}
          {h
            ? `The held-out scores are on the ${h.examples} traces the search never saw: the honest number.`
            : "No held-out score: with fewer than 8 examples every example both proposes and ranks skills."}
        </p>
      </section>
      <section className="panel" aria-labelledby="best-h">
        <h2 id="best-h">Best skill</h2>
        {run.best_skill && <SkillView md={run.best_skill} label="Best SKILL.md" />}
        <h3>Install for Claude Code</h3>
        <p className="muted small-text">
          Claude Code loads project skills from <code>.claude/skills/{name}/SKILL.md</code> (personal ones from <code>~/.claude/skills/</code>). Run this in the project's root with an API key in{" "}
          <code>CRITIC_API_KEY</code>:
        </p>
        <div className="copy-block">
          <pre aria-label="Install command" tabIndex={0}>
            {cmd}
          </pre>
          <CopyButton text={cmd} label="Copy install command" />
        </div>
        <p className="muted small-text">GEPA optimizes whatever the reward model rewards, its mistakes included: read the skill and a few candidates before you ship it.</p>
      </section>
      <section className="panel" aria-labelledby="cand-h">
        <h2 id="cand-h">Candidates ({cands.length})</h2>
        <p className="muted small-text">Every skill the search kept, the seed first, each scored on every search example so their scores compare.</p>
        <ol className="plain candidates">
          {cands.map((c, i) => {
            const best = c.skill === run.best_skill;
            const label = `Candidate ${i + 1}${i === 0 ? " (seed)" : ""}${best ? " (best)" : ""}`;
            return (
              <li key={i} aria-label={label}>
                <details className="disclosure">
                  <summary>
                    <span>{label}</span> <span className="progress">score {score(c.score)}</span>{" "}
                    <span className="score-bar" aria-hidden="true">
                      <span style={{ width: `${Math.max(0, (c.score / max) * 100)}%` }} />
                    </span>
                  </summary>
                  <SkillView md={c.skill} label={label + " SKILL.md"} />
                </details>
              </li>
            );
          })}
        </ol>
      </section>
    </>
  );
}
