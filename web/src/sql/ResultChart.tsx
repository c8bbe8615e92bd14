import type { QueryResult } from "../api/client";

export type ChartSpec = { label: number; values: number[] };

/** A result charts when it has a label column (text) and at least one numeric column. */
export function chartable(r: QueryResult): ChartSpec | null {
  if (r.rows.length === 0) return null;
  const rows = r.rows as unknown[][];
  const isNum = (j: number) => rows.every((row) => row[j] === null || typeof row[j] === "number");
  const label = r.columns.findIndex((_, j) => rows.some((row) => typeof row[j] === "string"));
  if (label < 0) return null;
  const values = r.columns.map((_, j) => j).filter((j) => j !== label && isNum(j) && rows.some((row) => typeof row[j] === "number"));
  return values.length ? { label, values } : null;
}

const COLORS = ["var(--accent)", "var(--pos)", "var(--warn)", "var(--neg)"];

/** Bars (grouped) or lines of the numeric columns over the label column; up to 50 rows. */
export function ResultChart({ result, kind, spec }: { result: QueryResult; kind: "bar" | "line"; spec: ChartSpec }) {
  const rows = (result.rows as unknown[][]).slice(0, 50);
  const W = 800;
  const H = 220;
  const pad = 30;
  const vals = rows.flatMap((r) => spec.values.map((j) => (typeof r[j] === "number" ? (r[j] as number) : 0)));
  const max = Math.max(0, ...vals);
  const min = Math.min(0, ...vals);
  const span = max - min || 1;
  const y = (v: number) => pad + ((max - v) / span) * (H - 2 * pad);
  const band = (W - 2 * pad) / rows.length;
  const bw = (band * 0.8) / spec.values.length;
  return (
    <figure className="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${kind === "bar" ? "Bar" : "Line"} chart of ${spec.values.map((j) => result.columns[j]).join(", ")} by ${result.columns[spec.label]}`}>
        <line x1={pad} x2={W - pad} y1={y(0)} y2={y(0)} className="axis" />
        {spec.values.map((j, k) =>
          kind === "bar" ? (
            rows.map((r, i) => {
              const v = typeof r[j] === "number" ? (r[j] as number) : 0;
              return (
                <rect key={`${j}-${i}`} x={pad + i * band + band * 0.1 + k * bw} width={bw} y={Math.min(y(v), y(0))} height={Math.abs(y(v) - y(0))} fill={COLORS[k % COLORS.length]}>
                  <title>{`${String(r[spec.label])}: ${result.columns[j]} ${v}`}</title>
                </rect>
              );
            })
          ) : (
            <path
              key={j}
              fill="none"
              stroke={COLORS[k % COLORS.length]}
              strokeWidth={2}
              d={rows.map((r, i) => `${i ? "L" : "M"}${(pad + i * band + band / 2).toFixed(1)},${y(typeof r[j] === "number" ? (r[j] as number) : 0).toFixed(1)}`).join(" ")}
            />
          ),
        )}
        {rows.length <= 20 &&
          rows.map((r, i) => (
            <text key={i} x={pad + i * band + band / 2} y={H - 8} className="tick" textAnchor="middle">
              {String(r[spec.label]).slice(0, 14)}
            </text>
          ))}
        <text x={2} y={pad} className="tick">{max}</text>
      </svg>
      <figcaption className="muted small-text">
        {spec.values.map((j, k) => (
          <span key={j} style={{ color: COLORS[k % COLORS.length] }}>
            ■ {result.columns[j]}{" "}
          </span>
        ))}
        by {result.columns[spec.label]}
      </figcaption>
    </figure>
  );
}
