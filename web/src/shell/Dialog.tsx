import { useEffect, useRef, type ReactNode } from "react";

/**
 * A modal dialog named by its title: focus moves into it when it opens,
 * Escape or the backdrop closes it, and it returns focus to whatever opened
 * it. Every dialog of the app uses it so they behave alike.
 */
export function Dialog({ title, onClose, children, wide }: { title: string; onClose: () => void; children: ReactNode; wide?: boolean }) {
  const ref = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const opener = document.activeElement as HTMLElement | null;
    const first = ref.current?.querySelector<HTMLElement>("input, select, textarea, button");
    first?.focus();
    return () => opener?.focus?.();
  }, []);
  // Escape closes it even when focus has left it (a button that disabled
  // itself while busy drops focus to the page).
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === "Escape") {
        e.preventDefault();
        onClose();
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, [onClose]);
  const id = "dlg-" + title.replace(/\W+/g, "-").toLowerCase();
  return (
    <div className="backdrop" onMouseDown={(e) => e.target === e.currentTarget && onClose()}>
      <div
        ref={ref}
        role="dialog"
        aria-modal="true"
        aria-labelledby={id}
        className={"dialog" + (wide ? " wide" : "")}
      >
        <div className="row">
          <h2 id={id}>{title}</h2>
          <span className="spacer" />
          <button type="button" className="ghost" onClick={onClose} aria-label={"Close " + title}>
            ✕
          </button>
        </div>
        {children}
      </div>
    </div>
  );
}

/** Copies text to the clipboard; says so for a moment. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const btn = useRef<HTMLButtonElement>(null);
  return (
    <button
      type="button"
      ref={btn}
      className="ghost"
      aria-label={label}
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(text);
          if (btn.current) btn.current.dataset.copied = "1";
        } catch {
          /* the clipboard may be refused (insecure origin); the text stays selectable */
        }
      }}
    >
      Copy
    </button>
  );
}
