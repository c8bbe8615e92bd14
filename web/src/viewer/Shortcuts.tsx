import { useEffect, useRef } from "react";

export const SHORTCUTS: [string, string][] = [
  ["j / k", "next / previous step"],
  ["+ / −", "rate the selected step up / down (again removes it)"],
  ["c", "comment on the selected step"],
  ["e", "expand or collapse the selected step"],
  ["Esc", "collapse the expanded message, close a form or this list"],
  ["Ctrl+Enter", "save the comment being written"],
  ["?", "show these shortcuts"],
];

/** Every shortcut, in a modal dialog. */
export function ShortcutsDialog({ onClose, extra }: { onClose: () => void; extra?: [string, string][] }) {
  const ref = useRef<HTMLButtonElement>(null);
  useEffect(() => ref.current?.focus(), []);
  return (
    <div className="backdrop" onClick={onClose}>
      <div role="dialog" aria-modal="true" aria-labelledby="shortcuts-title" className="dialog" onClick={(e) => e.stopPropagation()} onKeyDown={(e) => e.key === "Escape" && onClose()}>
        <h2 id="shortcuts-title">Keyboard shortcuts</h2>
        <dl className="shortcuts">
          {[...(extra ?? SHORTCUTS)].map(([k, v]) => (
            <div key={k}>
              <dt>
                <kbd>{k}</kbd>
              </dt>
              <dd>{v}</dd>
            </div>
          ))}
        </dl>
        <p className="muted">Shortcuts never fire while you type in a field.</p>
        <button type="button" ref={ref} onClick={onClose}>
          Close
        </button>
      </div>
    </div>
  );
}

/** True when a key event belongs to a field or a control that uses keys itself. */
export function typingIn(e: KeyboardEvent): boolean {
  const t = e.target as HTMLElement | null;
  if (!t) return false;
  if (t.isContentEditable) return true;
  const tag = t.tagName;
  return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT";
}
