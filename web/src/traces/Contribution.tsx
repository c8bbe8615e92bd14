import { useState } from "react";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { api, type Schemas } from "../api/client";
import "./contribution.css";

/**
 * Consent to train the shared evaluator (PUT /traces/{id}/contribution), as
 * the trace list and the viewer show it. The server's notice is what a
 * person reads after each change: opting in covers corrections, step
 * ratings and reviewed comparisons; opting out cannot make weights already
 * released unlearn the trace.
 */
export type ConsentNotice = { kind: "status" | "alert"; text: string };

/** What opting out means, said before anyone does it. */
export const OPT_OUT_WARNING = "Opting out excludes it from future candidates; weights already released cannot unlearn it.";

function putContribution(traceId: string, contribute: boolean) {
  return api<Schemas["Contribution"]>(`/traces/${traceId}/contribution`, { method: "PUT", json: { contribute } });
}

/**
 * One trace's consent as a switch. It shows the state from the summary it
 * was given (what GET /traces or GET /traces/{id} said); a change shows at
 * once and a failed request puts it back.
 */
export function ContributeSwitch({
  traceId,
  name,
  contribute,
  canWrite,
  label,
  onNotice,
}: {
  traceId: string;
  /** The accessible name: says which trace and what for. */
  name: string;
  contribute: boolean;
  canWrite: boolean;
  /** Visible text next to the switch (none in a table cell). */
  label?: string;
  onNotice: (n: ConsentNotice) => void;
}) {
  const qc = useQueryClient();
  const [chosen, setChosen] = useState<boolean | undefined>(undefined);
  const set = useMutation({
    mutationFn: (on: boolean) => putContribution(traceId, on),
    onSuccess: (res) => {
      onNotice({ kind: "status", text: res.notice });
      return Promise.all([qc.invalidateQueries({ queryKey: ["traces"] }), qc.invalidateQueries({ queryKey: ["trace", traceId] })]).then(() =>
        setChosen(undefined),
      );
    },
    onError: (e) => {
      setChosen(undefined);
      onNotice({ kind: "alert", text: `Could not change consent: ${(e as Error).message}` });
    },
  });
  const on = chosen ?? contribute;
  return (
    <label
      className="consent-switch"
      title={
        !canWrite
          ? "Only an admin changes a trace's consent: your role may see it, not change it"
          : on
            ? OPT_OUT_WARNING
            : "Let this trace's corrections, step ratings and reviewed comparisons train the shared evaluator"
      }
    >
      <input
        type="checkbox"
        role="switch"
        aria-label={name}
        checked={on}
        disabled={!canWrite || set.isPending}
        onChange={(e) => {
          setChosen(e.target.checked);
          set.mutate(e.target.checked);
        }}
      />
      {label && <span>{label}</span>}
    </label>
  );
}

/**
 * Consent for every selected trace at once: one PUT per trace, four at a
 * time. Traces that already have the value append nothing on the server.
 */
export function ContributeSelection({ traceIds, onNotice }: { traceIds: string[]; onNotice: (n: ConsentNotice) => void }) {
  const qc = useQueryClient();
  const [done, setDone] = useState(0);
  const run = useMutation({
    mutationFn: async (on: boolean) => {
      setDone(0);
      const queue = [...traceIds];
      const failed: string[] = [];
      const worker = async () => {
        for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
          try {
            await putContribution(id, on);
          } catch (e) {
            failed.push(`${id}: ${(e as Error).message}`);
          }
          setDone((d) => d + 1);
        }
      };
      await Promise.all(Array.from({ length: Math.min(4, traceIds.length) }, worker));
      return { on, failed, ok: traceIds.length - failed.length };
    },
    onSuccess: async ({ on, failed, ok }) => {
      await qc.invalidateQueries({ queryKey: ["traces"] });
      await qc.invalidateQueries({ queryKey: ["trace"] });
      const n = (k: number) => `${k} trace${k === 1 ? "" : "s"}`;
      // The server's notice, in the plural.
      if (ok > 0)
        onNotice({
          kind: "status",
          text: on
            ? `${n(ok)} now contribute: their corrections, step ratings and reviewed comparisons may train future shared evaluator candidates. Scoring never contributes data.`
            : `${n(ok)} no longer contribute: they are excluded from every future shared evaluator candidate. Weights already released cannot unlearn data they were trained on.`,
        });
      if (failed.length > 0) onNotice({ kind: "alert", text: `Could not change consent of ${n(failed.length)}: ${failed.join("; ")}` });
    },
  });
  return (
    <span className="consent-selection">
      <button type="button" disabled={run.isPending} onClick={() => run.mutate(true)}>
        Contribute selected
      </button>
      <button type="button" disabled={run.isPending} onClick={() => run.mutate(false)} title={OPT_OUT_WARNING}>
        Stop contributing selected
      </button>
      {run.isPending && (
        <span className="muted" aria-live="polite">
          {done} of {traceIds.length}…
        </span>
      )}
    </span>
  );
}

/** The status line a page keeps for consent notices. */
export function ConsentNoticeLine({ notice }: { notice: ConsentNotice | null }) {
  return (
    <div className="consent-notice" aria-live="polite">
      {notice?.kind === "alert" && (
        <p role="alert" className="error">
          {notice.text}
        </p>
      )}
      {notice?.kind === "status" && (
        <p role="status" className="muted small-text">
          {notice.text}
        </p>
      )}
    </div>
  );
}
