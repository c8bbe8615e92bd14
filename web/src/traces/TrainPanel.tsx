import { useState } from "react";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, type RewardModel } from "../api/client";

/** Request a reward model trained on the selected traces (spec: at least two, so whole traces can be held out). */
export function TrainPanel({ traceIds }: { traceIds: string[] }) {
  const qc = useQueryClient();
  const [name, setName] = useState("");
  const train = useMutation({
    mutationFn: () => api<RewardModel>("/reward-models", { method: "POST", json: { name: name.trim(), trace_ids: traceIds } }),
    onSuccess: () => qc.invalidateQueries({ queryKey: ["reward-models"] }),
  });
  return (
    <form
      className="train"
      onSubmit={(e) => {
        e.preventDefault();
        train.mutate();
      }}
    >
      <label className="field inline">
        <span>Model name</span>
        <input value={name} onChange={(e) => setName(e.target.value)} />
      </label>
      <button type="submit" disabled={!name.trim() || traceIds.length < 2 || train.isPending} title={traceIds.length < 2 ? "Select at least two traces" : undefined}>
        Train reward model
      </button>
      {train.isSuccess && <span role="status">Queued {train.data.name}.</span>}
      {train.isError && (
        <span role="alert" className="error">
          {(train.error as Error).message}
        </span>
      )}
    </form>
  );
}
