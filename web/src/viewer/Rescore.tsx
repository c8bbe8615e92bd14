import { useEffect, useState } from "react";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, type Schemas, type TraceDetail } from "../api/client";

type Labeling = Schemas["LabelingStatus"];

/** How long the viewer keeps refreshing after a rescore: the new labels arrive chunk by chunk from the worker tier. */
const WATCH_MS = 60_000;

const TIP = "Rescore: rerun automatic labels and scores";

/**
 * The rescore icon (spec 001 "Trace messages"): POST
 * /traces/{id}/labeling/rescore labels every chunk anew, so the step
 * scores follow. It spins while the request runs and while the labeler is
 * at work, and a failed labeling run shows a mark whose details open on
 * demand — no banner. Absent when the trace carries its own labels (they
 * are used as they are) or no step-label model is configured.
 */
export function Rescore({ trace, onWatch }: { trace: TraceDetail; onWatch: (until: number) => void }) {
  const qc = useQueryClient();
  const lab: Labeling | null = trace.labeling;
  const [watching, setWatching] = useState(false);
  const [open, setOpen] = useState(false);
  const rescore = useMutation({
    mutationFn: () => api<Labeling>(`/traces/${trace.id}/labeling/rescore`, { method: "POST" }),
    onSuccess: () => {
      setWatching(true);
      onWatch(Date.now() + WATCH_MS);
      qc.invalidateQueries({ queryKey: ["trace", trace.id] });
    },
  });
  useEffect(() => {
    if (!watching) return;
    const t = setTimeout(() => setWatching(false), WATCH_MS);
    return () => clearTimeout(t);
  }, [watching]);
  if (!lab || lab.model == null || lab.state === "imported" || lab.state === "waiting") return null;
  const busy = rescore.isPending || watching || lab.state === "queued";
  const failed = lab.state === "failed" || rescore.isError;
  const detail = rescore.isError ? (rescore.error as Error).message : lab.reason;
  return (
    <span className="rescore">
      <button
        type="button"
        className={"ghost icon" + (busy ? " busy" : "")}
        aria-label={TIP}
        title={TIP}
        aria-busy={busy}
        disabled={rescore.isPending}
        onClick={() => rescore.mutate()}
      >
        <span aria-hidden="true">↻</span>
      </button>
      {failed && (
        <button type="button" className="ghost icon neg" aria-expanded={open} aria-label="Labeling failed: show why" title="Labeling failed: show why" onClick={() => setOpen(!open)}>
          <span aria-hidden="true">!</span>
        </button>
      )}
      {failed && open && (
        <span role="status" className="small-text error">
          {detail}
        </span>
      )}
    </span>
  );
}
