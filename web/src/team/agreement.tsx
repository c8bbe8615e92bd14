// How far the members agree: Krippendorff's alpha for the account and per
// criterion, pairwise agreement, each member against the consensus and
// against a chosen reward model. Every figure shows the samples it rests
// on and says "too few to trust" below the server's min_sample.
import { useQuery } from "@tanstack/react-query";
import { useSearchParams } from "react-router";
import { api, qs, type RewardModel, type Schemas } from "../api/client";
import { membersQuery } from "./members";

type Figure = Schemas["AgreementFigure"];

export function AgreementSection() {
  // The chosen model lives in the URL, so the view is a link.
  const [params, setParams] = useSearchParams();
  const model = params.get("model") ?? "";
  const models = useQuery({ queryKey: ["reward-models"], queryFn: () => api<RewardModel[]>("/reward-models") });
  const ready = (models.data ?? []).filter((m) => m.status === "succeeded");
  const report = useQuery({
    queryKey: ["agreement", model],
    queryFn: () => api<Schemas["AgreementReport"]>("/agreement" + qs({ reward_model_id: model })),
  });
  const members = useQuery(membersQuery);
  const nameOf = (id: string) => members.data?.members.find((m) => m.id === id)?.name ?? id.slice(0, 8);
  const r = report.data;
  return (
    <section className="panel" aria-labelledby="agreement-h">
      <h2 id="agreement-h">Agreement</h2>
      <p className="muted">Over the targets two or more members rated. Alpha is 1 for perfect agreement, 0 for chance; a share is how often two ratings matched.</p>
      {report.isPending && <p className="muted" aria-busy="true">Loading agreement…</p>}
      {report.error && (
        <p role="alert" className="error">
          Could not load agreement: {report.error.message}
        </p>
      )}
      {r && (
        <>
          <dl className="team-stats">
            <div>
              <dt>Krippendorff's alpha (all ratings)</dt>
              <dd>
                <FigureView f={r.account} alpha label="Account alpha" />
              </dd>
            </div>
            <div>
              <dt>Co-rated targets</dt>
              <dd>{r.co_rated}</dd>
            </div>
            <div>
              <dt>Disputed targets</dt>
              <dd>{r.disputed}</dd>
            </div>
            <div>
              <dt>Ratings counted</dt>
              <dd>{r.judgments}</dd>
            </div>
          </dl>
          {r.criteria.length > 0 && (
            <table className="traces team-table" aria-label="Agreement per criterion">
              <thead>
                <tr>
                  <th scope="col">Criterion</th>
                  <th scope="col">Alpha</th>
                </tr>
              </thead>
              <tbody>
                {r.criteria.map((c) => (
                  <tr key={c.criterion_id}>
                    <td>
                      {c.name} <span className="muted">({c.kind})</span>
                    </td>
                    <td>
                      <FigureView f={c.alpha} alpha label={`Alpha for ${c.name}`} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <h3>Between members</h3>
          {r.pairwise.length === 0 ? (
            <p className="muted">No two members have rated the same target yet.</p>
          ) : (
            <table className="traces team-table" aria-label="Pairwise agreement">
              <thead>
                <tr>
                  <th scope="col">Members</th>
                  <th scope="col">Agreement</th>
                </tr>
              </thead>
              <tbody>
                {r.pairwise.map((p) => (
                  <tr key={p.member_a + p.member_b}>
                    <td>
                      {nameOf(p.member_a)} and {nameOf(p.member_b)}
                    </td>
                    <td>
                      <FigureView f={p.agreement} label={`Agreement of ${nameOf(p.member_a)} and ${nameOf(p.member_b)}`} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <div className="row wrap">
            <h3>Each member</h3>
            <span className="spacer" />
            <label>
              Compare with model{" "}
              <select
                value={model}
                onChange={(e) => {
                  const next = new URLSearchParams(params);
                  if (e.target.value) next.set("model", e.target.value);
                  else next.delete("model");
                  setParams(next, { replace: true });
                }}
              >
                <option value="">(no model)</option>
                {ready.map((m) => (
                  <option key={m.id} value={m.id}>
                    {m.name}
                  </option>
                ))}
              </select>
            </label>
          </div>
          <table className="traces team-table" aria-label="Agreement of each member">
            <thead>
              <tr>
                <th scope="col">Member</th>
                <th scope="col">Judged</th>
                <th scope="col">With the consensus</th>
                {r.reward_model_id && <th scope="col">With the model</th>}
              </tr>
            </thead>
            <tbody>
              {r.members.map((m) => (
                <tr key={m.member}>
                  <td>{m.name}</td>
                  <td>{m.judged}</td>
                  <td>
                    <FigureView f={m.consensus} label={`${m.name} with the consensus`} />
                  </td>
                  {r.reward_model_id && <td>{m.model ? <FigureView f={m.model} label={`${m.name} with the model`} /> : "—"}</td>}
                </tr>
              ))}
            </tbody>
          </table>
          <p className="muted">Figures over fewer than {r.min_sample} samples are marked too few to trust.</p>
        </>
      )}
    </section>
  );
}

/** A figure, its sample count, and the too-few marker. Alpha prints as a number, shares as percentages. */
function FigureView({ f, alpha, label }: { f: Figure; alpha?: boolean; label: string }) {
  const v = f.value === null ? "—" : alpha ? f.value.toFixed(2) : `${Math.round(f.value * 100)}%`;
  return (
    <span className="team-figure" aria-label={`${label}: ${v}, n=${f.n}${f.too_few ? ", too few to trust" : ""}`}>
      <strong>{v}</strong> <span className="muted">n={f.n}</span>
      {f.too_few && <span className="badge warn">too few to trust</span>}
    </span>
  );
}
