import type { Step } from "../api/client";

/**
 * Every step of the trace on one strip, each scored action a bar: up for
 * positive credit, down for negative, height by |credit| (fixed ±1 scale,
 * so traces compare); unscored steps are baseline ticks. Clicking opens that
 * step. It is the whole trace at a glance, however long.
 */
export function CreditStrip({ steps, credit, selected, onPick, model }: { steps: Step[]; credit: Map<string, number>; selected: number; onPick: (i: number) => void; model: string }) {
  const n = steps.length;
  if (n === 0 || credit.size === 0) return null;
  const W = 1000;
  const H = 40;
  const mid = H / 2;
  const w = Math.max(W / n, 0.6);
  let pos = 0;
  let neg = 0;
  for (const c of credit.values()) c > 0 ? pos++ : c < 0 && neg++;
  return (
    <figure className="credit-strip">
      <svg
        viewBox={`0 0 ${W} ${H}`}
        preserveAspectRatio="none"
        role="img"
        aria-label={`Action credit of ${model} over ${n} steps: ${credit.size} scored actions, ${pos} positive, ${neg} negative`}
        onClick={(e) => {
          const r = (e.currentTarget as SVGSVGElement).getBoundingClientRect();
          onPick(Math.min(n - 1, Math.max(0, Math.floor(((e.clientX - r.left) / r.width) * n))));
        }}
      >
        <line x1={0} x2={W} y1={mid} y2={mid} className="base" />
        {steps.map((s, i) => {
          const c = credit.get(s.id);
          const x = (i / n) * W;
          if (c == null) return null;
          const h = Math.max(1, Math.abs(c) * (mid - 2));
          return <rect key={s.id} x={x} width={w} y={c >= 0 ? mid - h : mid} height={h} className={c >= 0 ? "pos" : "neg"} />;
        })}
        <rect x={(selected / n) * W} width={Math.max(w, 2)} y={0} height={H} className="sel" />
      </svg>
      <figcaption className="muted small-text">
        Action credit ({model}): up is better than the model's reference, down worse. Click to open a step.
      </figcaption>
    </figure>
  );
}
