// Targets whose members disagree, with who said what; an admin settles one
// with a final judgment and a reason (POST /traces/{id}/adjudications),
// which training counts instead of the members' ratings.
import { useState, type FormEvent } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, type Schemas } from "../api/client";
import { useAuth } from "../auth/auth";
import { TraceLink } from "../traces/TraceLink";

type Item = Schemas["DisputedItem"];

export function DisputedSection() {
  const { isAdmin } = useAuth();
  const list = useQuery({ queryKey: ["disputed"], queryFn: () => api<Schemas["Disputed"]>("/disputed") });
  const items = list.data?.items ?? [];
  return (
    <section className="panel" aria-labelledby="disputed-h">
      <h2 id="disputed-h">Disputed</h2>
      {list.error && (
        <p role="alert" className="error">
          Could not load the disputed targets: {list.error.message}
        </p>
      )}
      {list.isPending && <p className="muted" aria-busy="true">Loading disputed targets…</p>}
      {list.data && items.length === 0 && <p className="muted">No target has members who disagree.</p>}
      <ul className="team-disputed">
        {items.map((it) => (
          <DisputedRow key={`${it.trace_id}/${it.step_id ?? ""}/${it.criterion_id ?? ""}`} it={it} admin={isAdmin} />
        ))}
      </ul>
    </section>
  );
}

function show(v: string | number | null): string {
  if (v === 1) return "▲ up";
  if (v === -1) return "▼ down";
  return v === null ? "—" : String(v);
}

function DisputedRow({ it, admin }: { it: Item; admin: boolean }) {
  const [open, setOpen] = useState(false);
  const target = it.step_index != null ? `step ${it.step_index + 1}` : it.step_id ? `step ${it.step_id.slice(0, 8)}` : "the whole trace";
  const title = it.trace_title || "(untitled)";
  return (
    <li aria-label={`Disputed: ${title}, ${target}`}>
      <div className="row wrap">
        <TraceLink id={it.trace_id}>{title}</TraceLink>
        <span className="muted">{target}</span>
        {it.criterion_id && <span className="chip">criterion {it.criterion_id}</span>}
        <span className="spacer" />
        {admin && !open && (
          <button type="button" onClick={() => setOpen(true)}>
            {it.adjudication ? "Adjudicate again" : "Adjudicate"}
          </button>
        )}
      </div>
      <ul className="team-values">
        {it.values.map((v) => (
          <li key={v.member}>
            <strong>{v.name}</strong>: {show(v.value)}
          </li>
        ))}
      </ul>
      {it.adjudication && (
        <p>
          Final: <strong>{show(it.adjudication.rating ?? it.adjudication.value)}</strong> — {it.adjudication.reason}
        </p>
      )}
      {open && <Adjudicate it={it} onDone={() => setOpen(false)} />}
    </li>
  );
}

function Adjudicate({ it, onDone }: { it: Item; onDone: () => void }) {
  const qc = useQueryClient();
  const [value, setValue] = useState<string>("");
  const [reason, setReason] = useState("");
  const send = useMutation({
    mutationFn: () => {
      const body: Schemas["AdjudicationRequest"] = { step_id: it.step_id, reason: reason.trim() };
      if (it.criterion_id) {
        body.criterion_id = it.criterion_id;
        const n = Number(value);
        body.value = value.trim() !== "" && !Number.isNaN(n) && typeof it.values[0]?.value === "number" ? n : value;
      } else body.rating = Number(value) as 1 | -1;
      return api<Schemas["Adjudication"]>(`/traces/${it.trace_id}/adjudications`, { method: "POST", json: body });
    },
    onSuccess: () => {
      void qc.invalidateQueries({ queryKey: ["disputed"] });
      void qc.invalidateQueries({ queryKey: ["agreement"] });
      onDone();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    send.mutate();
  };
  return (
    <form className="team-adjudicate" onSubmit={submit} aria-label="Adjudicate">
      {it.criterion_id ? (
        <label>
          Final value <input value={value} onChange={(e) => setValue(e.target.value)} required />
        </label>
      ) : (
        <fieldset className="row">
          <legend>Final rating</legend>
          <label>
            <input type="radio" name="final" value="1" checked={value === "1"} onChange={() => setValue("1")} required /> ▲ up
          </label>
          <label>
            <input type="radio" name="final" value="-1" checked={value === "-1"} onChange={() => setValue("-1")} /> ▼ down
          </label>
        </fieldset>
      )}
      <label>
        Reason <textarea rows={2} value={reason} onChange={(e) => setReason(e.target.value)} required />
      </label>
      <div className="row">
        <button type="submit" className="primary" disabled={send.isPending || !reason.trim() || !value}>
          Save final judgment
        </button>
        <button type="button" className="ghost" onClick={onDone}>
          Cancel
        </button>
      </div>
      {send.error && (
        <p role="alert" className="error">
          {send.error.message}
        </p>
      )}
    </form>
  );
}
