import { useEffect, useRef, useState } from "react";
import type { Annotation } from "../api/client";
import type { Annotate } from "./useAnnotate";
import { formatDate } from "../traces/format";
import { ValueChip } from "../criteria/CriteriaForm";
import { useAuth } from "../auth/auth";

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
  // A member edits and deletes their own annotations (an admin anyone's);
  // anyone who annotates may flag a label error.
  const { myId, isAdmin } = useAuth();
  const own = isAdmin || a.author_id === myId;
  return (
    <li className={"annotation" + (a.label_error ? " flagged" : "")}>
      <div className="annotation-head">
        {a.rating === 1 && <span className="chip pos">▲ +1</span>}
        {a.rating === -1 && <span className="chip neg">▼ −1</span>}
        {a.criterion_id && a.value != null && <ValueChip criterionId={a.criterion_id} value={a.value} />}
        <span className="muted">
          {/* Who rated: with several members on an account, the author is what tells ratings apart. */}
          <strong className="annotation-author">{a.author_name}</strong> · <time dateTime={a.created_at}>{formatDate(a.created_at)}</time>
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
          onKeyDown={(e) => {
            if (e.key === "Escape") {
              e.stopPropagation();
              setEditing(false);
            }
            if (e.key === "Enter" && (e.metaKey || e.ctrlKey)) {
              e.preventDefault();
              e.currentTarget.requestSubmit();
            }
          }}
        >
          <label className="sr-only" htmlFor={`edit-${a.id}`}>
            Edit comment text
          </label>
          <FocusedTextarea id={`edit-${a.id}`} value={text} onChange={setText} />
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
          {own && a.comment != null && (
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
          {own && (
            <button type="button" className="small danger" onClick={() => ann.remove.mutate(a.id)}>
              Delete
            </button>
          )}
        </div>
      )}
    </li>
  );
}

/**
 * A textarea that takes the focus when it appears, so what the reviewer
 * types next goes into it and never runs as a shortcut (autoFocus alone lost
 * it when the opening button kept the focus through a re-render).
 */
function FocusedTextarea({ id, value, onChange, placeholder }: { id?: string; value: string; onChange: (v: string) => void; placeholder?: string }) {
  const ref = useRef<HTMLTextAreaElement>(null);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    el.focus({ preventScroll: true });
    const end = el.value.length;
    el.setSelectionRange(end, end);
    // A re-render in the same frame (the list measuring its rows) can take
    // the focus back to the button that opened the form: take it again.
    const raf = requestAnimationFrame(() => {
      if (document.activeElement !== el && el.isConnected) el.focus({ preventScroll: true });
    });
    return () => cancelAnimationFrame(raf);
  }, []);
  return <textarea id={id} ref={ref} value={value} rows={3} onChange={(e) => onChange(e.target.value)} placeholder={placeholder} />;
}

/** The undo bar after a comment was deleted (useAnnotate keeps it for UNDO_MS). */
export function UndoDelete({ ann }: { ann: Annotate }) {
  if (!ann.removed) return null;
  return (
    <div className="undo-bar" role="status">
      <span>Comment deleted.</span>
      <button type="button" className="small" onClick={ann.undo}>
        Undo
      </button>
    </div>
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
        <FocusedTextarea value={text} onChange={setText} placeholder="What was good or wrong here? (Ctrl+Enter saves)" />
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
