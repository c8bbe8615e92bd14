import { useLayoutEffect, useRef, useState } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, type Schemas } from "../api/client";
import { useAuth } from "../auth/auth";
import { ShortcutsDialog, typingIn } from "../viewer/Shortcuts";
import "./comparisons.css";
import { TraceLink } from "../traces/TraceLink";
import { traceQuery } from "../traces/traceQuery";

type QueueItem = Schemas["ComparisonQueueItem"];
type Choice = "left" | "right" | "tie";

const COMPARE_KEYS: [string, string][] = [
  ["a", "A (left) is better"],
  ["b", "B (right) is better"],
  ["e", "equally good or bad (tie)"],
  ["s", "skip for now"],
  ["c", "write a comment first"],
  ["?", "show these shortcuts"],
];

/**
 * Reviewed comparisons (spec 002, the shared evaluator): two actions for the
 * same prior context — the one the agent took and an AI-generated
 * alternative from the learning findings — shown as A and B in the order the
 * server randomised and records. Which one is the original is never shown,
 * so the verdict is about the actions. A / B / E answer and advance.
 */
export function ComparisonsPage() {
  const { canWrite } = useAuth();
  const qc = useQueryClient();
  const [skipped, setSkipped] = useState<string[]>([]);
  const [help, setHelp] = useState(false);
  const queue = useQuery({ queryKey: ["comparisons-queue"], queryFn: () => api<Schemas["ComparisonQueue"]>("/comparisons/queue?limit=100") });
  const items = (queue.data?.items ?? []).filter((i) => !skipped.includes(i.finding_id));
  const item = items[0];
  return (
    <main className="main comparisons">
      <header className="page-head">
        <h1>Comparisons</h1>
        <span className="spacer" />
        {queue.data && (
          <span className="progress" aria-live="polite">
            {items.length} to compare
          </span>
        )}
      </header>
      <p className="muted small-text">
        Which action is better for this context? Your verdicts train reward models and, on traces that contribute, the shared evaluator.
      </p>
      {!canWrite && <p className="muted">This key is read-only (or your role is viewer): you can look through the comparisons but not answer them.</p>}
      {queue.isError ? (
        <div role="alert" className="state error">
          Could not load the comparisons: {(queue.error as Error).message}{" "}
          <button type="button" onClick={() => queue.refetch()}>
            Retry
          </button>
        </div>
      ) : queue.isPending ? (
        <p className="state muted" aria-busy="true">
          Loading comparisons…
        </p>
      ) : !item ? (
        <div className="state">
          <p>Nothing to compare. Comparisons come from the alternatives that feedback extraction proposes when a reward model trains on comments and user reactions.</p>
          {skipped.length > 0 && (
            <button type="button" onClick={() => setSkipped([])}>
              Show the {skipped.length} skipped
            </button>
          )}
        </div>
      ) : (
        <ComparisonCard
          key={item.finding_id}
          item={item}
          canWrite={canWrite}
          help={help}
          setHelp={setHelp}
          onSkip={() => setSkipped((s) => [...s, item.finding_id])}
          onDone={() => qc.invalidateQueries({ queryKey: ["comparisons-queue"] })}
        />
      )}
      {help && <ShortcutsDialog extra={COMPARE_KEYS} onClose={() => setHelp(false)} />}
    </main>
  );
}

function ComparisonCard({
  item,
  canWrite,
  help,
  setHelp,
  onSkip,
  onDone,
}: {
  item: QueueItem;
  canWrite: boolean;
  help: boolean;
  setHelp: (v: boolean) => void;
  onSkip: () => void;
  onDone: () => void;
}) {
  const [comment, setComment] = useState("");
  // typed is the comment as the last keystroke left it, set in the change
  // handler itself: the answer sends it as a mutation variable, never from
  // a render's closure. TanStack Query hands a mutation its latest options
  // in an effect after paint, so a mutationFn reading `comment` sent the
  // comment one keystroke short when E followed the typing within a frame
  // ("both fin", seen twice in full make test runs).
  const typed = useRef("");
  const [full, setFull] = useState(false);
  const send = useMutation({
    mutationFn: (v: { choice: Choice; comment: string }) =>
      api<Schemas["Comparison"]>("/comparisons", {
        method: "POST",
        json: { model_id: item.model_id, finding_id: item.finding_id, left: item.left.kind, choice: v.choice, comment: v.comment.trim() || null },
      }),
    onSuccess: onDone,
  });
  const answer = (c: Choice) => {
    if (!canWrite || send.isPending) return;
    send.mutate({ choice: c, comment: typed.current });
  };
  // A layout effect, as on the review page: the listener is replaced in the
  // same task as the render a keystroke caused.
  useLayoutEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      // A focused checkbox (the consent toggle) takes no text: keys still answer.
      const box = e.target instanceof HTMLInputElement && e.target.type === "checkbox";
      if (help || e.ctrlKey || e.metaKey || e.altKey || (typingIn(e) && !box)) return;
      const k = e.key.toLowerCase();
      if (k === "a") answer("left");
      else if (k === "b") answer("right");
      else if (k === "e") answer("tie");
      else if (k === "s") onSkip();
      else if (k === "c") document.getElementById("comparison-comment")?.focus();
      else if (e.key === "?") setHelp(true);
      else return;
      e.preventDefault();
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  });
  const lines = item.context.split("\n");
  const shown = full || lines.length <= 12 ? item.context : lines.slice(-12).join("\n");
  return (
    <article className="comparison-card" aria-label="Comparison">
      <header>
        <h2>
          <TraceLink id={item.trace_id} step={item.step_index + 1}>
            {item.trace_title || "(untitled)"}
          </TraceLink>
        </h2>
        <p className="muted">
          Step {item.step_index + 1}
          {item.tool_name ? ` · ${item.tool_name}` : ""} ·{" "}
          {item.source === "models"
            ? "two of your reward models prefer different actions here (both taken in your traces; the shared evaluator learns from the verdict only when both traces contribute)"
            : `alternative from ${item.source === "ai_judgment" ? "an AI judgment" : "user feedback"}`}
        </p>
      </header>
      <section className="comparison-context" aria-label="Context">
        <h3>Context</h3>
        <pre className="raw">{shown || "(no earlier steps)"}</pre>
        {lines.length > 12 && (
          <button type="button" className="ghost" onClick={() => setFull(!full)}>
            {full ? "Show the last 12 lines" : `Show all ${lines.length} lines`}
          </button>
        )}
      </section>
      <div className="comparison-sides">
        <section className="comparison-side" aria-label="Action A">
          <h3>A</h3>
          <pre className="raw">{item.left.action}</pre>
        </section>
        <section className="comparison-side" aria-label="Action B">
          <h3>B</h3>
          <pre className="raw">{item.right.action}</pre>
        </section>
      </div>
      <Contribution traceId={item.trace_id} canWrite={canWrite} />
      {canWrite && (
        <label className="field">
          <span>Comment (optional)</span>
          <textarea
            id="comparison-comment"
            rows={2}
            value={comment}
            onChange={(e) => {
              typed.current = e.target.value;
              setComment(e.target.value);
            }}
          />
        </label>
      )}
      {send.isError && (
        <p role="alert" className="error">
          {(send.error as Error).message}
        </p>
      )}
      <footer className="row">
        {/* Hidden, not disabled, for a caller who may not annotate. */}
        {canWrite && (
          <>
            <button type="button" onClick={() => answer("left")} disabled={send.isPending}>
              A is better
            </button>
            <button type="button" onClick={() => answer("right")} disabled={send.isPending}>
              B is better
            </button>
            <button type="button" onClick={() => answer("tie")} disabled={send.isPending}>
              Tie
            </button>
          </>
        )}
        <button type="button" onClick={onSkip}>
          Skip
        </button>
        <span className="muted small-text">A / B / E for tie · S skip · C comment · ? shortcuts</span>
      </footer>
    </article>
  );
}

/**
 * The trace's consent to train the shared evaluator, next to the verdict it
 * governs: a comparison of a trace that does not contribute trains only the
 * owner's personal models. Opting out shows the server's notice (released
 * weights cannot unlearn).
 */
function Contribution({ traceId, canWrite }: { traceId: string; canWrite: boolean }) {
  const qc = useQueryClient();
  const trace = useQuery(traceQuery(traceId));
  // What the reviewer chose shows at once; a failed request puts it back.
  const [chosen, setChosen] = useState<boolean | undefined>(undefined);
  const set = useMutation({
    mutationFn: (contribute: boolean) =>
      api<Schemas["Contribution"]>(`/traces/${traceId}/contribution`, { method: "PUT", json: { contribute } }),
    onSuccess: () => qc.invalidateQueries({ queryKey: ["trace", traceId] }),
    onError: () => setChosen(undefined),
  });
  const on = chosen ?? trace.data?.contribute;
  return (
    <div className="comparison-consent">
      <label>
        <input
          type="checkbox"
          checked={!!on}
          disabled={!canWrite || on === undefined}
          onChange={(e) => {
            setChosen(e.target.checked);
            set.mutate(e.target.checked);
          }}
        />{" "}
        Contribute this trace to the shared evaluator
      </label>
      {set.data && (
        <p className="muted small-text" role="status">
          {set.data.notice}
        </p>
      )}
      {set.isError && (
        <p role="alert" className="error">
          {(set.error as Error).message}
        </p>
      )}
    </div>
  );
}
