import { useMemo, useState } from "react";
import { Link } from "react-router";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { criteriaQuery } from "../criteria/criteria";
import { api, type RewardModel, type TraceList, type TraceSummary } from "../api/client";
import { Dialog } from "../shell/Dialog";
import { baseSize, estimateLine, type BaseModel, type BaseModelList } from "./estimate";
import "./createModel.css";

/** GET /base-models: what the workers can load now; refreshed while the dialog is open. */
export const baseModelsQuery = () => ({
  queryKey: ["base-models"],
  queryFn: () => api<BaseModelList>("/base-models"),
  staleTime: 5_000,
  refetchInterval: 15_000,
});

/** Where a model learns from: spec 001's picker sends the automatic annotations at input version 3. */
const SOURCES = [
  {
    value: "automatic",
    label: "Automatic annotations (input v3)",
    note: "The step labels and scores Critic made for these traces; no ratings needed. Recommended.",
  },
  { value: "feedback", label: "Ratings, comments and reactions", note: "Your annotations, what users said next and AI judgments." },
  { value: "explicit", label: "Ratings only", note: "Only the thumbs up and down on traces and steps." },
] as const;

/** How many bases the picker shows before "Show all". */
const MAX_SHOWN_BASES = 5;

function trainingConfig(source: string): Record<string, unknown> {
  if (source === "automatic") return { input_version: 3, annotation_source: "automatic" };
  if (source.startsWith("criterion:")) return { criterion: source.slice("criterion:".length) };
  return { annotation_source: source };
}

/**
 * "Create reward model" for a selection of traces. The default path is the
 * spec's one click: a name, then Train — from the automatic annotations at
 * input version 3, on the first base the workers can load now (the
 * default when the hub is reachable, else the demo or a local checkpoint).
 * Other sources and bases are one click away; epochs, max pairs and a
 * base by path or hub id are folded under Training options. The estimate
 * line uses the workers' reported compute.
 */
export function CreateModelDialog({ traceIds, onClose }: { traceIds: string[]; onClose: () => void }) {
  const qc = useQueryClient();
  const [name, setName] = useState("");
  const [source, setSource] = useState<string>("automatic");
  const [picked, setPicked] = useState<string | null>(null);
  const [custom, setCustom] = useState("");
  const [epochs, setEpochs] = useState("");
  const [maxPairs, setMaxPairs] = useState("");
  const criteria = useQuery(criteriaQuery()).data ?? [];
  const bases = useQuery(baseModelsQuery());
  const list = bases.data;
  const firstReachable = list?.bases.find((b) => b.reachable);
  const baseId = picked ?? firstReachable?.id ?? null;
  const chosen: BaseModel | undefined = list?.bases.find((b) => b.id === baseId);
  // A worker with many checkpoints: the first few, the chosen one and the default until asked for all.
  const [allBases, setAllBases] = useState(false);
  const shownBases = (list?.bases ?? []).filter((b, i) => allBases || i < MAX_SHOWN_BASES || b.id === baseId || b.default);
  const hiddenBases = (list?.bases.length ?? 0) - shownBases.length;

  // The selected traces' summaries the list already loaded (for the estimate).
  const summaries = useMemo(() => {
    const want = new Set(traceIds);
    const found = new Map<string, TraceSummary>();
    for (const [, data] of qc.getQueriesData<TraceList>({ queryKey: ["traces"] })) {
      for (const t of data?.traces ?? []) if (want.has(t.id)) found.set(t.id, t);
    }
    return [...found.values()];
  }, [qc, traceIds]);
  const nEpochs = Number(epochs) || 1;
  const nMaxPairs = Number(maxPairs) || 4000;
  const estimate = custom.trim() ? null : estimateLine(chosen, list, summaries, traceIds.length, nEpochs, nMaxPairs);

  const train = useMutation({
    mutationFn: () => {
      const base = custom.trim() || (chosen && !chosen.default ? chosen.id : "");
      return api<RewardModel>("/reward-models", {
        method: "POST",
        json: {
          name: name.trim(),
          trace_ids: traceIds,
          ...(base ? { base_model: base } : {}),
          ...(epochs ? { epochs: Number(epochs) } : {}),
          ...(maxPairs ? { max_pairs: Number(maxPairs) } : {}),
          training_config: trainingConfig(source),
        },
      });
    },
    onSuccess: () => qc.invalidateQueries({ queryKey: ["reward-models"] }),
  });
  // With workers connected and none able to load any base, Train would
  // only fail: the hint says what to change. Without workers the model
  // queues on the server's default until one connects.
  const noBase = !custom.trim() && list != null && list.compute.workers > 0 && !firstReachable;

  return (
    <Dialog title="Create reward model" onClose={onClose}>
      <form
        className="stack create-model"
        onSubmit={(e) => {
          e.preventDefault();
          train.mutate();
        }}
      >
        <p className="muted">
          Trains on the {traceIds.length} selected traces; 10% of the traces are held out to measure it.
        </p>
        <label className="field">
          <span>Model name</span>
          <input value={name} onChange={(e) => setName(e.target.value)} required maxLength={200} />
        </label>
        <fieldset>
          <legend>Train from</legend>
          {SOURCES.map((s) => (
            <label key={s.value} className="choice">
              <input type="radio" name="source" value={s.value} checked={source === s.value} onChange={() => setSource(s.value)} />
              <span>{s.label}</span>
              <small>{s.note}</small>
            </label>
          ))}
          {criteria.map((c) => (
            <label key={c.criterion_id} className="choice">
              <input
                type="radio"
                name="source"
                value={"criterion:" + c.criterion_id}
                checked={source === "criterion:" + c.criterion_id}
                onChange={() => setSource("criterion:" + c.criterion_id)}
              />
              <span>Criterion: {c.name}</span>
              <small>Only this criterion's values.</small>
            </label>
          ))}
        </fieldset>
        <fieldset disabled={!!custom.trim()}>
          <legend>Base model</legend>
          {bases.isPending && (
            <p className="muted small-text" aria-busy="true">
              Asking the workers which base models they can load…
            </p>
          )}
          {bases.isError && (
            <p className="error small-text">
              Could not list the base models ({(bases.error as Error).message}); the server's default is used.
            </p>
          )}
          {shownBases.map((b) => (
            <label key={b.id} className={"choice" + (b.reachable ? "" : " unavailable")}>
              <input type="radio" name="base" value={b.id} checked={baseId === b.id} disabled={!b.reachable} onChange={() => setPicked(b.id)} />
              <span>
                {b.name}
                {b.default && <span className="badge">default</span>}
                {b.source === "demo" && <span className="badge">demo</span>}
              </span>
              <small>
                {[
                  { demo: "tiny demo base (make run)", cache: "downloaded from the hub", local: "checkpoint directory", hub: "from the Hugging Face hub" }[b.source],
                  baseSize(b),
                  b.reachable ? "" : "cannot be loaded now",
                ]
                  .filter(Boolean)
                  .join(" · ")}
              </small>
            </label>
          ))}
          {hiddenBases > 0 && (
            <button type="button" className="ghost small-text" onClick={() => setAllBases(true)}>
              Show all {list!.bases.length} base models
            </button>
          )}
          {list?.hint && (
            <p className="hint" role="note" aria-label="Base model hint">
              {list.hint}
            </p>
          )}
        </fieldset>
        {estimate && (
          <p className="estimate muted" aria-label="Training time estimate">
            {estimate}
          </p>
        )}
        <details className="disclosure">
          <summary>Training options</summary>
          <div className="stack">
            <label className="field">
              <span>Other base model (hub id or checkpoint directory)</span>
              <input value={custom} onChange={(e) => setCustom(e.target.value)} placeholder="e.g. Qwen/Qwen3-1.7B or /models/my-checkpoint" />
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
            <button type="submit" className="primary" disabled={!name.trim() || train.isPending || noBase}>
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
