import type { ReactNode } from "react";
import { Link } from "react-router";
import { useQueryClient } from "@tanstack/react-query";
import { traceQuery } from "./traceQuery";

/**
 * A link that opens trace id in the viewer (at ?step=N when step is given,
 * 1-based as displayed) and asks for the trace on the click, so its
 * download overlaps the viewer's first render instead of following it.
 */
export function TraceLink({ id, step, children }: { id: string; step?: number; children: ReactNode }) {
  const qc = useQueryClient();
  return (
    <Link
      to={`/traces/${id}${step ? `?step=${step}` : ""}`}
      onClick={(e) => {
        // A click that opens another tab or window leaves this one where it is.
        if (e.button === 0 && !e.metaKey && !e.ctrlKey && !e.shiftKey && !e.altKey) void qc.prefetchQuery(traceQuery(id));
      }}
    >
      {children}
    </Link>
  );
}
