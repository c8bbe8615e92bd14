import { useState } from "react";
import type { Step } from "../api/client";
import { CompletionLayer, describeCompletion, type TaskCurve } from "./CompletionCurve";

/**
 * The top minimap: every step of the trace on one strip, each scored action
 * a bar, up for positive credit, down for negative, on the left axis: ±1 by
 * default (so traces compare) or Fit (the largest |credit| of this trace
 * fills the height; an all-zero trace keeps ±1). Unscored steps and zero
 * credit are baseline ticks. When the completion estimate has curves they
 * are overlaid in faint teal on a fixed 0–100% right axis, apart from
 * credit's scale (spec 001). Hovering previews the step on one line
 * (number, time, excerpt, credit or pending, and the curve's value there);
 * clicking opens it. It is the whole trace at a glance, however long, and
 * navigable before any grade arrives.
 */
export function CreditStrip({
  steps,
  credit,
  selected,
  onPick,
  model,
  pending,
  curves = [],
  completionNote,
}: {
  steps: Step[];
  credit: Map<string, number>;
  selected: number;
  onPick: (i: number) => void;
  model: string;
  pending?: boolean;
  curves?: TaskCurve[];
  completionNote?: string;
}) {
  const [fit, setFit] = useState(false);
  const [hover, setHover] = useState<number | null>(null);
  const n = steps.length;
  if (n === 0 || (credit.size === 0 && !pending && curves.length === 0 && !completionNote)) return null;
  const W = 1000;
  const H = 40;
  const mid = H / 2;
  const w = Math.max(W / n, 0.6);
  let pos = 0;
  let neg = 0;
  let maxAbs = 0;
  for (const c of credit.values()) {
    if (c > 0) pos++;
    else if (c < 0) neg++;
    maxAbs = Math.max(maxAbs, Math.abs(c));
  }
  const scale = fit && maxAbs > 0 ? 1 / maxAbs : 1;
  const limit = fit && maxAbs > 0 ? maxAbs : 1;
  const at = (clientX: number, el: Element) => {
    const r = el.getBoundingClientRect();
    return Math.min(n - 1, Math.max(0, Math.floor(((clientX - r.left) / r.width) * n)));
  };
  const hs = hover != null ? steps[hover] : null;
  const hc = hs ? credit.get(hs.id) : undefined;
  const ts = hs && hs.metadata && typeof (hs.metadata as Record<string, unknown>).timestamp === "string" ? new Date((hs.metadata as Record<string, string>).timestamp).toLocaleTimeString() : null;
  const hcurve = hover != null && curves.length > 0 ? describeCompletion(curves, hover) : null;
  const creditLabel = model ? `Action credit of ${model} over ${n} steps: ${credit.size} scored actions, ${pos} positive, ${neg} negative` : `Action credit over ${n} steps: no model has scored this trace`;
  return (
    <figure className={"credit-strip minimap" + (curves.length > 0 ? " completion-curve" : "")}>
      <div className="row small-text">
        <span className="muted">{model ? `Action credit (${model})` : "Action credit: not scored yet"}</span>
        {curves.length > 0 && <span className="muted curve-key">— estimated completion of each request (a model&apos;s estimate, not a measured ratio)</span>}
        <span className="spacer" />
        <div role="group" aria-label="Credit scale" className="row">
          <button type="button" className="ghost" aria-pressed={!fit} onClick={() => setFit(false)}>
            ±1
          </button>
          <button type="button" className="ghost" aria-pressed={fit} onClick={() => setFit(true)}>
            Fit
          </button>
        </div>
      </div>
      <div className="minimap-row">
        <div className="axis left small-text muted" aria-hidden="true">
          <span>+{fmtLimit(limit)}</span>
          <span>−{fmtLimit(limit)}</span>
        </div>
        <div
          className="plot"
          // The minimap works from the keyboard: arrows move one step, Page
          // Up/Down a tenth of the trace, Home/End to the ends. A group, not
          // a slider, so the credit and completion images inside keep
          // their names.
          role="group"
          tabIndex={0}
          aria-label={`Minimap at step ${selected + 1} of ${n}: arrow keys move between steps`}
          onKeyDown={(e) => {
            const big = Math.max(1, Math.round(n / 10));
            const to = { ArrowRight: selected + 1, ArrowUp: selected + 1, ArrowLeft: selected - 1, ArrowDown: selected - 1, PageDown: selected + big, PageUp: selected - big, Home: 0, End: n - 1 }[e.key];
            if (to == null) return;
            e.preventDefault();
            onPick(Math.min(n - 1, Math.max(0, to)));
          }}
          onClick={(e) => onPick(at(e.clientX, e.currentTarget))}
          onMouseMove={(e) => setHover(at(e.clientX, e.currentTarget))}
          onMouseLeave={() => setHover(null)}
        >
          <svg viewBox={`0 0 ${W} ${H}`} preserveAspectRatio="none" role="img" aria-label={creditLabel}>
            <line x1={0} x2={W} y1={mid} y2={mid} className="base" />
            {steps.map((s, i) => {
              const c = credit.get(s.id);
              const x = (i / n) * W;
              if (c == null || c === 0) return n <= 400 ? <rect key={s.id} x={x} width={Math.max(w * 0.4, 0.5)} y={mid - 2} height={4} className={c === 0 ? "zero" : "tick"} /> : null;
              const h = Math.max(1, Math.min(1, Math.abs(c) * scale) * (mid - 2));
              return <rect key={s.id} x={x} width={w} y={c >= 0 ? mid - h : mid} height={h} className={c >= 0 ? "pos" : "neg"} />;
            })}
            {hover != null && <rect x={(hover / n) * W} width={Math.max(w, 2)} y={0} height={H} className="hov" />}
            <rect x={(selected / n) * W} width={Math.max(w, 2)} y={0} height={H} className="sel" />
          </svg>
          {curves.length > 0 && <CompletionLayer curves={curves} n={n} W={W} H={H} />}
        </div>
        <div className={"axis right small-text muted" + (curves.length > 0 ? "" : " hidden")} aria-hidden="true">
          <span>100%</span>
          <span>0%</span>
        </div>
      </div>
      <p className="strip-preview small-text" aria-live="polite">
        {hs ? (
          <>
            <strong>Step {hover! + 1}</strong>
            {ts && <> · {ts}</>} · {hs.role}
            {hs.tool_name && <> {hs.tool_name}</>}: <span className="excerpt">{(hs.content || JSON.stringify(hs.tool_input ?? "")).slice(0, 90)}</span> ·{" "}
            {hc != null ? `credit ${(hc >= 0 ? "+" : "") + hc.toFixed(2)}` : pending && hs.role === "assistant" ? "pending" : "not scored"}
            {hcurve && <span className="curve-value"> · completion {hcurve}</span>}
          </>
        ) : (
          <span className="muted">Hover for a step, click to open it. Up is better than the model&apos;s reference, down worse.</span>
        )}
      </p>
      {completionNote && <p className="muted small-text">{completionNote}</p>}
    </figure>
  );
}

/** A credit limit as the axis shows it: 1 for ±1, two decimals for Fit. */
function fmtLimit(v: number): string {
  return v === 1 ? "1" : v.toFixed(2);
}
