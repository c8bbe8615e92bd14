import { useState } from "react";
import { Link } from "react-router";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { criteriaQuery } from "../criteria/criteria";
import { api, type RewardModel } from "../api/client";
import { Dialog } from "../shell/Dialog";

/**
 * "Create reward model" from the trace selection: a name, and folded away
 * the base model, epochs, max pairs and annotation source. Training needs
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

function CreateModelDialog({ traceIds, onClose }: { traceIds: string[]; onClose: () => void }) {
  const qc = useQueryClient();
  const [name, setName] = useState("");
  const [base, setBase] = useState("");
  const [epochs, setEpochs] = useState("");
  const [maxPairs, setMaxPairs] = useState("");
  const [source, setSource] = useState("");
  const [criterion, setCriterion] = useState("");
  const criteria = useQuery(criteriaQuery()).data ?? [];
  const train = useMutation({
    mutationFn: () =>
      api<RewardModel>("/reward-models", {
        method: "POST",
        json: {
          name: name.trim(),
          trace_ids: traceIds,
          ...(base.trim() ? { base_model: base.trim() } : {}),
          ...(epochs ? { epochs: Number(epochs) } : {}),
          ...(maxPairs ? { max_pairs: Number(maxPairs) } : {}),
          ...(criterion ? { training_config: { criterion } } : source ? { training_config: { annotation_source: source } } : {}),
        },
      }),
    onSuccess: () => qc.invalidateQueries({ queryKey: ["reward-models"] }),
  });
  return (
    <Dialog title="Create reward model" onClose={onClose}>
      <form
        className="stack"
        onSubmit={(e) => {
          e.preventDefault();
          train.mutate();
        }}
      >
        <p className="muted">
          Trains on the {traceIds.length} selected traces and their annotations; 10% of the traces are held out to measure it.
        </p>
        <label className="field">
          <span>Model name</span>
          <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} />
        </label>
        <details className="disclosure">
          <summary>Training options</summary>
          <div className="stack">
            <label className="field">
              <span>Base model</span>
              <input value={base} onChange={(e) => setBase(e.target.value)} placeholder="Qwen/Qwen3-0.6B (default), or a local checkpoint directory" />
            </label>
            <div className="row">
              <label className="field">
                <span>Epochs</span>
                <input type="number" min={1} max={20} value={epochs} onChange={(e) => setEpochs(e.target.value)} placeholder="1" />
              </label>
              <label className="field">
                <span>Max pairs</span>
                <input type="number" min={2} value={maxPairs} onChange={(e) => setMaxPairs(e.target.value)} placeholder="4000" />
              </label>
            </div>
            {criteria.length > 0 && (
              <label className="field">
                <span>Train on</span>
                <select value={criterion} onChange={(e) => setCriterion(e.target.value)}>
                  <option value="">ratings and annotations (the source below)</option>
                  {criteria.map((c) => (
                    <option key={c.criterion_id} value={c.criterion_id}>
                      criterion: {c.name}
                    </option>
                  ))}
                </select>
              </label>
            )}
            <label className="field">
              <span>Annotation source</span>
              <select value={source} disabled={!!criterion} onChange={(e) => setSource(e.target.value)}>
                <option value="">feedback (default): ratings, comments, user reactions and AI judgments</option>
                <option value="explicit">explicit: ratings only</option>
              </select>
            </label>
          </div>
        </details>
        {train.isError && (
          <p role="alert" className="error">
            {(train.error as Error).message}
          </p>
        )}
        {train.isSuccess ? (
          <p role="status" className="ok">
            Queued {train.data.name}. <Link to={`/models/${train.data.id}`}>Watch it train</Link>
          </p>
        ) : (
          <div className="row">
            <button type="submit" className="primary" disabled={!name.trim() || train.isPending}>
              {train.isPending ? "Queueing…" : "Train"}
            </button>
            <button type="button" className="ghost" onClick={onClose}>
              Cancel
            </button>
          </div>
        )}
      </form>
    </Dialog>
  );
}
