import { useState } from "react";
import type { Annotation } from "../api/client";
import type { Annotate } from "./useAnnotate";
import { formatDate } from "../traces/format";

/** The annotations on one target, each editable, deletable and flaggable as a label error. */
export function AnnotationList({ items, ann, canWrite }: { items: Annotation[]; ann: Annotate; canWrite: boolean }) {
  if (items.length === 0) return null;
  return (
    <ul className="annotations" aria-label="Annotations">
      {items.map((a) => (
        <AnnotationItem key={a.id} a={a} ann={ann} canWrite={canWrite} />
      ))}
    </ul>
  );
}

function AnnotationItem({ a, ann, canWrite }: { a: Annotation; ann: Annotate; canWrite: boolean }) {
  const [editing, setEditing] = useState(false);
  const [flagging, setFlagging] = useState(false);
  const [text, setText] = useState(a.comment ?? "");
  const [note, setNote] = useState(a.label_error_note ?? "");
  return (
    <li className={"annotation" + (a.label_error ? " flagged" : "")}>
      <div className="annotation-head">
        {a.rating === 1 && <span className="chip pos">▲ +1</span>}
        {a.rating === -1 && <span className="chip neg">▼ −1</span>}
        <span className="muted">
          {a.author_name} · <time dateTime={a.created_at}>{formatDate(a.created_at)}</time>
        </span>
        {a.label_error && (
          <span className="badge warn" title={a.label_error_note ?? undefined}>
            Label error{a.label_error_note ? `: ${a.label_error_note}` : ""}
          </span>
        )}
      </div>
      {a.quote && (
        <blockquote className="quote">
          <span className="muted">…{a.quote.prefix.slice(-16)}</span>
          <mark>{a.quote.text}</mark>
          <span className="muted">{a.quote.suffix.slice(0, 16)}…</span>
        </blockquote>
      )}
      {editing ? (
        <form
          className="composer"
          onSubmit={(e) => {
            e.preventDefault();
            ann.edit.mutate({ id: a.id, body: { comment: text.trim() || null } }, { onSuccess: () => setEditing(false) });
          }}
        >
          <label className="sr-only" htmlFor={`edit-${a.id}`}>
            Edit comment text
          </label>
          <textarea id={`edit-${a.id}`} value={text} rows={3} onChange={(e) => setText(e.target.value)} autoFocus />
          <button type="submit" className="primary">
            Save comment
          </button>
          <button type="button" className="ghost" onClick={() => setEditing(false)}>
            Cancel
          </button>
        </form>
      ) : (
        a.comment && <p className="comment-text">{a.comment}</p>
      )}
      {flagging && (
        <form
          className="composer"
          onSubmit={(e) => {
            e.preventDefault();
            ann.edit.mutate({ id: a.id, body: { label_error: true, label_error_note: note.trim() || null } }, { onSuccess: () => setFlagging(false) });
          }}
        >
          <label className="field">
            <span>Why is this label wrong?</span>
            <input value={note} onChange={(e) => setNote(e.target.value)} autoFocus />
          </label>
          <button type="submit" className="primary">
            Save flag
          </button>
          <button type="button" className="ghost" onClick={() => setFlagging(false)}>
            Cancel
          </button>
        </form>
      )}
      {canWrite && !editing && !flagging && (
        <div className="annotation-actions">
          {a.comment != null && (
            <button type="button" className="small" onClick={() => setEditing(true)}>
              Edit
            </button>
          )}
          {a.label_error ? (
            <button type="button" className="small" onClick={() => ann.edit.mutate({ id: a.id, body: { label_error: false, label_error_note: null } })}>
              Unflag
            </button>
          ) : (
            <button type="button" className="small" onClick={() => setFlagging(true)}>
              Flag label error
            </button>
          )}
          <button type="button" className="small danger" onClick={() => ann.remove.mutate(a.id)}>
            Delete
          </button>
        </div>
      )}
    </li>
  );
}

/** The comment form for a step or the trace, optionally with a quote. */
export function Composer({
  onSave,
  onCancel,
  quote,
  busy,
}: {
  onSave: (text: string) => void;
  onCancel: () => void;
  quote?: { text: string } | null;
  busy: boolean;
}) {
  const [text, setText] = useState("");
  return (
    <form
      className="composer"
      onSubmit={(e) => {
        e.preventDefault();
        if (text.trim()) onSave(text.trim());
      }}
      onKeyDown={(e) => {
        if (e.key === "Escape") {
          e.stopPropagation();
          onCancel();
        }
        if (e.key === "Enter" && (e.metaKey || e.ctrlKey) && text.trim()) {
          e.preventDefault();
          onSave(text.trim());
        }
      }}
    >
      {quote && (
        <blockquote className="quote">
          Quoting <mark>{quote.text}</mark>
        </blockquote>
      )}
      <label className="field">
        <span>Comment text</span>
        <textarea value={text} rows={3} onChange={(e) => setText(e.target.value)} autoFocus placeholder="What was good or wrong here? (Ctrl+Enter saves)" />
      </label>
      <div className="row">
        <button type="submit" className="primary" disabled={!text.trim() || busy}>
          Save comment
        </button>
        <button type="button" className="ghost" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}
