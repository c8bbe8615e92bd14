import { useCallback, useLayoutEffect, useMemo, useState } from "react";
import { useSearchParams } from "react-router";
import { useQuery } from "@tanstack/react-query";
import { api, type RewardModel, type Schemas, type TraceDetail } from "../api/client";
import { useAuth } from "../auth/auth";
import { myRating, rate, useAnnotate } from "../viewer/useAnnotate";
import { StepCard } from "../viewer/StepCard";
import { Composer, UndoDelete } from "../viewer/Annotations";
import { isHarness, isThinking } from "../viewer/agentView";
import { ShortcutsDialog, typingIn } from "../viewer/Shortcuts";
import { TraceLink } from "../traces/TraceLink";
import { traceQuery } from "../traces/traceQuery";
import { CriteriaForm, criteriaHint, useCriteria, useCriteriaKeys, type Row } from "../criteria/CriteriaForm";
import { GuidelinesPanel } from "../criteria/Guidelines";
import { myValue, targetOf } from "../criteria/criteria";

type ReviewQueue = Schemas["ReviewQueue"];
type Item = Schemas["ReviewItem"];

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const REVIEW_KEYS: [string, string][] = [
  ["+ / −", "rate this item up / down and go to the next"],
  ["c", "comment on this item (Ctrl+Enter saves; you stay on it)"],
  ["1–9, 0", "pick a choice of the first criterion beside the item (again removes it)"],
  ["letter, digit", "pick a choice of the criterion with that letter"],
  ["→ or s", "skip to the next item (remembered: it comes last next time); with a criterion value set, the item is judged and leaves"],
  ["←", "back to the previous item"],
  ["?", "show these shortcuts"],
];

const itemKey = (it: Item) => it.trace_id + "/" + (it.step_id ?? "");

// Skipped items are remembered per reviewer in this browser and come last
// the next time the queue is built: a skip asks nothing, and the reviewer
// is not asked the same thing first again.
const skipStore = (user: string) => `critic.review.skipped.${user}`;
function loadSkipped(user: string): Set<string> {
  try {
    return new Set(JSON.parse(localStorage.getItem(skipStore(user)) ?? "[]") as string[]);
  } catch {
    return new Set();
  }
}
function saveSkipped(user: string, s: Set<string>) {
  try {
    localStorage.setItem(skipStore(user), JSON.stringify([...s].slice(-2000)));
  } catch {
    /* storage full or disabled: skips are not remembered */
  }
}

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
  const { canWrite, me, myId, isAdmin } = useAuth();
  const [params, setParams] = useSearchParams();
  const model = params.get("model") ?? "";
  // An admin may look at another member's queue (GET /review-queue?member=).
  const member = isAdmin ? (params.get("member") ?? "") : "";
  const asked = Math.max(0, Number(params.get("i") ?? "0") || 0);
  const [help, setHelp] = useState(false);
  // A position kept in the URL from an earlier queue can be past the end of
  // the queue built now (judged items left it): start at its beginning.
  const [moved, setMoved] = useState(false);
  const setPos = (i: number) => {
    setMoved(true);
    const n = new URLSearchParams(params);
    n.set("i", String(i));
    setParams(n, { replace: true });
  };
  const models = useQuery({ queryKey: ["reward-models"], queryFn: () => api<RewardModel[]>("/reward-models") });
  const ready = (models.data ?? []).filter((m) => m.status === "succeeded");

  const chosen = ready.find((m) => m.id === model);
  const members = useQuery({ queryKey: ["members"], queryFn: () => api<Schemas["MemberList"]>("/members"), enabled: isAdmin });
  const others = (members.data?.members ?? []).filter((m) => !m.removed && m.id !== myId && m.role !== "viewer");
  const whose = others.find((m) => m.id === member);
  const queue = useQuery({
    queryKey: ["review-queue", model, member],
    staleTime: Infinity,
    queryFn: () =>
      api<ReviewQueue>(
        `/review-queue?limit=500${model && UUID.test(model) ? `&reward_model_id=${model}` : ""}${member ? `&member=${encodeURIComponent(member)}` : ""}`,
      ),
  });
  // The queue as fetched, skipped items last; what the reviewer judges here
  // (rated) counts as done and the progress says how many are left.
  const [skipped] = useState(() => (me ? loadSkipped(myId) : new Set<string>()));
  const items = useMemo(() => {
    const all = queue.data?.items ?? [];
    return [...all.filter((it) => !skipped.has(itemKey(it))), ...all.filter((it) => skipped.has(itemKey(it)))];
  }, [queue.data, skipped]);
  const [judged, setJudged] = useState<Set<string>>(new Set());
  const pos = !moved && asked >= items.length ? 0 : asked;
  const item = items[pos];
  const left = items.filter((it) => !judged.has(itemKey(it))).length;
  const next = useCallback(
    (from: number, done: Set<string>) => {
      let i = from + 1;
      while (i < items.length && done.has(itemKey(items[i]))) i++;
      return i;
    },
    [items],
  );
  const onJudged = (it: Item) => {
    const d = new Set(judged).add(itemKey(it));
    setJudged(d);
    if (me && skipped.delete(itemKey(it))) saveSkipped(myId, skipped);
    setPos(next(pos, d));
  };
  const onSkip = (it: Item) => {
    if (me) {
      skipped.add(itemKey(it));
      saveSkipped(myId, skipped);
    }
    setPos(next(pos, judged));
  };

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
              if (member) n.set("member", member);
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
        {isAdmin && others.length > 0 && (
          <label className="field inline">
            <span>Queue of</span>
            <select
              aria-label="Queue of"
              value={member}
              onChange={(e) => {
                const n = new URLSearchParams();
                if (model) n.set("model", model);
                if (e.target.value) n.set("member", e.target.value);
                setParams(n);
              }}
            >
              <option value="">You</option>
              {others.map((m) => (
                <option key={m.id} value={m.id}>
                  {m.name}
                </option>
              ))}
            </select>
          </label>
        )}
        <span className="spacer" />
        {items.length > 0 && (
          <span className="progress" aria-live="polite">
            {left} left
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
      {whose && <p className="muted">{whose.name}&apos;s queue: what it still offers them under the review overlap. What you rate here is your own rating.</p>}
      {!canWrite && <p className="muted">This key is read-only (or your role is viewer): you can look through the queue but not rate.</p>}
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
          <p>{left === 0 ? `Done: you judged all ${items.length} items.` : `You went through the queue; ${left} skipped item${left === 1 ? "" : "s"} left.`}</p>
          <button type="button" onClick={() => setPos(0)}>
            Start over
          </button>
        </div>
      ) : (
        <ReviewItem
          key={itemKey(item)}
          item={item}
          canWrite={canWrite}
          onRated={() => onJudged(item)}
          onNext={() => onSkip(item)}
          onPrev={() => setPos(Math.max(0, pos - 1))}
          help={help}
          setHelp={setHelp}
        />
      )}
      {help && <ShortcutsDialog extra={REVIEW_KEYS} onClose={() => setHelp(false)} />}
    </main>
  );
}

// A whole trace longer than this shows its first and last steps, the rest
// behind one button that opens them in place.
const HEAD_STEPS = 12;
const TAIL_STEPS = 36;
// An action is shown after this many steps of what led to it at most.
const CONTEXT_STEPS = 8;

function ReviewItem({
  item,
  canWrite,
  onRated,
  onNext,
  onPrev,
  help,
  setHelp,
}: {
  item: Item;
  canWrite: boolean;
  onRated: () => void;
  onNext: () => void;
  onPrev: () => void;
  help: boolean;
  setHelp: (v: boolean) => void;
}) {
  const { me, myId } = useAuth();
  const trace = useQuery(traceQuery(item.trace_id));
  const ann = useAnnotate(item.trace_id);
  const d = trace.data;
  const [expanded, setExpanded] = useState<Set<string>>(new Set());
  const [composing, setComposing] = useState<string | null | undefined>(undefined); // step id, null = trace
  const [showAll, setShowAll] = useState(false);
  // What the reviewer needs to judge the item: a whole trace is the whole
  // conversation (a long one with its middle behind a button); an action is
  // what led to it (from the last thing the user said), the action, and
  // its result.
  const view = useMemo(() => {
    const none: Steps = [];
    if (!d) return { before: none, hidden: 0, after: none };
    const steps = d.steps;
    if (item.step_id) {
      const i = steps.findIndex((s) => s.id === item.step_id);
      if (i < 0) return { before: none, hidden: 0, after: none };
      let from = i - 1;
      while (from > 0 && i - from < CONTEXT_STEPS && !(steps[from].role === "user" && !isHarness(steps[from]))) from--;
      let to = i + 1;
      const target = steps[i];
      while (to < steps.length && (steps[to].role === "tool" || isThinking(steps[to])) && (to === i + 1 || steps[to].role === "tool")) {
        if (steps[to].role === "tool" && target.tool_call_id && steps[to].tool_call_id && steps[to].tool_call_id !== target.tool_call_id) break;
        to++;
      }
      return { before: none, hidden: 0, after: steps.slice(Math.max(0, from), to) };
    }
    if (showAll || steps.length <= HEAD_STEPS + TAIL_STEPS + 4) return { before: none, hidden: 0, after: steps };
    return { before: steps.slice(0, HEAD_STEPS), hidden: steps.length - HEAD_STEPS - TAIL_STEPS, after: steps.slice(steps.length - TAIL_STEPS) };
  }, [d, item.step_id, showAll]);
  const byStep = useMemo(() => {
    const m = new Map<string, TraceDetail["annotations"]>();
    for (const a of d?.annotations ?? []) if (a.step_id) m.set(a.step_id, [...(m.get(a.step_id) ?? []), a]);
    return m;
  }, [d]);
  const current = d && me ? myRating(d.annotations, myId, item.step_id) : undefined;
  const doRate = (v: 1 | -1) => {
    if (!d || !canWrite || !me) return;
    const cur = myRating(d.annotations, myId, item.step_id);
    rate(ann, d.annotations, myId, item.step_id, v);
    if (!(cur && cur.rating === v)) onRated(); // pressing the same rating again takes it back and stays
  };
  const toggleExpand = useCallback((id: string) => {
    setExpanded((s) => {
      const n = new Set(s);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });
  }, []);
  const compose = useCallback((id: string | null) => setComposing(id === null ? undefined : id), []);
  // The criteria that apply to the item (the trace, or its action), beside
  // it; an item the reviewer gave a value is judged when they move on.
  const crit = useCriteria();
  const rows = useMemo<Row[]>(() => {
    if (!d) return [];
    if (!item.step_id) return crit.forTarget("trace").map((c) => ({ criterion: c, stepId: null, annotations: d.annotations.filter((a) => !a.step_id) }));
    const s = d.steps.find((x) => x.id === item.step_id);
    return s ? crit.forTarget(targetOf(s)).map((c) => ({ criterion: c, stepId: s.id, stepNumber: s.index + 1, annotations: byStep.get(s.id) ?? NONE })) : [];
    // eslint-disable-next-line react-hooks/exhaustive-deps -- forTarget follows crit.criteria
  }, [d, item.step_id, crit.criteria, byStep]);
  const armed = useCriteriaKeys(rows, crit.letters, myId, ann, canWrite && !help);
  const valued = !!me && rows.some((r) => myValue(r.annotations, myId, r.criterion.criterion_id, r.stepId));
  const onMove = valued ? onRated : onNext;
  // A layout effect: the item's keys work from the frame it is shown in. With a plain
  // effect the new item is painted before its listener is added (the previous item's
  // is already gone), and a reviewer's quick "+" in between is lost.
  useLayoutEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (help || e.ctrlKey || e.metaKey || e.altKey || typingIn(e)) return;
      if (e.key === "+" || e.key === "=") doRate(1);
      else if (e.key === "-" || e.key === "_") doRate(-1);
      else if (e.key === "c" && canWrite) setComposing(item.step_id ?? null);
      else if (e.key === "ArrowRight" || e.key === "s") onMove();
      else if (e.key === "ArrowLeft") onPrev();
      else if (e.key === "?") setHelp(true);
      else if (e.key === "Escape" && composing !== undefined) setComposing(undefined);
      else return;
      e.preventDefault();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  });
  if (trace.isPending) return <p className="state muted">Loading…</p>;
  if (trace.isError) return <p role="alert" className="state error">{(trace.error as Error).message}</p>;
  const target = item.step_id ? d!.steps.find((s) => s.id === item.step_id) : null;
  const card = (s: Steps[number]) => (
    <StepCard
      key={s.id}
      step={s}
      annotations={byStep.get(s.id) ?? NONE}
      me={myId}
      canWrite={false}
      expanded={expanded.has(s.id)}
      selected={s.id === item.step_id}
      composing={composing === s.id}
      ann={ann}
      onToggleExpand={toggleExpand}
      onSelect={() => undefined}
      onCompose={compose}
    />
  );
  return (
    <div className="review-layout">
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
      <div className="review-steps">
        {view.before.map(card)}
        {view.hidden > 0 && (
          <button type="button" className="ghost hidden-steps" onClick={() => setShowAll(true)}>
            Show {view.hidden} more steps
          </button>
        )}
        {view.after.map(card)}
      </div>
      {!item.step_id && composing === null && (
        <Composer busy={ann.add.isPending} onCancel={() => setComposing(undefined)} onSave={(text) => ann.add.mutate({ comment: text }, { onSuccess: () => setComposing(undefined) })} />
      )}
      {ann.error && (
        <p role="alert" className="error">
          {ann.error.message}
        </p>
      )}
      <footer className="row review-actions">
        {canWrite && (
          <>
            <button type="button" className={"rate up" + (current?.rating === 1 ? " on" : "")} aria-pressed={current?.rating === 1} onClick={() => doRate(1)}>
              <span aria-hidden="true">▲</span> Rate up
            </button>
            <button type="button" className={"rate down" + (current?.rating === -1 ? " on" : "")} aria-pressed={current?.rating === -1} onClick={() => doRate(-1)}>
              <span aria-hidden="true">▼</span> Rate down
            </button>
            <button type="button" onClick={() => setComposing(item.step_id ?? null)}>
              Comment
            </button>
          </>
        )}
        <button type="button" onClick={onPrev}>
          Previous
        </button>
        <button type="button" onClick={onMove}>
          {valued ? "Next" : "Skip"}
        </button>
        <span className="muted small-text">+ / − rate and advance · c comment · → skip · ? shortcuts</span>
      </footer>
      <UndoDelete ann={ann} />
    </article>
      <div className="side-panel">
        <GuidelinesPanel />
        <CriteriaForm
          rows={rows}
          letters={crit.letters}
          me={myId}
          ann={ann}
          canWrite={canWrite}
          armed={armed}
          digits={rows[0]?.criterion.criterion_id ?? null}
          title={target ? `Criteria, step ${target.index + 1}` : "Criteria, this trace"}
        />
        {rows.length > 0 && <p className="muted small-text criteria-hint">{criteriaHint(rows, armed)}</p>}
      </div>
    </div>
  );
}

type Steps = TraceDetail["steps"];
const NONE: TraceDetail["annotations"] = [];
