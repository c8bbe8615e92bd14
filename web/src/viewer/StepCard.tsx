import { memo, useEffect, useMemo, useRef, useState } from "react";
import { highlightQuotes } from "./quoteHighlight";
import type { Annotation, Step } from "../api/client";
import { canRender, prettyJSON } from "./text";
import { messageHTML, useMarkdown } from "./richText";
import { anchorQuote, type Quote } from "./quote";
import { AnnotationList, Composer } from "./Annotations";
import { myRating, rate, type Annotate } from "./useAnnotate";

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
  me: string;
  canWrite: boolean;
  expanded: boolean;
  selected: boolean;
  composing: boolean;
  ann: Annotate;
  onToggleExpand: (stepId: string) => void;
  onSelect: (index: number) => void;
  onCompose: (stepId: string | null) => void;
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
 * Message content: markdown (or pretty JSON for tool output) with a raw
 * toggle. Until the markdown renderer has loaded (richText.ts) it is the
 * same text, plain: the first screen does not wait for it.
 */
function Content({ text, raw, isTool, quotes }: { text: string; raw: boolean; isTool: boolean; quotes: string[] }) {
  const md = useMarkdown();
  const html = useMemo(() => (raw || !md || !canRender(text) ? null : messageHTML(md, text, isTool)), [md, text, raw, isTool]);
  const json = useMemo(() => (html === null && !raw && isTool ? prettyJSON(text) : null), [html, raw, text, isTool]);
  const ref = useRef<HTMLDivElement & HTMLPreElement>(null);
  const key = quotes.join("\u0000");
  useEffect(() => (ref.current ? highlightQuotes(ref.current, key ? key.split("\u0000") : []) : undefined), [html, key, text]);
  if (html !== null) return <div className="md" ref={ref} dangerouslySetInnerHTML={{ __html: html }} />;
  if (raw || !canRender(text))
    return (
      <pre className="raw" ref={ref}>
        {text}
      </pre>
    );
  return json !== null ? (
    <div className="md" ref={ref}>
      <pre className="code">
        <code className="hljs language-json">{json}</code>
      </pre>
    </div>
  ) : (
    <div className="md plain" ref={ref}>
      {text}
    </div>
  );
}

/** Tool input as pretty JSON: highlighted once the renderer has loaded, plain text until then. */
function ToolInputCode({ json }: { json: string }) {
  const md = useMarkdown();
  const html = useMemo(() => (md ? md.highlight(json, "json") : null), [md, json]);
  return <pre className="code">{html !== null ? <code className="hljs language-json" dangerouslySetInnerHTML={{ __html: html }} /> : <code className="hljs language-json">{json}</code>}</pre>;
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
  const rateable = p.canWrite && (step.role === "assistant" || step.role === "tool");
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
      className={"step role-" + step.role + (p.selected ? " selected" : "")}
      aria-label={`Step ${n}`}
      aria-current={p.selected ? "true" : undefined}
      data-step={n}
      onClick={(e) => {
        if (!(e.target as HTMLElement).closest("button,a,input,textarea,select,summary")) p.onSelect(step.index);
      }}
    >
      <div className="gutter" aria-hidden="true">
        {n}
      </div>
      <div className="step-body">
        <header className="step-head">
          <h3>
            {step.role}
            {step.tool_name && <span className="tool-name"> · {step.tool_name}</span>}
          </h3>
          {ts && (
            <time className="muted" dateTime={ts}>
              {new Date(ts).toLocaleTimeString()}
            </time>
          )}
          {p.credit != null && (
            <span className={"chip credit " + (p.credit > 0.05 ? "pos" : p.credit < -0.05 ? "neg" : "")} title="Action credit: tanh((score − mean) / (2·std))">
              credit {(p.credit >= 0 ? "+" : "") + p.credit.toFixed(2)}
            </span>
          )}
          <LabelChips metadata={step.metadata} />
          <span className="spacer" />
          <button type="button" className="small" aria-pressed={raw} onClick={() => setRaw(!raw)}>
            Raw
          </button>
          <Copy text={step.content} label={step.role === "tool" ? "Copy tool output" : "Copy message"} />
        </header>
        {p.expanded && long && (
          <button type="button" className="show-less small" onClick={() => p.onToggleExpand(step.id)}>
            Show less
          </button>
        )}
        {toolInput && (
          <details className="disclosure" open>
            <summary>Tool input</summary>
            <div className="disclosure-actions">
              <Copy text={toolInput} label="Copy tool input" />
            </div>
            <ToolInputCode json={toolInput} />
          </details>
        )}
        <div className="content" onMouseUp={takeSelection} onKeyUp={takeSelection}>
          {step.content === "" && !toolInput ? <p className="muted">(empty)</p> : step.content !== "" && <Content text={shown} raw={raw} isTool={step.role === "tool"} quotes={quoteTexts} />}
          {long && !p.expanded && <div className="fade" aria-hidden="true" />}
        </div>
        {long && !p.expanded && (
          <button type="button" className="small" onClick={() => p.onToggleExpand(step.id)}>
            Read full message
          </button>
        )}
        {(p.canWrite || p.annotations.length > 0) && (
          <div className="step-actions">
            {rateable && (
              <>
                <button type="button" className={"rate up" + (mine?.rating === 1 ? " on" : "")} aria-pressed={mine?.rating === 1} onClick={() => rate(p.ann, p.annotations, p.me, step.id, 1)}>
                  <span aria-hidden="true">▲</span> Rate up
                </button>
                <button type="button" className={"rate down" + (mine?.rating === -1 ? " on" : "")} aria-pressed={mine?.rating === -1} onClick={() => rate(p.ann, p.annotations, p.me, step.id, -1)}>
                  <span aria-hidden="true">▼</span> Rate down
                </button>
              </>
            )}
            {p.canWrite && (
              <button type="button" onClick={() => p.onCompose(step.id)} aria-expanded={p.composing}>
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
