import { Link } from "react-router";
import { useQuery } from "@tanstack/react-query";
import { api, type RewardModel } from "../api/client";
import { formatDate } from "../traces/format";
import { progressText } from "./status";

/** Every reward model of the account, newest first; refreshes while any is queued or running. */
export function ModelsPage() {
  const list = useQuery({
    queryKey: ["reward-models"],
    queryFn: () => api<RewardModel[]>("/reward-models"),
    refetchInterval: (q) => ((q.state.data ?? []).some((m) => m.status === "queued" || m.status === "running") ? 1500 : false),
  });
  const ms = list.data ?? [];
  return (
    <main className="main">
      <header className="page-head">
        <h1>Models</h1>
        {ms.filter((m) => m.status === "succeeded").length >= 2 && (
          <Link to="/models/compare" className="button">
            Compare models
          </Link>
        )}
      </header>
      {list.isError ? (
        <p role="alert" className="state error">
          Could not load models: {(list.error as Error).message}
        </p>
      ) : list.isPending ? (
        <p className="state muted" aria-busy="true">
          Loading models…
        </p>
      ) : ms.length === 0 ? (
        <div className="state">
          <p>
            No reward models yet. On <Link to="/traces">Traces</Link>, select at least two traces and choose Create reward model: it trains from
            Critic&rsquo;s automatic annotations by default, or from your ratings.
          </p>
        </div>
      ) : (
        <div className="table-wrap">
          <table className="traces">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col">Base model</th>
                <th scope="col" className="num">
                  Traces
                </th>
                <th scope="col" className="num">
                  Pairs
                </th>
                <th scope="col" className="num">
                  Eval accuracy
                </th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {ms.map((m) => (
                <tr key={m.id}>
                  <td className="title">
                    <Link to={`/models/${m.id}`}>{m.name}</Link>
                  </td>
                  <td>
                    <span className={"chip status-" + m.status}>{m.status}</span> <span className="muted small-text">{progressText(m)}</span>
                  </td>
                  <td className="mono small-text">{m.base_model}</td>
                  <td className="num">{m.trace_count}</td>
                  <td className="num">{m.num_pairs ?? "—"}</td>
                  <td className="num">{m.metrics?.eval_accuracy != null ? `${(m.metrics.eval_accuracy * 100).toFixed(0)}% of ${m.metrics.eval_pairs}` : "—"}</td>
                  <td>
                    <time dateTime={m.created_at}>{formatDate(m.created_at)}</time>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </main>
  );
}
