import { useState } from "react";
import { Link, useNavigate, useSearchParams } from "react-router";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, ApiError, type RewardModel } from "../api/client";
import { useAuth } from "../auth/auth";
import { formatDate } from "../traces/format";
import { active, DEFAULT_BUDGET, DEFAULT_REFLECTION_MODEL, DEFAULT_TASK_MODEL, gain, gepaProgressText, score, type GepaRun, type GepaRunRequest } from "./gepa";

/**
 * Skills: every GEPA run of the account (live while one is queued or
 * running) and the form that starts one from a succeeded reward model
 * (?model=ID preselects it, which is how the model page links here).
 */
export function SkillsPage() {
  // Every control gated here is admin-only (import, train, consent, criteria): reviewers and viewers do not see it.
  const { isAdmin: canWrite } = useAuth();
  const runs = useQuery({
    queryKey: ["gepa-runs"],
    queryFn: () => api<GepaRun[]>("/gepa-runs"),
    refetchInterval: (q) => ((q.state.data ?? []).some(active) ? 1500 : false),
  });
  const models = useQuery({ queryKey: ["reward-models"], queryFn: () => api<RewardModel[]>("/reward-models") });
  const names = new Map((models.data ?? []).map((m) => [m.id, m.name]));
  const succeeded = (models.data ?? []).filter((m) => m.status === "succeeded");
  const rs = runs.data ?? [];
  return (
    <main className="main">
      <header className="page-head">
        <h1>Skills</h1>
      </header>
      <p className="muted">
        A GEPA run writes a <code>SKILL.md</code> for your agent: it runs your task model on the traces a reward model trained on, scores each reply with that model, and asks a reflection model to
        rewrite the skill from the scores and your reviewers' comments.
      </p>
      {canWrite &&
        (models.isPending ? null : succeeded.length === 0 ? (
          <div className="state">
            <p>
              No succeeded reward model yet: a GEPA run needs one as its metric. Train one on <Link to="/models">Models</Link>.
            </p>
          </div>
        ) : (
          <StartForm models={succeeded} />
        ))}
      <section className="panel" aria-labelledby="runs-h">
        <h2 id="runs-h">GEPA runs</h2>
        {runs.isError ? (
          <p role="alert" className="error">
            Could not load GEPA runs: {(runs.error as Error).message}
          </p>
        ) : runs.isPending ? (
          <p className="muted" aria-busy="true">
            Loading runs…
          </p>
        ) : rs.length === 0 ? (
          <p className="muted">No GEPA runs yet.</p>
        ) : (
          <div className="table-wrap">
            <table className="traces">
              <thead>
                <tr>
                  <th scope="col">Run</th>
                  <th scope="col">Status</th>
                  <th scope="col">Reward model</th>
                  <th scope="col">Task model</th>
                  <th scope="col" className="num">
                    Seed
                  </th>
                  <th scope="col" className="num">
                    Best
                  </th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {rs.map((r) => (
                  <tr key={r.id}>
                    <td className="title">
                      <Link to={`/skills/${r.id}`}>{r.skill_name ?? "GEPA run " + r.id.slice(0, 8)}</Link>
                    </td>
                    <td>
                      <span className={"chip status-" + r.status}>{r.status}</span> <span className="muted small-text">{gepaProgressText(r)}</span>
                    </td>
                    <td>
                      <Link to={`/models/${r.reward_model_id}`}>{names.get(r.reward_model_id) ?? r.reward_model_id.slice(0, 8)}</Link>
                    </td>
                    <td className="mono small-text">{r.task_model}</td>
                    <td className="num">{score(r.seed_score)}</td>
                    <td className="num">
                      {score(r.best_score)} {r.best_score != null && <span className="muted small-text">({gain(r.best_score, r.seed_score)})</span>}
                    </td>
                    <td>
                      <time dateTime={r.created_at}>{formatDate(r.created_at)}</time>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        )}
      </section>
    </main>
  );
}

const MODEL_RE = /^(openai|anthropic)\/.+/;

/** Only reward_model_id is required; empty fields keep the server's defaults (spec 001). */
function StartForm({ models }: { models: RewardModel[] }) {
  const [params] = useSearchParams();
  const wanted = params.get("model");
  const [modelId, setModelId] = useState(models.some((m) => m.id === wanted) ? wanted! : models[0].id);
  const [taskModel, setTaskModel] = useState("");
  const [taskBase, setTaskBase] = useState("");
  const [reflection, setReflection] = useState("");
  const [budget, setBudget] = useState("");
  const qc = useQueryClient();
  const navigate = useNavigate();
  const problems: string[] = [];
  if (taskModel.trim() && !MODEL_RE.test(taskModel.trim())) problems.push("Task model: write it as openai/<model> or anthropic/<model>.");
  if (reflection.trim() && !MODEL_RE.test(reflection.trim())) problems.push("Reflection model: write it as openai/<model> or anthropic/<model>.");
  if (taskBase.trim() && !/^https?:\/\/\S+$/.test(taskBase.trim())) problems.push("Task API base: an http(s) URL, e.g. http://gpu-box:8000/v1.");
  const n = Number(budget);
  if (budget && (!Number.isInteger(n) || n < 1 || n > 10000)) problems.push("Budget: a whole number of metric calls from 1 to 10000.");
  const start = useMutation({
    mutationFn: () => {
      const body: GepaRunRequest = { reward_model_id: modelId };
      if (taskModel.trim()) body.task_model = taskModel.trim();
      if (taskBase.trim()) body.task_api_base = taskBase.trim();
      if (reflection.trim()) body.reflection_model = reflection.trim();
      if (budget) body.max_metric_calls = n;
      return api<GepaRun>("/gepa-runs", { method: "POST", json: body });
    },
    onSuccess: (r) => {
      qc.invalidateQueries({ queryKey: ["gepa-runs"] });
      navigate(`/skills/${r.id}`);
    },
  });
  const err = start.error as ApiError | null;
  return (
    <section className="panel" aria-labelledby="start-h">
      <h2 id="start-h">Start a GEPA run</h2>
      <form
        className="stack gepa-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (problems.length === 0) start.mutate();
        }}
      >
        <label className="field">
          <span>Reward model</span>
          <select value={modelId} onChange={(e) => setModelId(e.target.value)}>
            {models.map((m) => (
              <option key={m.id} value={m.id}>
                {m.name} ({m.trace_count} traces)
              </option>
            ))}
          </select>
        </label>
        <div className="row">
          <label className="field">
            <span>Task model</span>
            <input value={taskModel} onChange={(e) => setTaskModel(e.target.value)} placeholder={DEFAULT_TASK_MODEL + " (default)"} />
          </label>
          <label className="field">
            <span>Task API base</span>
            <input value={taskBase} onChange={(e) => setTaskBase(e.target.value)} placeholder="unset: the provider's endpoint" />
          </label>
        </div>
        <div className="row">
          <label className="field">
            <span>Reflection model</span>
            <input value={reflection} onChange={(e) => setReflection(e.target.value)} placeholder={DEFAULT_REFLECTION_MODEL + " (default)"} />
          </label>
          <label className="field">
            <span>Budget (metric calls)</span>
            <input type="number" min={1} max={10000} value={budget} onChange={(e) => setBudget(e.target.value)} placeholder={String(DEFAULT_BUDGET)} />
          </label>
        </div>
        <p className="muted small-text">
          The task model should be the one your agent runs on, so the skill is tuned for it; any OpenAI-compatible server (vLLM, SGLang) works as <code>openai/&lt;served name&gt;</code> with its
          <code>/v1</code> URL as the task API base. The worker needs the providers' keys (<code>OPENAI_API_KEY</code>, <code>ANTHROPIC_API_KEY</code>). The budget is a hard cap on scored task-model
          calls.
        </p>
        {problems.length > 0 && (
          <ul role="alert" className="error">
            {problems.map((p) => (
              <li key={p}>{p}</li>
            ))}
          </ul>
        )}
        {err && (
          <p role="alert" className="error">
            Could not start the run: {err.message}
            {err.field ? ` (field ${err.field})` : ""}
          </p>
        )}
        <div className="row">
          <button type="submit" className="primary" disabled={start.isPending || problems.length > 0} aria-busy={start.isPending}>
            Start GEPA run
          </button>
        </div>
      </form>
    </section>
  );
}
