import { useEffect, useRef } from "react";

export const SHORTCUTS: [string, string][] = [
  ["j / k", "next / previous step"],
  ["+ / −", "rate the selected step up / down (again removes it)"],
  ["c", "comment on the selected step"],
  ["1–9, 0", "pick a choice of the first criterion shown (the selected step's, else the trace's); again removes it"],
  ["letter, digit", "pick a choice of the criterion with that letter"],
  ["e", "expand or collapse the selected step"],
  ["Esc", "collapse the expanded message, close a form or this list"],
  ["Ctrl+Enter", "save the comment being written or edited"],
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

/**
 * True when a key event belongs to a text field, a select, editable content,
 * a dialog or another control that uses keys itself: shortcuts never fire
 * then, or typing "lacks a source - guessed?" would rate a step.
 */
export function typingIn(e: KeyboardEvent): boolean {
  for (const el of [e.target, document.activeElement]) {
    if (!(el instanceof HTMLElement)) continue;
    if (el.isContentEditable) return true;
    const tag = el.tagName;
    if (tag === "TEXTAREA" || tag === "SELECT") return true;
    if (tag === "INPUT" && !["button", "checkbox", "radio", "submit", "reset"].includes((el as HTMLInputElement).type)) return true;
    if (el.closest('[role="dialog"],dialog,[role="textbox"],[role="combobox"],[role="listbox"],[role="menu"],[role="slider"]')) return true;
  }
  return false;
}
