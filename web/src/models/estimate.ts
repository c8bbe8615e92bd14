import type { Schemas, TraceSummary } from "../api/client";

export type BaseModel = Schemas["BaseModel"];
export type BaseModelList = Schemas["BaseModelList"];

/**
 * How many pairs a training run will see, roughly, before the dataset is
 * built: half of the selected traces' steps are agent actions, each with a
 * positive or negative credit about half the time, and every chosen one is
 * paired with every rejected one; traces pair the same way. Capped at
 * max_pairs as the server caps it. An estimate for the dialog only.
 */
export function estimatePairs(steps: number, traces: number, maxPairs: number): number {
  const actions = Math.floor(steps / 2);
  const half = (n: number) => Math.floor(n / 2) * Math.ceil(n / 2);
  return Math.max(0, Math.min(maxPairs, half(actions) + half(traces)));
}

/** A duration as the dialog says it: ≈ 40 s, ≈ 4 min, ≈ 2.5 h. */
export function formatDuration(seconds: number): string {
  if (seconds < 60) return `${Math.max(1, Math.round(seconds))} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  const h = seconds / 3600;
  return `${h < 10 ? h.toFixed(1) : Math.round(h)} h`;
}

/**
 * The estimate line: pairs × epochs × the base's seconds per pair on the
 * workers' best device (GET /base-models, whose constants live in
 * domain/rewardmodels/estimate.go). Steps come from the trace summaries the
 * list already loaded; traces it has not loaded count as unknown.
 */
export function estimateLine(
  base: BaseModel | undefined,
  list: BaseModelList | undefined,
  summaries: TraceSummary[],
  traceCount: number,
  epochs: number,
  maxPairs: number,
): string | null {
  if (!list) return null;
  const c = list.compute;
  if (c.workers === 0) return "No worker is connected: training starts when one reports.";
  if (!base || base.seconds_per_pair == null) return null;
  const steps = summaries.reduce((n, t) => n + t.step_count, 0);
  const pairs = estimatePairs(steps, traceCount, maxPairs);
  if (pairs < 2) return `Too few steps for an estimate (${summaries.length} of ${traceCount} traces known).`;
  const where = c.device === "gpu" ? "a GPU worker" : `1 CPU worker`;
  const of = c.workers > 1 ? ` (${c.workers} workers connected${c.gpu_workers ? `, ${c.gpu_workers} with a GPU` : ""})` : "";
  return `≈ ${formatDuration(pairs * epochs * base.seconds_per_pair)} on ${where}${of}: about ${pairs} pairs × ${epochs} epoch${epochs === 1 ? "" : "s"}.`;
}

/** "5.0M params · 20 MB" for a base whose size a worker read. */
export function baseSize(b: BaseModel): string {
  const parts: string[] = [];
  if (b.params != null) {
    const p = b.params;
    parts.push(`${p >= 1e9 ? (p / 1e9).toFixed(1) + "B" : p >= 1e6 ? (p / 1e6).toFixed(1) + "M" : Math.max(1, Math.round(p / 1e3)) + "k"} params`);
  }
  if (b.size_bytes != null) parts.push(`${b.size_bytes >= 1e9 ? (b.size_bytes / 1e9).toFixed(1) + " GB" : Math.max(1, Math.round(b.size_bytes / 1e6)) + " MB"}`);
  return parts.join(" · ");
}
