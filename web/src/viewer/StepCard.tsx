import { memo, useEffect, useMemo, useRef, useState, type ReactNode } from "react";
import { highlightQuotes } from "./quoteHighlight";
import type { Annotation, Step } from "../api/client";
import { canRender, prettyJSON } from "./text";
import { messageHTML, useMarkdown } from "./richText";
import { anchorQuote, type Quote } from "./quote";
import { AnnotationList, Composer } from "./Annotations";
import { myRating, rate, type Annotate } from "./useAnnotate";
import { CallUsage } from "./CallUsage";
import { DIFF_KEYS, DiffView, FileChanges, ToolInputView, fileChanges, isError, isHarness, isRateable, isThinking, isVerbatim, looksLikePatch, patchLines, roleLabel } from "./agentView";

const NO_KEYS = new Set<string>();

const PREVIEW_CHARS = 1200;
const PREVIEW_LINES = 18;

export function isLong(s: string): boolean {
  return s.length > PREVIEW_CHARS * 1.25 || s.split("\n", PREVIEW_LINES + 6).length > PREVIEW_LINES + 5;
}

function preview(s: string): string {
  const lines = s.split("\n").slice(0, PREVIEW_LINES).join("\n");
  return lines.length > PREVIEW_CHARS ? lines.slice(0, PREVIEW_CHARS) : lines;
}

export type StepProps = {
  step: Step;
  annotations: Annotation[];
  credit?: number;
  /** This step repeats the previous step's LLM call (same model and usage): its line is not shown again. */
  sameCall?: boolean;
  me: string;
  canWrite: boolean;
  expanded: boolean;
  selected: boolean;
  composing: boolean;
  ann: Annotate;
  onToggleExpand: (stepId: string) => void;
  onSelect: (index: number) => void;
  onCompose: (stepId: string | null) => void;
  /** Shown under the step's actions: the criteria form of the selected step. */
  extra?: ReactNode;
};

function Copy({ text, label }: { text: string; label: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      className="small"
      aria-label={label}
      onClick={async () => {
        await navigator.clipboard?.writeText(text).catch(() => undefined);
        setDone(true);
        setTimeout(() => setDone(false), 1200);
      }}
    >
      {done ? "Copied" : label}
    </button>
  );
}

const LABEL_FIELDS = ["intent", "verdict", "sentiment", "type", "effect", "result", "outcome", "stance", "coverage"] as const;

/**
 * A step's label (steps[].metadata.label) as chips, and its score breakdown
 * (steps[].metadata.reward) as one chip whose title lists the rules.
 */
function LabelChips({ metadata }: { metadata: Step["metadata"] }) {
  const md = (metadata ?? {}) as Record<string, unknown>;
  const label = md.label as Record<string, unknown> | undefined;
  const reward = md.reward as { score?: number; kind?: string; capped?: boolean; expected_credit?: number | null; lines?: { rule: string; points: number; value?: string }[] } | undefined;
  const chips: string[] = [];
  if (label && typeof label === "object") for (const f of LABEL_FIELDS) if (typeof label[f] === "string" && label[f] && label[f] !== "none") chips.push(`${f}: ${label[f]}`);
  if (chips.length === 0 && !reward) return null;
  return (
    <span className="label-chips" aria-label="Step label">
      {chips.map((c) => (
        <span key={c} className="chip label">
          {c}
        </span>
      ))}
      {reward && typeof reward.score === "number" && (
        <span
          className={"chip " + (reward.score > 0 ? "pos" : reward.score < 0 ? "neg" : "")}
          title={(reward.lines ?? []).map((l) => `${l.rule}${l.value ? " (" + l.value + ")" : ""}: ${l.points >= 0 ? "+" : ""}${l.points}`).join("\n")}
        >
          step score {(reward.score >= 0 ? "+" : "") + reward.score.toFixed(2)}
          {reward.capped ? " (capped)" : ""}
        </span>
      )}
    </span>
  );
}

/**
 * Message content. Assistant prose is Markdown with a raw toggle; tool
 * output, tool input strings, user and harness text and thinking are
 * verbatim (monospace, whitespace kept: `__pycache__/` must not turn bold),
 * tool output that is JSON is pretty-printed and a patch is a diff. Until
 * the markdown renderer has loaded (richText.ts) prose is the same text,
 * plain: the first screen does not wait for it.
 */
function Content({ text, raw, isTool, verbatim, quotes }: { text: string; raw: boolean; isTool: boolean; verbatim: boolean; quotes: string[] }) {
  const md = useMarkdown();
  const json = useMemo(() => (verbatim && isTool ? prettyJSON(text) : null), [verbatim, isTool, text]);
  const patch = verbatim && isTool && json === null && looksLikePatch(text);
  const html = useMemo(() => (verbatim || raw || !md || !canRender(text) ? null : messageHTML(md, text)), [md, text, raw, verbatim]);
  const ref = useRef<HTMLDivElement & HTMLPreElement>(null);
  const key = quotes.join("\u0000");
  useEffect(() => (ref.current ? highlightQuotes(ref.current, key ? key.split("\u0000") : []) : undefined), [html, key, text, verbatim]);
  if (verbatim) {
    if (patch) return <DiffView lines={patchLines(text)} label="Patch" />;
    return (
      <pre className="verbatim" ref={ref}>
        {json ?? text}
      </pre>
    );
  }
  if (html !== null) return <div className="md" ref={ref} dangerouslySetInnerHTML={{ __html: html }} />;
  if (raw || !canRender(text))
    return (
      <pre className="raw" ref={ref}>
        {text}
      </pre>
    );
  return (
    <div className="md plain" ref={ref}>
      {text}
    </div>
  );
}

/** One step: a region "Step N" with its number in the gutter, role heading, content and annotations. */
export const StepCard = memo(function StepCard(p: StepProps) {
  const { step } = p;
  const n = step.index + 1;
  const [raw, setRaw] = useState(false);
  const [quote, setQuote] = useState<Quote | null>(null);
  const [quoteError, setQuoteError] = useState<string | null>(null);
  const long = isLong(step.content);
  const shown = long && !p.expanded ? preview(step.content) : step.content;
  const thinking = isThinking(step);
  const harness = isHarness(step);
  const failed = isError(step);
  const verbatim = isVerbatim(step);
  const rateable = p.canWrite && isRateable(step);
  const changes = useMemo(() => fileChanges(step), [step]);
  const mine = myRating(p.annotations, p.me, step.id);
  const ts = (step.metadata as { timestamp?: string } | null)?.timestamp;
  const quoteTexts = useMemo(() => p.annotations.filter((a) => a.quote && !a.label_error).map((a) => a.quote!.text), [p.annotations]);
  const toolInput = step.tool_input != null ? JSON.stringify(step.tool_input, null, 2) : null;

  const takeSelection = () => {
    if (!p.canWrite) return;
    const sel = window.getSelection();
    const text = sel?.toString() ?? "";
    if (!text.trim()) return;
    const q = anchorQuote(step.content, text);
    if (q) {
      setQuote(q);
      setQuoteError(null);
    } else {
      setQuote(null);
      setQuoteError("That selection is not in the message's text as recorded; switch to Raw and select again.");
    }
  };

  return (
    <section
      className={"step role-" + step.role + (thinking ? " thinking" : "") + (harness ? " harness" : "") + (failed ? " is-error" : "") + (p.selected ? " selected" : "")}
      aria-label={`Step ${n}`}
      aria-current={p.selected ? "true" : undefined}
      data-step={n}
      // Any click in a step makes it the current step, buttons included:
      // "c" after clicking Rate up on step 3 comments on step 3.
      onClickCapture={() => {
        if (!p.selected) p.onSelect(step.index);
      }}
    >
      <div className="gutter" aria-hidden="true">
        {n}
      </div>
      <div className="step-body">
        <header className="step-head">
          <h3 title={harness ? "Written by the agent's harness (hook feedback, reminders, command output), not by the user" : undefined}>
            {roleLabel(step)}
            {step.tool_name && <span className="tool-name"> · {step.tool_name}</span>}
          </h3>
          {failed && <span className="chip neg">Error</span>}
          {ts && (
            <time className="muted" dateTime={ts}>
              {new Date(ts).toLocaleTimeString()}
            </time>
          )}
          {!p.sameCall && <CallUsage step={step} />}
          {p.credit != null && (
            <span className={"chip credit " + (p.credit > 0.05 ? "pos" : p.credit < -0.05 ? "neg" : "")} title="Action credit: tanh((score − mean) / (2·std))">
              credit {(p.credit >= 0 ? "+" : "") + p.credit.toFixed(2)}
            </span>
          )}
          <LabelChips metadata={step.metadata} />
          <span className="spacer" />
          {p.expanded && long && (
            <button type="button" className="small" onClick={() => p.onToggleExpand(step.id)}>
              Show less
            </button>
          )}
          {!verbatim && (
            <button type="button" className="small" aria-pressed={raw} onClick={() => setRaw(!raw)}>
              Raw
            </button>
          )}
          <Copy text={step.content} label={step.role === "tool" ? "Copy tool output" : "Copy message"} />
        </header>
        {toolInput && (
          <details className="disclosure" open>
            <summary>Tool input</summary>
            <div className="disclosure-actions">
              <Copy text={toolInput} label="Copy tool input" />
            </div>
            {changes.length > 0 && <FileChanges changes={changes} />}
            <ToolInputView input={step.tool_input} skip={changes.length > 0 ? DIFF_KEYS : NO_KEYS} />
          </details>
        )}
        {thinking ? (
          <details className="thinking-body">
            <summary>Thinking · {step.content.length.toLocaleString()} characters</summary>
            <div className="content" onMouseUp={takeSelection} onKeyUp={takeSelection}>
              <Content text={step.content} raw={raw} isTool={false} verbatim quotes={quoteTexts} />
            </div>
          </details>
        ) : (
          <div className="content" onMouseUp={takeSelection} onKeyUp={takeSelection}>
            {step.content === "" && !toolInput ? <p className="muted">(empty)</p> : step.content !== "" && <Content text={shown} raw={raw} isTool={step.role === "tool"} verbatim={verbatim} quotes={quoteTexts} />}
            {long && !p.expanded && <div className="fade" aria-hidden="true" />}
          </div>
        )}
        {long && !p.expanded && !thinking && (
          <button type="button" className="small" onClick={() => p.onToggleExpand(step.id)}>
            Read full message
          </button>
        )}
        {(p.canWrite || p.annotations.length > 0) && (
          <div className="step-actions">
            {rateable && (
              <>
                <button type="button" className={"rate up" + (mine?.rating === 1 ? " on" : "")} aria-pressed={mine?.rating === 1} aria-label={`Rate up, step ${n}`} onClick={() => rate(p.ann, p.annotations, p.me, step.id, 1)}>
                  <span aria-hidden="true">▲</span> Rate up
                </button>
                <button type="button" className={"rate down" + (mine?.rating === -1 ? " on" : "")} aria-pressed={mine?.rating === -1} aria-label={`Rate down, step ${n}`} onClick={() => rate(p.ann, p.annotations, p.me, step.id, -1)}>
                  <span aria-hidden="true">▼</span> Rate down
                </button>
              </>
            )}
            {p.canWrite && (
              <button type="button" onClick={() => p.onCompose(step.id)} aria-expanded={p.composing} aria-label={`Comment on step ${n}`}>
                Comment
              </button>
            )}
            {quote && p.canWrite && !p.composing && (
              <button type="button" className="primary" onClick={() => p.onCompose(step.id)}>
                Quote selection
              </button>
            )}
          </div>
        )}
        {p.extra}
        {quoteError && (
          <p role="alert" className="error small-text">
            {quoteError}
          </p>
        )}
        {p.composing && (
          <Composer
            quote={quote}
            busy={p.ann.add.isPending}
            onCancel={() => {
              setQuote(null);
              p.onCompose(null);
            }}
            onSave={(text) =>
              p.ann.add.mutate(
                { step_id: step.id, comment: text, ...(quote ? { quote } : {}) },
                {
                  onSuccess: () => {
                    setQuote(null);
                    p.onCompose(null);
                  },
                },
              )
            }
          />
        )}
        <AnnotationList items={p.annotations} ann={p.ann} canWrite={p.canWrite} />
      </div>
    </section>
  );
});
