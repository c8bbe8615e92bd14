// Shared bits of the Skills pages: the GEPA run type, how a run's status and
// scores read on one line, the SKILL.md frontmatter split, the skill download
// (it needs the bearer key, so it cannot be a plain link) and the exact
// install command for Claude Code.
import { API, getKey, type Schemas } from "../api/client";

export type GepaRun = Schemas["GepaRun"];
export type GepaRunRequest = Schemas["GepaRunRequest"];

export const DEFAULT_TASK_MODEL = "anthropic/claude-haiku-4-5";
export const DEFAULT_REFLECTION_MODEL = "anthropic/claude-sonnet-5";
export const DEFAULT_BUDGET = 40;

export const active = (r: Pick<GepaRun, "status">) => r.status === "queued" || r.status === "running";

/** A calibrated GEPA score (a mean of sigmoids, 0–1, 0.5 = the calibration mean). */
export const score = (s: number | null | undefined) => (s == null ? "—" : s.toFixed(3));

/** best − seed with its sign: what the skill bought on the same examples. */
export function gain(best: number | null | undefined, seed: number | null | undefined): string {
  if (best == null || seed == null) return "";
  const d = best - seed;
  return (d >= 0 ? "+" : "−") + Math.abs(d).toFixed(3);
}

/** The running job's last report on one line. */
export function gepaProgressText(r: Pick<GepaRun, "status" | "progress">): string {
  if (r.status === "queued") return "waiting for a worker";
  const p = r.progress;
  if (r.status !== "running" || !p) return "";
  const parts = [`iteration ${p.iteration}`, `${p.metric_calls}/${p.max_metric_calls} metric calls`];
  if (p.best_score != null) parts.push(`best so far ${score(p.best_score)}`);
  return parts.join(" · ");
}

/** Splits a rendered SKILL.md into its frontmatter fields and body (spec 001's exact rendering). */
export function splitSkill(md: string): { name?: string; description?: string; body: string } {
  const m = /^---\n([\s\S]*?)\n---\n\n?([\s\S]*)$/.exec(md);
  if (!m) return { body: md };
  const fields: Record<string, string> = {};
  for (const line of m[1].split("\n")) {
    const i = line.indexOf(":");
    if (i > 0) fields[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  return { name: fields.name, description: fields.description, body: m[2] };
}

/** The URL that serves a run's best skill as the SKILL.md attachment. */
export const skillURL = (id: string) => `${window.location.origin}${API}/gepa-runs/${id}/skill`;

/**
 * The exact commands that install the skill where Claude Code loads project
 * skills (.claude/skills/<name>/SKILL.md). curl -f so an error answer never
 * lands in SKILL.md; the key comes from CRITIC_API_KEY, never printed here.
 */
export function installCommand(id: string, name: string): string {
  return `mkdir -p .claude/skills/${name}\ncurl -fsS "${skillURL(id)}" \\\n  -H "Authorization: Bearer $CRITIC_API_KEY" \\\n  -o .claude/skills/${name}/SKILL.md`;
}

/** Downloads the best skill as SKILL.md through the API with the stored key. */
export async function downloadSkill(id: string): Promise<void> {
  const res = await fetch(`${API}/gepa-runs/${id}/skill`, { headers: { Authorization: "Bearer " + (getKey() ?? "") } });
  if (!res.ok) {
    let detail = `HTTP ${res.status}`;
    try {
      detail = ((await res.json()) as { detail?: string }).detail ?? detail;
    } catch {
      /* keep the status */
    }
    throw new Error("Could not download the skill: " + detail);
  }
  const url = URL.createObjectURL(new Blob([await res.text()], { type: "text/markdown" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = "SKILL.md";
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}
