import { useEffect, useMemo, useState } from "react";
import { Link, useSearchParams } from "react-router";
import { useQuery } from "@tanstack/react-query";
import { api, type QueryResult, type RewardModel, type TraceDetail, type TraceList } from "../api/client";
import { useAuth } from "../auth/auth";
import { canRender, renderMarkdown } from "../viewer/markdown";
import { myRating, rate, useAnnotate } from "../viewer/useAnnotate";
import { ShortcutsDialog, typingIn } from "../viewer/Shortcuts";

type Item = { traceId: string; stepId: string | null; credit: number | null; title?: string };

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const REVIEW_KEYS: [string, string][] = [
  ["+ / −", "rate this item up / down and go to the next"],
  ["→ or s", "skip to the next item"],
  ["←", "back to the previous item"],
  ["?", "show these shortcuts"],
];

/**
 * The review queue: what most needs a human, one item at a time. With a
 * reward model, its scored actions whose credit is nearest zero (the model
 * is least sure) and that nobody annotated; without one, unannotated traces
 * first. The model and the position live in the URL.
 */
export function ReviewPage() {
  const { canWrite } = useAuth();
  const [params, setParams] = useSearchParams();
  const model = params.get("model") ?? "";
  const pos = Math.max(0, Number(params.get("i") ?? "0") || 0);
  const [help, setHelp] = useState(false);
  const setPos = (i: number) => {
    const n = new URLSearchParams(params);
    n.set("i", String(i));
    setParams(n, { replace: true });
  };
  const models = useQuery({ queryKey: ["reward-models"], queryFn: () => api<RewardModel[]>("/reward-models") });
  const ready = (models.data ?? []).filter((m) => m.status === "succeeded");

  const queue = useQuery({
    queryKey: ["review-queue", model],
    staleTime: Infinity,
    queryFn: async (): Promise<Item[]> => {
      if (model && UUID.test(model)) {
        const r = await api<QueryResult>("/query", {
          method: "POST",
          json: {
            sql: `SELECT a.trace_id, a.step_id, a.credit, t.title FROM action_scores a JOIN traces t ON t.id = a.trace_id
                  WHERE a.reward_model_id = '${model}'
                    AND NOT EXISTS (SELECT 1 FROM annotations n WHERE n.step_id = a.step_id AND n.rating IS NOT NULL AND NOT n.label_error)
                  ORDER BY abs(a.credit), a.trace_id, a.step_index LIMIT 500`,
          },
        });
        return r.rows.map((row) => ({ traceId: String(row[0]), stepId: String(row[1]), credit: Number(row[2]), title: String(row[3] ?? "") }));
      }
      const l = await api<TraceList>("/traces?limit=1000");
      const n = (t: TraceList["traces"][number]) => t.positive_count + t.negative_count + t.comment_count;
      return [...l.traces].sort((a, b) => n(a) - n(b)).map((t) => ({ traceId: t.id, stepId: null, credit: null, title: t.title }));
    },
  });
  const items = queue.data ?? [];
  const item = items[pos];

  return (
    <main className="main review">
      <header className="page-head">
        <h1>Review</h1>
        <label className="field inline">
          <span>Reward model</span>
          <select
            aria-label="Reward model"
            value={model}
            onChange={(e) => {
              const n = new URLSearchParams();
              if (e.target.value) n.set("model", e.target.value);
              setParams(n);
            }}
          >
            <option value="">None: unannotated traces first</option>
            {ready.map((m) => (
              <option key={m.id} value={m.id}>
                {m.name}: actions it is least sure of
              </option>
            ))}
          </select>
        </label>
        <span className="spacer" />
        {items.length > 0 && (
          <span className="progress" aria-live="polite">
            {Math.min(pos + 1, items.length)} / {items.length}
          </span>
        )}
      </header>
      {model && (
        <p className="muted small-text">
          Ranked by action credit nearest zero. Ranking whole traces by calibrated score needs the model's reward statistics, which the API does not
          expose yet.
        </p>
      )}
      {!canWrite && <p className="muted">This key is read-only: you can look through the queue but not rate.</p>}
      {queue.isError ? (
        <div role="alert" className="state error">
          Could not build the queue: {(queue.error as Error).message}{" "}
          <button type="button" onClick={() => queue.refetch()}>
            Retry
          </button>
        </div>
      ) : queue.isPending ? (
        <p className="state muted" aria-busy="true">
          Building the queue…
        </p>
      ) : items.length === 0 ? (
        <p className="state">{model ? "Every scored action of this model has a rating. Nothing to review." : "No traces yet: import some on the Traces page."}</p>
      ) : !item ? (
        <div className="state">
          <p>Done: you went through all {items.length} items.</p>
          <button type="button" onClick={() => setPos(0)}>
            Start over
          </button>
        </div>
      ) : (
        <ReviewItem key={item.traceId + (item.stepId ?? "")} item={item} canWrite={canWrite} onNext={() => setPos(pos + 1)} onPrev={() => setPos(Math.max(0, pos - 1))} help={help} setHelp={setHelp} />
      )}
      {help && <ShortcutsDialog extra={REVIEW_KEYS} onClose={() => setHelp(false)} />}
    </main>
  );
}

function ReviewItem({ item, canWrite, onNext, onPrev, help, setHelp }: { item: Item; canWrite: boolean; onNext: () => void; onPrev: () => void; help: boolean; setHelp: (v: boolean) => void }) {
  const { me } = useAuth();
  const trace = useQuery({ queryKey: ["trace", item.traceId], queryFn: () => api<TraceDetail>(`/traces/${item.traceId}`) });
  const ann = useAnnotate(item.traceId);
  const d = trace.data;
  const shown = useMemo(() => {
    if (!d) return [];
    if (item.stepId) {
      const i = d.steps.findIndex((s) => s.id === item.stepId);
      // The action with what it answered: the nearest earlier user message.
      let u = i - 1;
      while (u >= 0 && d.steps[u].role !== "user") u--;
      return [...(u >= 0 ? [d.steps[u]] : []), ...(i >= 0 ? [d.steps[i]] : [])];
    }
    const firstUser = d.steps.find((s) => s.role === "user");
    const lastAssistant = [...d.steps].reverse().find((s) => s.role === "assistant");
    return [firstUser, lastAssistant].filter((s): s is NonNullable<typeof s> => !!s);
  }, [d, item.stepId]);
  const current = d && me ? myRating(d.annotations, me.user_id, item.stepId) : undefined;
  const doRate = (v: 1 | -1) => {
    if (!d || !canWrite || !me) return;
    rate(ann, d.annotations, me.user_id, item.stepId, v);
    onNext();
  };
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (help || e.ctrlKey || e.metaKey || e.altKey || typingIn(e)) return;
      if (e.key === "+" || e.key === "=") doRate(1);
      else if (e.key === "-" || e.key === "_") doRate(-1);
      else if (e.key === "ArrowRight" || e.key === "s") onNext();
      else if (e.key === "ArrowLeft") onPrev();
      else if (e.key === "?") setHelp(true);
      else return;
      e.preventDefault();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  });
  if (trace.isPending) return <p className="state muted">Loading…</p>;
  if (trace.isError) return <p role="alert" className="state error">{(trace.error as Error).message}</p>;
  const target = item.stepId ? d!.steps.find((s) => s.id === item.stepId) : null;
  return (
    <article className="review-card" aria-label="Review item">
      <header>
        <h2>
          <Link to={`/traces/${item.traceId}${target ? `?step=${target.index + 1}` : ""}`}>{d!.title || "(untitled)"}</Link>
        </h2>
        <p className="muted">
          {target ? `Step ${target.index + 1} (${target.role}${target.tool_name ? " · " + target.tool_name : ""})` : `Whole trace · ${d!.step_count} steps`}
          {item.credit != null && <> · credit {(item.credit >= 0 ? "+" : "") + item.credit.toFixed(2)}</>}
        </p>
      </header>
      {shown.map((s) => (
        <section key={s.id} className={"step compact role-" + s.role} aria-label={`Step ${s.index + 1}`}>
          <div className="gutter" aria-hidden="true">
            {s.index + 1}
          </div>
          <div className="step-body">
            <h3>{s.role}</h3>
            {canRender(s.content) && s.content.length < 20000 ? (
              <div className="md" dangerouslySetInnerHTML={{ __html: renderMarkdown(s.content) }} />
            ) : (
              <pre className="raw">{s.content.slice(0, 20000)}</pre>
            )}
            {s.tool_input != null && <pre className="code">{JSON.stringify(s.tool_input, null, 2)}</pre>}
          </div>
        </section>
      ))}
      <footer className="row">
        {canWrite && (
          <>
            <button type="button" className={"rate up" + (current?.rating === 1 ? " on" : "")} aria-pressed={current?.rating === 1} onClick={() => doRate(1)}>
              <span aria-hidden="true">▲</span> Rate up
            </button>
            <button type="button" className={"rate down" + (current?.rating === -1 ? " on" : "")} aria-pressed={current?.rating === -1} onClick={() => doRate(-1)}>
              <span aria-hidden="true">▼</span> Rate down
            </button>
          </>
        )}
        <button type="button" onClick={onPrev}>
          Previous
        </button>
        <button type="button" onClick={onNext}>
          Skip
        </button>
        <span className="muted small-text">+ / − rate and advance · → skip · ? shortcuts</span>
      </footer>
    </article>
  );
}
