import { Link } from "react-router";
import { useQuery } from "@tanstack/react-query";
import { api } from "../api/client";
import { useAuth } from "../auth/auth";
import { gepaProgressText, score, type GepaRun } from "./gepa";

/** On a succeeded model's page: its GEPA runs and the way to start one (the Skills page with the model chosen). */
export function ModelSkills({ modelId }: { modelId: string }) {
  // Every control gated here is admin-only (import, train, consent, criteria): reviewers and viewers do not see it.
  const { isAdmin: canWrite } = useAuth();
  const runs = useQuery({ queryKey: ["gepa-runs"], queryFn: () => api<GepaRun[]>("/gepa-runs") });
  const mine = (runs.data ?? []).filter((r) => r.reward_model_id === modelId);
  return (
    <section className="panel" aria-labelledby="sk-h">
      <h2 id="sk-h">Skills</h2>
      <p>
        {canWrite ? (
          <Link to={`/skills?model=${modelId}`}>Create a skill with this model</Link>
        ) : (
          <span className="muted">A GEPA run uses this model as its metric to write a SKILL.md for your agent.</span>
        )}
      </p>
      {mine.length > 0 && (
        <ul className="plain">
          {mine.map((r) => (
            <li key={r.id}>
              <Link to={`/skills/${r.id}`}>{r.skill_name ?? "GEPA run " + r.id.slice(0, 8)}</Link> <span className={"chip status-" + r.status}>{r.status}</span>{" "}
              <span className="muted small-text">{r.status === "succeeded" ? `seed ${score(r.seed_score)} → best ${score(r.best_score)}` : gepaProgressText(r)}</span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
