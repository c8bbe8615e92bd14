// Who did what (issue 36): per member, annotations made, traces judged as a
// whole, what the review queue still offers them under the overlap, and
// when they last annotated. An admin sees every member (each name opens the
// trace list filtered to what they annotated); anyone else their own row.
import { useQuery } from "@tanstack/react-query";
import { Link } from "react-router";
import { api, type Schemas } from "../api/client";
import { useAuth } from "../auth/auth";

export function ProgressSection() {
  const { isAdmin } = useAuth();
  const p = useQuery({ queryKey: ["members", "progress"], queryFn: () => api<Schemas["MembersProgress"]>("/members/progress") });
  const rows = (p.data?.members ?? []).filter((m) => !m.removed || m.annotations > 0);
  return (
    <section className="panel" aria-labelledby="progress-h">
      <h2 id="progress-h">{isAdmin ? "Progress" : "Your progress"}</h2>
      {p.isPending && (
        <p className="muted" aria-busy="true">
          Loading progress…
        </p>
      )}
      {p.error && (
        <p role="alert" className="error">
          Could not load the progress: {p.error.message}
        </p>
      )}
      {p.data && (
        <p className="muted" aria-label="Queue coverage">
          {p.data.complete} of {p.data.items} traces judged by {p.data.overlap} {p.data.overlap === 1 ? "member" : "members"}
        </p>
      )}
      {p.data && (
        <table className="traces team-table" aria-label="Progress by member">
          <thead>
            <tr>
              <th scope="col">Member</th>
              <th scope="col">Annotations</th>
              <th scope="col" title="Traces the member rated as a whole">
                Judged
              </th>
              <th scope="col" title="Traces the review queue still offers the member under the overlap">
                Remaining
              </th>
              <th scope="col">Last activity</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((m) => (
              <tr key={m.id} aria-label={`Progress of ${m.name}`}>
                <td>
                  {isAdmin ? (
                    <Link to={`/traces?member=${encodeURIComponent(m.id)}`} title={`Traces ${m.name} annotated`}>
                      {m.name}
                    </Link>
                  ) : (
                    m.name
                  )}
                  {m.removed && <span className="badge">removed</span>}
                </td>
                <td>{m.annotations}</td>
                <td>{m.judged}</td>
                <td>{m.remaining ?? "—"}</td>
                <td>{m.last_activity_at ? new Date(m.last_activity_at).toLocaleString() : "never"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
