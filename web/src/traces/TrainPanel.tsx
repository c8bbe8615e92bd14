import { useState } from "react";
import { CreateModelDialog } from "../models/CreateModelDialog";

/**
 * "Create reward model" from the trace selection (the dialog is
 * models/CreateModelDialog). Training needs
 * at least two source traces (whole traces are held out for evaluation):
 * the button says so before anything is sent.
 */
export function TrainPanel({ traceIds }: { traceIds: string[] }) {
  const [open, setOpen] = useState(false);
  const few = traceIds.length < 2;
  return (
    <>
      <button type="button" className="primary" onClick={() => setOpen(true)} disabled={few} aria-describedby={few ? "train-need" : undefined}>
        Create reward model
      </button>
      {few && (
        <span id="train-need" className="muted">
          Select at least two traces to train on.
        </span>
      )}
      {open && <CreateModelDialog traceIds={traceIds} onClose={() => setOpen(false)} />}
    </>
  );
}
