// The learning report's agreement (issue 36): how much of the labels a
// model was trained on the members disputed, an admin settled, or
// exclude_disputed left out, Krippendorff's alpha over them, and each
// member's agreement with this model once it has scores. Every figure
// shows the samples it rests on and says "too few to trust" below them.
import type { RewardModelDetail, Schemas } from "../api/client";

type Figure = Schemas["AgreementFigure"];

export function LearningAgreement({ model }: { model: RewardModelDetail }) {
  const a = model.agreement;
  return (
    <section className="panel" aria-labelledby="la-h">
      <h2 id="la-h">Agreement of the training labels</h2>
      {a == null ? (
        <p className="muted">Measured when the training dataset is built.</p>
      ) : (
        <>
          <table className="kvtable" aria-label="Agreement of the training labels">
            <tbody>
              <tr>
                <th scope="row">Labeled targets</th>
                <td>{a.judged}</td>
              </tr>
              <tr>
                <th scope="row">Rated by two or more members</th>
                <td>{a.co_rated}</td>
              </tr>
              <tr>
                <th scope="row">Disputed</th>
                <td>{a.disputed}</td>
              </tr>
              <tr>
                <th scope="row">Adjudicated</th>
                <td>{a.adjudicated}</td>
              </tr>
              <tr>
                <th scope="row">Excluded as disputed</th>
                <td>{model.training_config.exclude_disputed ? a.excluded : "— (disputed labels were kept)"}</td>
              </tr>
              <tr>
                <th scope="row">Krippendorff's alpha</th>
                <td>
                  <FigureView f={a.alpha} alpha label="Alpha of the training labels" />
                </td>
              </tr>
            </tbody>
          </table>
          {a.members.length > 0 && (
            <table className="kvtable" aria-label="Members' agreement with this model">
              <thead>
                <tr>
                  <th scope="col">Member</th>
                  <th scope="col">Judged</th>
                  <th scope="col">Agreement with this model</th>
                </tr>
              </thead>
              <tbody>
                {a.members.map((m) => (
                  <tr key={m.member}>
                    <th scope="row">{m.name || m.member.slice(0, 8)}</th>
                    <td>{m.judged}</td>
                    <td>
                      <FigureView f={m.model} label={`${m.name} with this model`} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <p className="muted small-text">A target is a trace or a step; disputed targets were rated by two or more members who disagree. Alpha is 1 for perfect agreement, 0 for chance.</p>
        </>
      )}
    </section>
  );
}

/** A figure, its sample count, and the too-few marker. Alpha prints as a number, shares as percentages. */
function FigureView({ f, alpha, label }: { f: Figure; alpha?: boolean; label: string }) {
  const v = f.value === null ? "—" : alpha ? f.value.toFixed(2) : `${Math.round(f.value * 100)}%`;
  return (
    <span aria-label={`${label}: ${v}, n=${f.n}${f.too_few ? ", too few to trust" : ""}`}>
      <strong>{v}</strong> <span className="muted">n={f.n}</span>
      {f.too_few && <span className="badge warn"> too few to trust</span>}
    </span>
  );
}
