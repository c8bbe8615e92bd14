// An admin's retention period (issue 37): traces whose last activity is
// older than N days are erased daily, as a deletion erases them. The count
// of what a period would erase is shown before saving (GET /retention?days=N,
// the dry-run), so nobody erases by surprise.
import { useState } from "react";
import { keepPreviousData, useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, qs, type Schemas } from "../api/client";
import { useAuth } from "../auth/auth";

type Retention = Schemas["Retention"];

const MAX_DAYS = 36500;

/** A whole number of days the server accepts, or null. */
function validDays(s: string): number | null {
  if (!/^\d+$/.test(s.trim())) return null;
  const n = Number(s);
  return n >= 1 && n <= MAX_DAYS ? n : null;
}

function traces(n: number) {
  return n === 1 ? "1 trace is" : `${n} traces are`;
}

export function RetentionSetting() {
  const { isAdmin } = useAuth();
  const qc = useQueryClient();
  const saved = useQuery({ queryKey: ["retention"], queryFn: () => api<Retention>("/retention"), enabled: isAdmin });
  const [draft, setDraft] = useState<string | null>(null);
  const days = draft === null ? null : validDays(draft);
  const preview = useQuery({
    queryKey: ["retention", "preview", days],
    queryFn: () => api<Retention>("/retention" + qs({ days })),
    enabled: isAdmin && days !== null,
    placeholderData: keepPreviousData,
  });
  const save = useMutation({
    mutationFn: (d: number | null) => api<Retention>("/retention", { method: "PUT", json: { days: d } }),
    onSuccess: (d) => {
      qc.setQueryData(["retention"], d);
      setDraft(null);
    },
  });
  if (!isAdmin) return null;
  const cur = saved.data;
  const value = draft ?? (cur?.days != null ? String(cur.days) : "");
  return (
    <section className="panel" aria-labelledby="retention-h">
      <h2 id="retention-h">Retention</h2>
      <p className="muted">
        Traces whose last activity (import, or new spans) is older than this many days are erased every day, as deleting them would: their content
        can no longer be read anywhere. Leave it off to keep traces until they are deleted.
      </p>
      <p aria-live="polite">
        {saved.isPending
          ? "Loading…"
          : cur?.days != null
            ? `Now: traces older than ${cur.days} days are erased daily. ${traces(cur.would_erase)} older than this and would be erased at the next sweep.`
            : "Now: off — no trace is erased by age."}
      </p>
      <form
        className="row wrap"
        aria-label="Retention period"
        onSubmit={(e) => {
          e.preventDefault();
          if (days !== null) save.mutate(days);
        }}
      >
        <label>
          Days to keep traces{" "}
          <input type="number" min={1} max={MAX_DAYS} step={1} value={value} onChange={(e) => setDraft(e.target.value)} />
        </label>
        <button type="submit" disabled={save.isPending || days === null}>
          Save retention
        </button>
        {cur?.days != null && (
          <button type="button" disabled={save.isPending} onClick={() => save.mutate(null)}>
            Turn retention off
          </button>
        )}
      </form>
      {draft !== null && days === null && (
        <p role="alert" className="error">
          Days must be a whole number from 1 to {MAX_DAYS}.
        </p>
      )}
      {days !== null && preview.data && (
        <p role="status">
          {traces(preview.data.would_erase)} older than {days} days and would be erased.
        </p>
      )}
      {save.error && (
        <p role="alert" className="error">
          {save.error.message}
        </p>
      )}
    </section>
  );
}
