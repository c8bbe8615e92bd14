import { useLayoutEffect, useMemo, useState } from "react";
import { useSearchParams } from "react-router";
import { useQuery } from "@tanstack/react-query";
import { api, type RewardModel, type Schemas } from "../api/client";
import { useAuth } from "../auth/auth";
import { canRender, renderMarkdown } from "../viewer/markdown";
import { myRating, rate, useAnnotate } from "../viewer/useAnnotate";
import { ShortcutsDialog, typingIn } from "../viewer/Shortcuts";
import { TraceLink } from "../traces/TraceLink";
import { traceQuery } from "../traces/traceQuery";

type ReviewQueue = Schemas["ReviewQueue"];
type Item = Schemas["ReviewItem"];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const REVIEW_KEYS: [string, string][] = [
  ["+ / −", "rate this item up / down and go to the next"],
  ["→ or s", "skip to the next item"],
  ["←", "back to the previous item"],
  ["?", "show these shortcuts"],
];

/**
 * The review queue (GET /review-queue): what most needs a human, one item
 * at a time. With a reward model, the whole traces nobody rated by
 * calibrated score sigmoid((score − mean) / std) nearest 0.5 and the unrated
 * actions by credit nearest zero, interleaved on one uncertainty scale;
 * without one, unannotated traces first. The list is fetched once per model
 * (rating an item does not reshuffle it under the reviewer). The model and
 * the position live in the URL.
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

  const chosen = ready.find((m) => m.id === model);
  const queue = useQuery({
    queryKey: ["review-queue", model],
    staleTime: Infinity,
    queryFn: () => api<ReviewQueue>(`/review-queue?limit=500${model && UUID.test(model) ? `&reward_model_id=${model}` : ""}`),
  });
  const items = queue.data?.items ?? [];
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
                {m.name}: what it is least sure of
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
        <p className="muted small-text ranking-note">
          Ranked by the model&apos;s uncertainty: whole traces nobody rated by calibrated score nearest 0.5, actions nobody rated by credit nearest zero, most
          uncertain first. Calibrated score = sigmoid((score − mean) / std)
          {chosen?.reward_stats && (
            <>
              {" "}
              with mean {chosen.reward_stats.mean.toFixed(3)} and std {chosen.reward_stats.std.toFixed(3)} of its {chosen.reward_stats.count} training rewards
            </>
          )}
          ; a trace at calibrated c and an action at credit x are equally uncertain when |2c − 1| = |x|.
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
        <p className="state">{model ? "Everything this model scored has a rating. Nothing to review." : "No traces yet: import some on the Traces page."}</p>
      ) : !item ? (
        <div className="state">
          <p>Done: you went through all {items.length} items.</p>
          <button type="button" onClick={() => setPos(0)}>
            Start over
          </button>
        </div>
      ) : (
        <ReviewItem key={item.trace_id + (item.step_id ?? "")} item={item} canWrite={canWrite} onNext={() => setPos(pos + 1)} onPrev={() => setPos(Math.max(0, pos - 1))} help={help} setHelp={setHelp} />
      )}
      {help && <ShortcutsDialog extra={REVIEW_KEYS} onClose={() => setHelp(false)} />}
    </main>
  );
}

function ReviewItem({ item, canWrite, onNext, onPrev, help, setHelp }: { item: Item; canWrite: boolean; onNext: () => void; onPrev: () => void; help: boolean; setHelp: (v: boolean) => void }) {
  const { me } = useAuth();
  const trace = useQuery(traceQuery(item.trace_id));
  const ann = useAnnotate(item.trace_id);
  const d = trace.data;
  const shown = useMemo(() => {
    if (!d) return [];
    if (item.step_id) {
      const i = d.steps.findIndex((s) => s.id === item.step_id);
      // The action with what it answered: the nearest earlier user message.
      let u = i - 1;
      while (u >= 0 && d.steps[u].role !== "user") u--;
      return [...(u >= 0 ? [d.steps[u]] : []), ...(i >= 0 ? [d.steps[i]] : [])];
    }
    const firstUser = d.steps.find((s) => s.role === "user");
    const lastAssistant = [...d.steps].reverse().find((s) => s.role === "assistant");
    return [firstUser, lastAssistant].filter((s): s is NonNullable<typeof s> => !!s);
  }, [d, item.step_id]);
  const current = d && me ? myRating(d.annotations, me.user_id, item.step_id) : undefined;
  const doRate = (v: 1 | -1) => {
    if (!d || !canWrite || !me) return;
    rate(ann, d.annotations, me.user_id, item.step_id, v);
    onNext();
  };
  // A layout effect: the item's keys work from the frame it is shown in. With a plain
  // effect the new item is painted before its listener is added (the previous item's
  // is already gone), and a reviewer's quick "+" in between is lost.
  useLayoutEffect(() => {
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
  const target = item.step_id ? d!.steps.find((s) => s.id === item.step_id) : null;
  return (
    <article className="review-card" aria-label="Review item">
      <header>
        <h2>
          <TraceLink id={item.trace_id} step={target ? target.index + 1 : undefined}>
            {d!.title || "(untitled)"}
          </TraceLink>
        </h2>
        <p className="muted">
          {target ? `Step ${target.index + 1} (${target.role}${target.tool_name ? " · " + target.tool_name : ""})` : `Whole trace · ${d!.step_count} steps`}
          {item.calibrated != null && (
            <>
              {" "}
              · calibrated score {item.calibrated.toFixed(3)} (raw {(item.score! >= 0 ? "+" : "") + item.score!.toFixed(3)})
            </>
          )}
          {item.credit != null && <> · credit {(item.credit >= 0 ? "+" : "") + item.credit.toFixed(2)}</>}
          {item.annotation_count != null && <> · {item.annotation_count === 0 ? "no annotations yet" : `${item.annotation_count} annotation${item.annotation_count === 1 ? "" : "s"}`}</>}
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
