import type { RewardModel } from "../api/client";

type Training = { phase: string; step: number; total_steps: number; loss: number; tokens_per_sec: number };
type Extraction = { stage: string; targets_done: number; targets_total: number };

/** The running job's last report on one line: extraction, then training with step, loss and tokens/s. */
export function progressText(m: Pick<RewardModel, "status" | "progress">): string {
  const p = m.progress as Training | Extraction | null;
  if (m.status === "queued") return p && "stage" in p ? `extracting feedback ${p.targets_done}/${p.targets_total}` : "waiting for a worker";
  if (m.status !== "running" || !p) return "";
  if ("stage" in p) return `extracting feedback ${p.targets_done}/${p.targets_total}`;
  const parts = [p.phase];
  if (p.total_steps > 0) parts.push(`step ${p.step}/${p.total_steps}`);
  if (p.phase === "training" && p.step > 0) parts.push(`loss ${p.loss.toFixed(4)}`);
  if (p.tokens_per_sec > 0) parts.push(`${Math.round(p.tokens_per_sec)} tokens/s`);
  return parts.join(" · ");
}

/** Held-out accuracy is noise with a handful of pairs (spec 002 "Metrics"). */
export const TRUST_MIN_PAIRS = 20;

export function accuracyText(acc: number | null | undefined, n: number | undefined): string {
  if (acc == null) return "n/a (no held-out pairs)";
  return `${(acc * 100).toFixed(1)}% of ${n ?? 0} pairs`;
}
