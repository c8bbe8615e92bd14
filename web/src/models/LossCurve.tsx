export type LossPoint = { step: number; loss: number };

/** Bradley–Terry loss per training step as a line (SVG), with its range labelled. */
export function LossCurve({ points, recorded }: { points: LossPoint[]; recorded?: boolean }) {
  if (points.length === 0) return <p className="muted">Waiting for the first training step…</p>;
  const W = 600;
  const H = 160;
  const pad = 28;
  const maxS = Math.max(...points.map((p) => p.step), 1);
  const minL = Math.min(...points.map((p) => p.loss));
  const maxL = Math.max(...points.map((p) => p.loss));
  const span = maxL - minL || 1;
  const x = (s: number) => pad + (s / maxS) * (W - 2 * pad);
  const y = (l: number) => H - pad - ((l - minL) / span) * (H - 2 * pad);
  const d = points.map((p, i) => `${i ? "L" : "M"}${x(p.step).toFixed(1)},${y(p.loss).toFixed(1)}`).join(" ");
  const last = points[points.length - 1];
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`Loss per step: ${points.length} points, last ${last.loss.toFixed(4)} at step ${last.step}`}>
        <line x1={pad} x2={W - pad} y1={H - pad} y2={H - pad} className="axis" />
        <line x1={pad} x2={pad} y1={pad} y2={H - pad} className="axis" />
        <path d={d} className="line" />
        <text x={pad} y={H - 8} className="tick">0</text>
        <text x={W - pad} y={H - 8} className="tick" textAnchor="end">step {maxS}</text>
        <text x={pad + 4} y={pad - 8} className="tick">{maxL.toFixed(3)}</text>
        <text x={pad + 4} y={H - pad - 4} className="tick">{minL.toFixed(3)}</text>
      </svg>
      <figcaption className="muted small-text">
        {recorded
          ? `Bradley–Terry loss of each of the ${points.length} training steps, as the trainer recorded it.`
          : "Loss per step as the worker reports it while this page is open; the full curve is recorded when training ends."}
      </figcaption>
    </figure>
  );
}
