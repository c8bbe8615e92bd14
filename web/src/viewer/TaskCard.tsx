import type { TraceDetail } from "../api/client";

type Task = NonNullable<TraceDetail["step_scores"]>["tasks"][number];
type Section = NonNullable<TraceDetail["sections"]>[number];

/** The task score card shown before a scored task's first step (step_scores.tasks). */
export function TaskCard({ task, policy, section }: { task: Task; policy: string; section?: Section }) {
  return (
    <aside className="task-card" aria-label={`Task ${task.task_id} score`}>
      <strong>{section?.title || `Task ${task.task_id}`}</strong>
      <span className={"chip " + (task.score > 0 ? "pos" : task.score < 0 ? "neg" : "")}>task score {(task.score >= 0 ? "+" : "") + task.score.toFixed(2)}</span>
      <span className="muted small-text">
        answer {task.answer_points != null ? (task.answer_points >= 0 ? "+" : "") + task.answer_points.toFixed(2) : "none"} · work {task.work.toFixed(2)}
        {task.capped ? " · capped" : ""} · {policy}
      </span>
    </aside>
  );
}

/** Breadcrumbs of the sections holding a step: task › subtask › phase. */
export function sectionPath(sections: Section[] | null | undefined, index: number): Section[] {
  const out: Section[] = [];
  let level = sections ?? [];
  for (;;) {
    const s = level.find((x) => x.first_step_index <= index && index <= x.last_step_index);
    if (!s) return out;
    out.push(s);
    level = s.children ?? [];
  }
}
