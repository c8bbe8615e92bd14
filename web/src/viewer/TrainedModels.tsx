import { Link } from "react-router";
import type { TraceDetail } from "../api/client";

/**
 * The reward models trained on this trace (spec 001 "Trace messages"): each
 * one's name and training status, linking to its model page. Only the
 * account's own models are listed (GET /traces/{id}.reward_models).
 */
export function TrainedModels({ models }: { models: TraceDetail["reward_models"] }) {
  if (!models || models.length === 0) return null;
  return (
    <span className="trained-models" role="group" aria-label="Models trained on this trace">
      <span className="muted">Trained into</span>{" "}
      {models.map((m, i) => (
        <span key={m.id}>
          {i > 0 && ", "}
          <Link to={`/models/${m.id}`}>{m.name}</Link> <span className={"chip" + (m.status === "failed" ? " neg" : "")}>{m.status}</span>
        </span>
      ))}
    </span>
  );
}
