import { Fragment, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "react";
import { Link, useParams, useSearchParams } from "react-router";
import { useQuery } from "@tanstack/react-query";
import { useVirtualizer } from "@tanstack/react-virtual";
import { ApiError, type TraceDetail } from "../api/client";
import { useAuth } from "../auth/auth";
import { formatDate, formatScore } from "../traces/format";
import { buildRows, revisionKey, rowOfStep } from "./rows";
import { StepCard } from "./StepCard";
import { AnnotationList, Composer, UndoDelete } from "./Annotations";
import { myRating, rate, useAnnotate } from "./useAnnotate";
import { Timeline } from "./Timeline";
import { CreditStrip } from "./CreditStrip";
import { ScoreActions } from "./ScoreActions";
import { Rescore } from "./Rescore";
import { ScoreAgain } from "./ScoreAgain";
import { TrainedModels } from "./TrainedModels";
import { TaskCard } from "./TaskCard";
import { SectionCrumbs } from "./SectionCrumbs";
import { SectionCards, cardPathOf } from "./SectionCards";
import { completionCurves, useCompletion } from "./CompletionCurve";
import { ShortcutsDialog, typingIn } from "./Shortcuts";
import { ConsentNoticeLine, ContributeSwitch, OPT_OUT_WARNING, type ConsentNotice } from "../traces/Contribution";
import { traceQuery } from "../traces/traceQuery";
import { isRateable } from "./agentView";
import { TraceTokens, repeatedCalls } from "./CallUsage";
import { ToolList } from "./ToolList";
import { CriteriaForm, criteriaHint, useCriteria, useCriteriaKeys, type Row } from "../criteria/CriteriaForm";
import { GuidelinesPanel } from "../criteria/Guidelines";
import { guidelinesQuery, targetOf } from "../criteria/criteria";

/**
 * The trace viewer: every message in recorded order, virtualized so a
 * 2,000-step session scrolls smoothly; the selected step is ?step=N (as
 * displayed) so a link opens it.
 */
export function TraceViewer() {
  const { id = "" } = useParams();
  const { me, myId, canWrite, may } = useAuth();
  const [params, setParams] = useSearchParams();
  // Until when a rescore's new labels or a Score again's scores are awaited (Rescore.tsx, ScoreAgain.tsx).
  const [watchUntil, setWatchUntil] = useState(0);
  const trace = useQuery({
    ...traceQuery(id),
    retry: (n, e) => n < 2 && (e as ApiError).status >= 500,
    // While a scoring run is queued or running, or a rescore's labels or scores are awaited, refresh until it ends.
    refetchInterval: (q) =>
      q.state.data?.scoring_runs.some((r) => r.status === "queued" || r.status === "running") || Date.now() < watchUntil ? 1000 : false,
  });
  const ann = useAnnotate(id);
  const [expanded, setExpanded] = useState<Set<string>>(new Set());
  const [composing, setComposing] = useState<string | null | undefined>(undefined); // step id, null = trace, undefined = none
  const [help, setHelp] = useState(false);
  const [model, setModel] = useState<string>("");
  const [consent, setConsent] = useState<ConsentNotice | null>(null);
  const [toolsOpen, setToolsOpen] = useState(false);
  const scrollRef = useRef<HTMLElement>(null);
  const listRef = useRef<HTMLDivElement>(null);

  const d = trace.data;
  const steps = useMemo(() => d?.steps ?? [], [d]);
  const rows = useMemo(() => buildRows(steps), [steps]);
  const stepRow = useMemo(() => rowOfStep(rows), [rows]);
  const stepsKey = useMemo(() => revisionKey(steps), [steps]);
  const repeated = useMemo(() => repeatedCalls(steps), [steps]);
  const byStep = useMemo(() => {
    const m = new Map<string, TraceDetail["annotations"]>();
    for (const a of d?.annotations ?? []) if (a.step_id) m.set(a.step_id, [...(m.get(a.step_id) ?? []), a]);
    return m;
  }, [d]);
  const traceAnns = useMemo(() => (d?.annotations ?? []).filter((a) => !a.step_id), [d]);
  // The shared evaluator's scores come first (the viewer's default when a
  // release scored the trace), then each personal model's.
  const models = useMemo(() => {
    const m = new Map<string, string>();
    const ev = d?.evaluator;
    if (ev && ev.action_scores.length > 0) m.set(SHARED_EVALUATOR, `Shared evaluator (release ${ev.release ?? ev.action_scores[0].release})`);
    for (const s of d?.action_scores ?? []) m.set(s.reward_model_id, s.reward_model_name);
    return [...m.entries()];
  }, [d]);
  const creditModel = model || models[0]?.[0] || "";
  const credit = useMemo(() => {
    const m = new Map<string, number>();
    if (creditModel === SHARED_EVALUATOR) {
      for (const s of d?.evaluator.action_scores ?? []) m.set(s.step_id, s.credit);
      return m;
    }
    for (const s of d?.action_scores ?? []) if (s.reward_model_id === creditModel) m.set(s.step_id, s.credit);
    return m;
  }, [d, creditModel]);

  // Task score cards go before each scored task's first step.
  const taskAt = useMemo(() => {
    const m = new Map<string, NonNullable<TraceDetail["step_scores"]>["tasks"][number]>();
    for (const tk of d?.step_scores?.tasks ?? []) m.set(tk.first_step_id, tk);
    return m;
  }, [d]);
  // The completion estimate is asked only when a section is graded (there is
  // agent work to estimate); it is overlaid on the credit minimap.
  const completion = useCompletion(id, stepsKey, !!d?.sections?.some((s) => s.graded));
  const curves = useMemo(() => completionCurves(completion.data, steps, rows, stepRow), [completion.data, steps, rows, stepRow]);
  // A missing provider is said once, in the header, not by each feature
  // that needs it (the completion curve, section titles).
  const providerNote = completion.data?.unavailable ? completion.data.unavailable_reason : undefined;
  const completionNote = completion.data?.pending && curves.length === 0 ? "Estimating completion…" : undefined;
  const taskSection = (taskId: string) => (d?.sections ?? []).find((s) => s.task_id === taskId);

  const selected = Math.min(Math.max(0, Number(params.get("step") ?? "1") - 1), Math.max(0, steps.length - 1));
  // Key presses can arrive faster than React re-renders: the latest selection
  // is kept here too, so two quick j presses move two steps. A render of an
  // older step while a newer one is still on its way to the URL must not
  // pull the selection back (that lost a press): only a URL change this
  // page did not ask for, or the arrival of the one it asked for, syncs it.
  const selRef = useRef(selected);
  const requested = useRef<number | null>(null);
  const inURL = useRef(selected);
  useEffect(() => {
    inURL.current = selected;
    if (requested.current === null || requested.current === selected) {
      selRef.current = selected;
      requested.current = null;
    }
  }, [selected]);
  const select = useCallback(
    (index: number) => {
      selRef.current = index;
      requested.current = index === inURL.current ? null : index; // no URL change is coming for the current step
      setParams(
        (prev) => {
          const next = new URLSearchParams(prev);
          next.set("step", String(index + 1));
          return next;
        },
        { replace: true },
      );
    },
    [setParams],
  );

  // The section overview (?sections=1, ?in= the card path below the top
  // level) replaces the step list with task/subtask cards; entering a leaf
  // leaves it for the complete trace at the section's first step.
  const overview = params.get("sections") === "1" && (d?.sections?.length ?? 0) > 0;
  const cardPath = params.get("in") ?? "";
  const enterAt = useRef<number | null>(null);
  const showCards = useCallback(
    (path: string) =>
      setParams((prev) => {
        const next = new URLSearchParams(prev);
        next.set("sections", "1");
        if (path) next.set("in", path);
        else next.delete("in");
        return next;
      }),
    [setParams],
  );
  const enterSection = useCallback(
    (first: number) => {
      enterAt.current = first;
      selRef.current = first;
      requested.current = first === inURL.current ? null : first;
      setParams((prev) => {
        const next = new URLSearchParams(prev);
        next.delete("sections");
        next.delete("in");
        next.set("step", String(first + 1));
        return next;
      });
    },
    [setParams],
  );

  // The criteria of the selected step (it is their target) and of the
  // trace, and the guidelines: beside the steps on a wide screen, above them
  // on a narrow one. Digits pick for the first row, a letter arms another.
  const crit = useCriteria();
  const guide = useQuery(guidelinesQuery);
  const cur = steps[selected];
  const stepRows = useMemo<Row[]>(
    () => (cur ? crit.forTarget(targetOf(cur)).map((c) => ({ criterion: c, stepId: cur.id, stepNumber: cur.index + 1, annotations: byStep.get(cur.id) ?? EMPTY })) : []),
    // eslint-disable-next-line react-hooks/exhaustive-deps -- forTarget follows crit.criteria
    [cur, crit.criteria, byStep],
  );
  const traceRows = useMemo<Row[]>(() => crit.forTarget("trace").map((c) => ({ criterion: c, stepId: null, annotations: traceAnns })), [crit.criteria, traceAnns]); // eslint-disable-line react-hooks/exhaustive-deps
  const critRows = useMemo(() => (overview ? [] : [...stepRows, ...traceRows]), [overview, stepRows, traceRows]);
  const armed = useCriteriaKeys(critRows, crit.letters, myId, ann, canWrite && !help);
  const hint = criteriaHint(critRows, armed);
  const hasSide = traceRows.length > 0 || !!guide.data?.markdown.trim();
  const sideRef = useRef<HTMLDivElement>(null);

  const [margin, setMargin] = useState(0);
  useEffect(() => {
    if (listRef.current) setMargin(listRef.current.offsetTop);
  }, [d, traceAnns.length, composing, overview, toolsOpen]);
  // On a narrow screen the side panel is above the steps: opening the
  // guidelines moves the list.
  useEffect(() => {
    const el = sideRef.current;
    if (!el) return;
    const ro = new ResizeObserver(() => listRef.current && setMargin(listRef.current.offsetTop));
    ro.observe(el);
    return () => ro.disconnect();
  }, [hasSide]);
  const virt = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => 180,
    overscan: 4,
    scrollMargin: margin,
    getItemKey: (i) => rows[i].steps[0].id,
  });

  // A deep link (?step=N) opens at that step.
  const opened = useRef("");
  useEffect(() => {
    if (!d || opened.current === d.id || rows.length === 0) return;
    opened.current = d.id;
    if (selected > 0) requestAnimationFrame(() => virt.scrollToIndex(stepRow[selected], { align: "center" }));
  }, [d, rows, selected, stepRow, virt]);

  // Entering a leaf section scrolls the list, once it is back, to its first step.
  useEffect(() => {
    if (overview || enterAt.current == null || rows.length === 0) return;
    const i = enterAt.current;
    enterAt.current = null;
    requestAnimationFrame(() => virt.scrollToIndex(stepRow[i], { align: "start" }));
  }, [overview, rows, stepRow, virt]);

  const toggleExpand = useCallback((stepId: string) => {
    setExpanded((s) => {
      const n = new Set(s);
      if (n.has(stepId)) n.delete(stepId);
      else n.add(stepId);
      return n;
    });
  }, []);
  const compose = useCallback((stepId: string | null) => setComposing(stepId === null ? undefined : stepId), []);

  // Keyboard: j/k, +/-, c, e, ?, Escape. Nothing fires while typing in a field or with a modifier.
  // A layout effect, as on the review and comparison pages: the listener is
  // replaced in the task that rendered the state it reads (a plain effect
  // waits for the next frame, and a key pressed before it acted on the state
  // of one render earlier).
  useLayoutEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (help || overview) return;
      if (e.ctrlKey || e.metaKey || e.altKey || typingIn(e) || steps.length === 0) return;
      const cur = selRef.current;
      const step = steps[cur];
      const go = (i: number) => {
        const c = Math.min(Math.max(0, i), steps.length - 1);
        select(c);
        virt.scrollToIndex(stepRow[c], { align: "auto" });
      };
      switch (e.key) {
        case "j":
          go(cur + 1);
          break;
        case "k":
          go(cur - 1);
          break;
        case "+":
        case "=":
        case "-":
        case "_":
          if (!canWrite || !me || !isRateable(step)) return;
          rate(ann, byStep.get(step.id) ?? [], myId, step.id, e.key === "+" || e.key === "=" ? 1 : -1);
          break;
        case "c":
          if (!canWrite) return;
          setComposing(step.id);
          virt.scrollToIndex(stepRow[cur], { align: "auto" });
          break;
        case "e":
          toggleExpand(step.id);
          break;
        case "?":
          setHelp(true);
          break;
        case "Escape":
          if (composing !== undefined) setComposing(undefined);
          else if (expanded.size > 0) {
            const target = expanded.has(step.id) ? step.id : [...expanded][expanded.size - 1];
            toggleExpand(target);
            const idx = steps.findIndex((s) => s.id === target);
            requestAnimationFrame(() => virt.scrollToIndex(stepRow[idx], { align: "start" }));
          } else return;
          break;
        default:
          return;
      }
      e.preventDefault();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [help, overview, steps, select, virt, stepRow, canWrite, me, ann, byStep, composing, expanded, toggleExpand]);

  if (trace.isPending)
    return (
      <main className="main center muted" aria-busy="true">
        Loading trace…
      </main>
    );
  if (trace.isError) {
    const e = trace.error as ApiError;
    return (
      <main className="main">
        <h1>{e.status === 404 ? "Trace not found" : "Could not load the trace"}</h1>
        <p role="alert">{e.status === 404 ? "This trace does not exist, was deleted, or belongs to another account." : e.message}</p>
        <p>
          <Link to="/traces">Back to Traces</Link>
        </p>
      </main>
    );
  }
  const t = d!;
  const myTrace = me ? myRating(t.annotations, myId, null) : undefined;
  return (
    <main className={"main viewer" + (hasSide ? " with-side" : "")} ref={scrollRef}>
      <a
        href="#steps"
        className="skip-link"
        onClick={(e) => {
          e.preventDefault();
          listRef.current?.focus({ preventScroll: true });
          virt.scrollToIndex(stepRow[selected] ?? 0, { align: "start" });
        }}
      >
        Skip to the steps
      </a>
      <header className="trace-head">
        {/* The title row keeps the trace's own controls in one fixed place,
            whatever chips the trace has. */}
        <div className="title-row">
          <nav className="crumbs" aria-label="Breadcrumb">
            <Link to="/traces">Traces</Link> <span aria-hidden="true">/</span>
          </nav>
          <h1>{t.title || "(untitled)"}</h1>
          <div className="trace-tools">
            {canWrite && (
              <>
                <button type="button" className={"rate up" + (myTrace?.rating === 1 ? " on" : "")} aria-pressed={myTrace?.rating === 1} onClick={() => rate(ann, t.annotations, myId, null, 1)}>
                  <span aria-hidden="true">▲</span> Rate trace up
                </button>
                <button type="button" className={"rate down" + (myTrace?.rating === -1 ? " on" : "")} aria-pressed={myTrace?.rating === -1} onClick={() => rate(ann, t.annotations, myId, null, -1)}>
                  <span aria-hidden="true">▼</span> Rate trace down
                </button>
                <button type="button" onClick={() => setComposing(null)}>
                  Comment on trace
                </button>
              </>
            )}
            {may("train") && <Rescore trace={t} onWatch={setWatchUntil} />}
            <button type="button" className="ghost" onClick={() => setHelp(true)} aria-label="Keyboard shortcuts">
              ? Shortcuts
            </button>
          </div>
        </div>
        <div className="row wrap meta-row">
          <span className="muted">
            {t.source_name} · imported <time dateTime={t.created_at}>{formatDate(t.created_at)}</time> · {t.step_count} steps · {t.positive_count} ▲ · {t.negative_count} ▼ ·{" "}
            {t.comment_count} comments
            {t.label_error_count > 0 && <> · {t.label_error_count} flagged</>}
            <TraceTokens steps={steps} repeated={repeated} />
          </span>
          {t.scores.map((s) => (
            <span key={s.reward_model_id} className="chip" title={`Scored ${formatDate(s.created_at)}`}>
              {s.reward_model_name}: {formatScore(s.score)}
            </span>
          ))}
          {t.scoring_runs
            .filter((r) => r.status !== "succeeded")
            .map((r) => (
              <span key={r.id} className={"chip" + (r.status === "failed" ? " neg" : "")} title={r.error ?? undefined}>
                scoring {r.status}
              </span>
            ))}
          <span className={"chip" + (t.evaluator.status === "failed" ? " neg" : "")} title={t.evaluator.error ?? undefined}>
            Shared evaluator: {evaluatorStatusText(t.evaluator)}
          </span>
          {may("train") && <ScoreAgain trace={t} onWatch={setWatchUntil} />}
          {models.length > 0 && (
            <label className="field inline">
              <span>Credit model</span>
              <select aria-label="Credit model" value={creditModel} onChange={(e) => setModel(e.target.value)}>
                {models.map(([mid, name]) => (
                  <option key={mid} value={mid}>
                    {name}
                  </option>
                ))}
              </select>
            </label>
          )}
          {may("train") && <ScoreActions trace={t} onScored={setModel} />}
          <TrainedModels models={t.reward_models} />
          <ToolList metadata={t.metadata} onToggle={setToolsOpen} />
        </div>
        <div className="row consent-row">
          <ContributeSwitch
            traceId={t.id}
            name="Contribute this trace to the shared evaluator"
            label="Contribute this trace to the shared evaluator"
            contribute={t.contribute}
            canWrite={may("manage")}
            onNotice={setConsent}
          />
          <span className="muted small-text one-line" title={t.contribute ? OPT_OUT_WARNING : undefined}>
            {t.contribute ? OPT_OUT_WARNING : "Off: its corrections, step ratings and reviewed comparisons train no shared evaluator candidate. Scoring never contributes data."}
          </span>
        </div>
        <ConsentNoticeLine notice={consent} />
        {providerNote && (
          <p className="muted small-text one-line" role="note" title={providerNote}>
            Completion curve and section summaries unavailable: {providerNote}
          </p>
        )}
        {ann.error && (
          <p role="alert" className="error">
            {ann.error.message}
          </p>
        )}
        {composing === null && <Composer busy={ann.add.isPending} onCancel={() => setComposing(undefined)} onSave={(text) => ann.add.mutate({ comment: text }, { onSuccess: () => setComposing(undefined) })} />}
        <AnnotationList items={traceAnns} ann={ann} canWrite={canWrite} />
        <CreditStrip
          steps={steps}
          credit={credit}
          selected={selected}
          model={models.find(([mid]) => mid === creditModel)?.[1] ?? ""}
          pending={
            creditModel === SHARED_EVALUATOR
              ? t.evaluator.status === "scoring"
              : t.scoring_runs.some((r) => r.reward_model_id === creditModel && (r.status === "queued" || r.status === "running"))
          }
          curves={curves}
          completionNote={completionNote}
          onPick={(i) => {
            select(i);
            virt.scrollToIndex(stepRow[i], { align: "start" });
          }}
        />
        {t.step_scores && (
          <p className="small-text">
            Step scores ({t.step_scores.source}): trace score {t.step_scores.trace_score != null ? (t.step_scores.trace_score >= 0 ? "+" : "") + t.step_scores.trace_score.toFixed(2) : "—"} · outcome {t.step_scores.outcome} ·{" "}
            {t.step_scores.tasks.length} task{t.step_scores.tasks.length === 1 ? "" : "s"}
            {t.step_scores.problems.length > 0 && <span className="warn-text"> · {t.step_scores.problems.length} label problem(s): {t.step_scores.problems.map((p) => `step ${p.step_index + 1}: ${p.message}`).join("; ")}</span>}
          </p>
        )}
        {(t.sections?.length ?? 0) > 0 && steps.length > 0 && !overview && (
          <div className="row wrap section-bar">
            <button type="button" className="ghost" onClick={() => showCards(cardPathOf(t.sections!, selected))}>
              Back to sections
            </button>
            <SectionCrumbs
              traceId={t.id}
              stepsKey={stepsKey}
              sections={t.sections!}
              selected={selected}
              said={providerNote ?? undefined}
              onPick={(i) => {
                select(i);
                virt.scrollToIndex(stepRow[i], { align: "start" });
              }}
            />
          </div>
        )}
        {t.spans.length > 0 && <Timeline spans={t.spans} onPick={(i) => { select(i); virt.scrollToIndex(stepRow[i], { align: "start" }); }} />}
      </header>
      {hasSide && (
        <div className="side-panel" ref={sideRef}>
          <GuidelinesPanel />
          <CriteriaForm rows={traceRows} letters={crit.letters} me={myId} ann={ann} canWrite={canWrite} armed={armed} digits={critRows[0]?.criterion.criterion_id ?? null} title="This trace" />
          {traceRows.length > 0 && stepRows.length === 0 && <p className="muted small-text criteria-hint">{hint}</p>}
        </div>
      )}

      {overview ? (
        <SectionCards traceId={t.id} stepsKey={stepsKey} sections={t.sections!} path={cardPath} onPath={showCards} onEnter={(s) => enterSection(s.first_step_index)} />
      ) : steps.length === 0 ? (
        <p className="state muted">This trace has no steps.</p>
      ) : (
        <div ref={listRef} id="steps" tabIndex={-1} aria-label="Steps" role="group" className="steps" style={{ height: virt.getTotalSize(), position: "relative" }}>
          {virt.getVirtualItems().map((v) => {
            const row = rows[v.index];
            return (
              <div
                key={v.key}
                data-index={v.index}
                ref={virt.measureElement}
                className={"vrow" + (row.steps.length > 1 ? " paired" : "")}
                style={{ position: "absolute", top: 0, left: 0, width: "100%", transform: `translateY(${v.start - virt.options.scrollMargin}px)` }}
              >
                {row.steps.map((s) => (
                  <Fragment key={s.id}>
                  {taskAt.has(s.id) && <TaskCard task={taskAt.get(s.id)!} policy={t.step_scores!.policy} section={taskSection(taskAt.get(s.id)!.task_id)} />}
                  <StepCard
                    step={s}
                    annotations={byStep.get(s.id) ?? EMPTY}
                    credit={credit.get(s.id)}
                    sameCall={repeated.has(s.id)}
                    me={myId}
                    canWrite={canWrite}
                    expanded={expanded.has(s.id)}
                    selected={s.index === selected}
                    composing={composing === s.id}
                    ann={ann}
                    onToggleExpand={toggleExpand}
                    onSelect={select}
                    onCompose={compose}
                    extra={
                      s.index === selected && stepRows.length > 0 ? (
                        <>
                          <CriteriaForm rows={stepRows} letters={crit.letters} me={myId} ann={ann} canWrite={canWrite} armed={armed} digits={critRows[0]?.criterion.criterion_id ?? null} title={`Criteria, step ${s.index + 1}`} />
                          <p className="muted small-text criteria-hint">{hint}</p>
                        </>
                      ) : undefined
                    }
                  />
                  </Fragment>
                ))}
              </div>
            );
          })}
        </div>
      )}
      <UndoDelete ann={ann} />
      {help && <ShortcutsDialog onClose={() => setHelp(false)} />}
    </main>
  );
}

const EMPTY: TraceDetail["annotations"] = [];

// SHARED_EVALUATOR is the credit selector's value for the shared
// evaluator's scores (no personal model has this id: those are UUIDs).
const SHARED_EVALUATOR = "shared-evaluator";

// evaluatorStatusText says where the shared evaluator stands on this trace.
function evaluatorStatusText(ev: TraceDetail["evaluator"]): string {
  switch (ev.status) {
    case "waiting_for_first_release":
      return "waiting for the first release";
    case "scoring":
      return ev.live_release != null ? `release ${ev.live_release} is scoring this trace` : "scoring";
    case "failed":
      return `release ${ev.live_release ?? "?"} could not score this trace`;
    default:
      return `scored by release ${ev.release ?? ev.live_release ?? "?"}`;
  }
}
