import { useState, type FormEvent } from "react";
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { api, ApiError } from "../api/client";
import { useAuth } from "../auth/auth";
import { formatDate } from "../traces/format";
import { APPLIES_TO, choicesOf, criteriaQuery, guidelinesQuery } from "./criteria";
import { MarkdownText } from "./Guidelines";
import type { AppliesTo, Criterion, CriterionEdit, CriterionKind, Guidelines, NewCriterion } from "./types";
import "./criteria.css";

const KINDS: [CriterionKind, string][] = [
  ["binary", "Binary (yes / no)"],
  ["categorical", "Categorical (labels)"],
  ["scale", "Scale (1 to N)"],
];
const TARGETS: [AppliesTo, string][] = [
  ["trace", "Whole trace"],
  ["assistant", "Assistant reply"],
  ["tool_call", "Tool call"],
];
/** The most bytes of guidelines the server keeps (64 KiB). */
const GUIDELINES_MAX = 64 * 1024;

/** What a failed write says, naming the field the server named. */
function problem(e: unknown): string {
  if (e instanceof ApiError) return e.field ? `${e.field}: ${e.message}` : e.message;
  return (e as Error).message;
}

/**
 * The account's criteria and guidelines (/criteria): define a criterion
 * (binary, categorical with scored labels, or a 1–N scale, for whole traces,
 * assistant replies or tool calls), rename it, describe it, add labels, archive
 * it; and write the guidelines reviewers see in the queue and the viewer.
 */
export function CriteriaPage() {
  // Every control gated here is admin-only (import, train, consent, criteria): reviewers and viewers do not see it.
  const { isAdmin: canWrite } = useAuth();
  const [archived, setArchived] = useState(false);
  const list = useQuery(criteriaQuery(archived));
  return (
    <main className="main criteria-page">
      <header className="page-head">
        <h1>Criteria</h1>
      </header>
      <p className="muted">
        What reviewers judge besides ▲/▼: each criterion is a compact form beside the item in the trace viewer and the review queue, with a key per choice. Values are
        annotations, in the trace JSON, exports and SQL; a reward model can be trained on one.
      </p>
      <section className="panel" aria-labelledby="criteria-list-title">
        <div className="row wrap">
          <h2 id="criteria-list-title">Your criteria</h2>
          <span className="spacer" />
          <label className="field inline">
            <input type="checkbox" checked={archived} onChange={(e) => setArchived(e.target.checked)} />
            <span>Show archived</span>
          </label>
        </div>
        {list.isError ? (
          <p role="alert" className="error">
            Could not load the criteria: {(list.error as Error).message}
          </p>
        ) : list.isPending ? (
          <p className="muted" aria-busy="true">
            Loading…
          </p>
        ) : list.data.length === 0 ? (
          <p className="muted">No criteria yet{canWrite ? ": define one below." : "."}</p>
        ) : (
          <ul className="criteria-list" aria-label="Criteria">
            {list.data.map((c) => (
              <CriterionCard key={c.criterion_id} c={c} canWrite={canWrite} />
            ))}
          </ul>
        )}
      </section>
      {canWrite && <NewCriterionForm />}
      <GuidelinesEditor canWrite={canWrite} />
    </main>
  );
}

function useSaved() {
  const qc = useQueryClient();
  return () => void qc.invalidateQueries({ queryKey: ["criteria"] });
}

function CriterionCard({ c, canWrite }: { c: Criterion; canWrite: boolean }) {
  const [editing, setEditing] = useState(false);
  const [confirm, setConfirm] = useState(false);
  const saved = useSaved();
  const archive = useMutation({ mutationFn: () => api<void>(`/criteria/${c.criterion_id}`, { method: "DELETE" }), onSuccess: saved });
  return (
    <li className={"criterion-card" + (c.archived ? " archived" : "")} aria-label={`Criterion ${c.name}`}>
      <div className="row wrap">
        <h3>{c.name}</h3>
        <span className="chip">{c.kind}</span>
        <span className="chip">for {APPLIES_TO[c.applies_to]}</span>
        {c.archived && <span className="badge">archived</span>}
        <span className="spacer" />
        {canWrite && !c.archived && !editing && (
          <>
            <button type="button" className="small" onClick={() => setEditing(true)} aria-label={`Edit ${c.name}`}>
              Edit
            </button>
            <button type="button" className="small danger" onClick={() => setConfirm(true)} aria-label={`Archive ${c.name}`}>
              Archive
            </button>
          </>
        )}
      </div>
      {c.description && <p className="muted">{c.description}</p>}
      <p className="small-text">
        Choices:{" "}
        {c.kind === "categorical"
          ? c.labels.map((l) => `${l.name} (${(l.score ?? 0) > 0 ? "+" : ""}${l.score ?? 0})`).join(" · ")
          : choicesOf(c)
              .map((ch) => ch.label)
              .join(" · ")}
        <span className="muted"> · defined {formatDate(c.created_at)}</span>
      </p>
      {confirm && (
        <div className="row wrap" role="group" aria-label={`Archive ${c.name}?`}>
          <span>Archive {c.name}? Its values stay in traces, exports and SQL; it is no longer offered in forms.</span>
          <button type="button" className="small danger" disabled={archive.isPending} onClick={() => archive.mutate(undefined, { onSuccess: () => setConfirm(false) })}>
            Archive it
          </button>
          <button type="button" className="small ghost" onClick={() => setConfirm(false)}>
            Cancel
          </button>
        </div>
      )}
      {archive.error && (
        <p role="alert" className="error">
          {problem(archive.error)}
        </p>
      )}
      {editing && <CriterionEditor c={c} onDone={() => setEditing(false)} />}
    </li>
  );
}

type Score = -1 | 0 | 1;
type LabelDraft = { name: string; score: Score; stored: boolean };

/** Label rows: a name and a score each; stored labels can be renamed and re-scored, never removed. */
function LabelRows({ labels, onChange }: { labels: LabelDraft[]; onChange: (l: LabelDraft[]) => void }) {
  const set = (i: number, l: Partial<LabelDraft>) => onChange(labels.map((x, j) => (j === i ? { ...x, ...l } : x)));
  return (
    <fieldset>
      <legend>Labels (2–9; the score says which way a label counts in training)</legend>
      <div className="label-rows">
        {labels.map((l, i) => (
          <div key={i} className="label-row">
            <input type="text" aria-label={`Label ${i + 1} name`} value={l.name} maxLength={40} onChange={(e) => set(i, { name: e.target.value })} />
            <select aria-label={`Label ${i + 1} score`} value={l.score} onChange={(e) => set(i, { score: Number(e.target.value) as Score })}>
              <option value={1}>+1 good</option>
              <option value={0}>0 neutral</option>
              <option value={-1}>−1 bad</option>
            </select>
            {!l.stored && labels.length > 0 && (
              <button type="button" className="small ghost" aria-label={`Remove label ${i + 1}`} onClick={() => onChange(labels.filter((_, j) => j !== i))}>
                Remove
              </button>
            )}
          </div>
        ))}
      </div>
      {labels.length < 9 && (
        <button type="button" className="small" onClick={() => onChange([...labels, { name: "", score: 0, stored: false }])}>
          Add label
        </button>
      )}
    </fieldset>
  );
}

function NewCriterionForm() {
  const saved = useSaved();
  const [name, setName] = useState("");
  const [description, setDescription] = useState("");
  const [kind, setKind] = useState<CriterionKind>("binary");
  const [target, setTarget] = useState<AppliesTo>("trace");
  const [labels, setLabels] = useState<LabelDraft[]>([
    { name: "", score: 1, stored: false },
    { name: "", score: -1, stored: false },
  ]);
  const [scaleMax, setScaleMax] = useState("5");
  const [done, setDone] = useState<string | null>(null);
  const create = useMutation({
    mutationFn: (body: NewCriterion) => api<Criterion>("/criteria", { method: "POST", json: body }),
    onSuccess: (c) => {
      saved();
      setDone(c.name);
      setName("");
      setDescription("");
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    setDone(null);
    const body: NewCriterion = { name: name.trim(), kind, applies_to: target };
    if (description.trim()) body.description = description.trim();
    if (kind === "categorical") body.labels = labels.map((l) => ({ name: l.name.trim(), score: l.score }));
    if (kind === "scale") body.scale_max = Number(scaleMax);
    create.mutate(body);
  };
  return (
    <section className="panel" aria-labelledby="new-criterion-title">
      <h2 id="new-criterion-title">Define a criterion</h2>
      <form className="stack criterion-form" onSubmit={submit}>
        <label className="field">
          <span>Name</span>
          <input value={name} maxLength={80} onChange={(e) => setName(e.target.value)} placeholder="Correctness" />
        </label>
        <label className="field">
          <span>Description (optional)</span>
          <textarea rows={2} value={description} onChange={(e) => setDescription(e.target.value)} placeholder="What a reviewer checks" />
        </label>
        <fieldset>
          <legend>Kind</legend>
          {KINDS.map(([k, label]) => (
            <label key={k} className="radio">
              <input type="radio" name="kind" value={k} checked={kind === k} onChange={() => setKind(k)} />
              {label}
            </label>
          ))}
        </fieldset>
        {kind === "categorical" && <LabelRows labels={labels} onChange={setLabels} />}
        {kind === "scale" && (
          <label className="field">
            <span>Scale max (2–10; values 1 to it)</span>
            <input type="number" min={2} max={10} value={scaleMax} onChange={(e) => setScaleMax(e.target.value)} />
          </label>
        )}
        <fieldset>
          <legend>Applies to</legend>
          {TARGETS.map(([t, label]) => (
            <label key={t} className="radio">
              <input type="radio" name="applies_to" value={t} checked={target === t} onChange={() => setTarget(t)} />
              {label}
            </label>
          ))}
        </fieldset>
        <div className="row wrap">
          <button type="submit" className="primary" disabled={create.isPending}>
            Add criterion
          </button>
          {done && (
            <span role="status" className="ok">
              Added {done}.
            </span>
          )}
        </div>
        {create.error && (
          <p role="alert" className="error">
            {problem(create.error)}
          </p>
        )}
      </form>
    </section>
  );
}

function CriterionEditor({ c, onDone }: { c: Criterion; onDone: () => void }) {
  const saved = useSaved();
  const [name, setName] = useState(c.name);
  const [description, setDescription] = useState(c.description ?? "");
  const [labels, setLabels] = useState<LabelDraft[]>(c.labels.map((l) => ({ name: l.name, score: l.score ?? 0, stored: true })));
  const edit = useMutation({
    mutationFn: (body: CriterionEdit) => api<Criterion>(`/criteria/${c.criterion_id}`, { method: "PATCH", json: body }),
    onSuccess: () => {
      saved();
      onDone();
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const body: CriterionEdit = {};
    if (name.trim() !== c.name) body.name = name.trim();
    if (description.trim() !== (c.description ?? "")) body.description = description.trim();
    if (c.kind === "categorical") {
      const next = labels.map((l) => ({ name: l.name.trim(), score: l.score }));
      if (JSON.stringify(next) !== JSON.stringify(c.labels.map((l) => ({ name: l.name, score: l.score ?? 0 })))) body.labels = next;
    }
    if (Object.keys(body).length === 0) onDone();
    else edit.mutate(body);
  };
  return (
    <form
      className="stack criterion-form composer"
      aria-label={`Edit ${c.name}`}
      onSubmit={submit}
      onKeyDown={(e) => {
        if (e.key === "Escape") onDone();
      }}
    >
      <label className="field">
        <span>Name</span>
        <input value={name} maxLength={80} onChange={(e) => setName(e.target.value)} autoFocus />
      </label>
      <label className="field">
        <span>Description</span>
        <textarea rows={2} value={description} onChange={(e) => setDescription(e.target.value)} />
      </label>
      {c.kind === "categorical" && <LabelRows labels={labels} onChange={setLabels} />}
      <div className="row">
        <button type="submit" className="primary" disabled={edit.isPending}>
          Save criterion
        </button>
        <button type="button" className="ghost" onClick={onDone}>
          Cancel
        </button>
      </div>
      {edit.error && (
        <p role="alert" className="error">
          {problem(edit.error)}
        </p>
      )}
    </form>
  );
}

function GuidelinesEditor({ canWrite }: { canWrite: boolean }) {
  const qc = useQueryClient();
  const g = useQuery(guidelinesQuery);
  const [draft, setDraft] = useState<string | null>(null);
  const text = draft ?? g.data?.markdown ?? "";
  const bytes = new TextEncoder().encode(text).length;
  const save = useMutation({
    mutationFn: (markdown: string) => api<Guidelines>("/guidelines", { method: "PUT", json: { markdown } }),
    onSuccess: (saved) => {
      qc.setQueryData(guidelinesQuery.queryKey, saved);
      setDraft(null);
    },
  });
  return (
    <section className="panel" aria-labelledby="guidelines-title">
      <div className="row wrap">
        <h2 id="guidelines-title">Guidelines</h2>
        <span className="spacer" />
        {g.data?.updated_at && <span className="muted small-text">saved {formatDate(g.data.updated_at)}</span>}
      </div>
      <p className="muted small-text">Markdown: headings, lists, emphasis, code and links. Reviewers see it as a collapsible panel in the queue and the viewer.</p>
      {g.isError ? (
        <p role="alert" className="error">
          Could not load the guidelines: {(g.error as Error).message}
        </p>
      ) : (
        <form
          className="stack"
          onSubmit={(e) => {
            e.preventDefault();
            save.mutate(text);
          }}
        >
          <div className="guidelines-editor">
            <label className="field">
              <span>Guidelines (Markdown)</span>
              <textarea value={text} readOnly={!canWrite} onChange={(e) => setDraft(e.target.value)} placeholder={"# How we judge\n- **Correct**: the answer is right"} />
            </label>
            <div className="field">
              <span>Preview</span>
              <div className="guidelines-preview" aria-label="Guidelines preview" role="region">
                {text.trim() ? <MarkdownText text={text} /> : <p className="muted">Nothing yet.</p>}
              </div>
            </div>
          </div>
          <div className="row wrap">
            {canWrite && (
              <button type="submit" className="primary" disabled={save.isPending || draft === null || bytes > GUIDELINES_MAX}>
                Save guidelines
              </button>
            )}
            <span className={"small-text " + (bytes > GUIDELINES_MAX ? "error" : "muted")}>
              {bytes.toLocaleString()} of {GUIDELINES_MAX.toLocaleString()} bytes
            </span>
            {save.isSuccess && draft === null && (
              <span role="status" className="ok">
                Saved.
              </span>
            )}
          </div>
          {save.error && (
            <p role="alert" className="error">
              {problem(save.error)}
            </p>
          )}
        </form>
      )}
    </section>
  );
}
