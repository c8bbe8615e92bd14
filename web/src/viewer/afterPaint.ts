// What the viewer's first screen does not wait for. The first paint of a
// trace is its messages; the markdown renderer (richText.ts) and the
// requests for what sits beside them (section titles, the completion
// estimate, the models to score with) start once that frame is on screen.
// Started during the first render instead, their fetch calls ran inside the
// task that builds the screen (effects flush when a component renders
// again, and the virtualizer re-renders after measuring its rows) and
// pushed its paint back (web/BENCH_UI.md).
import { useEffect, useState } from "react";

/** Runs f after the next paint: requestAnimationFrame runs just before it, and a task queued from there runs once it is on screen. */
export function afterPaint(f: () => void) {
  requestAnimationFrame(() => setTimeout(f, 0));
}

/**
 * False until a frame has been painted since ready became true (a
 * component that first renders a loading state and its data later is ready
 * with the data).
 */
export function usePainted(ready = true): boolean {
  const [painted, setPainted] = useState(false);
  useEffect(() => {
    if (!ready || painted) return;
    let live = true;
    afterPaint(() => live && setPainted(true));
    return () => {
      live = false;
    };
  }, [ready, painted]);
  return ready && painted;
}
