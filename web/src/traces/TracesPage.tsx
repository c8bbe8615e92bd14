import { useMemo, useState } from "react";
import { useSearchParams } from "react-router";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { api, type Schemas, type TraceList } from "../api/client";
import { useAuth } from "../auth/auth";
import { ImportPanel } from "./ImportPanel";
import { ConnectDialog } from "./ConnectDialog";
import { RenameSource } from "./RenameSource";
import { TrainPanel } from "./TrainPanel";
import { ConsentNoticeLine, ContributeSelection, ContributeSwitch, type ConsentNotice } from "./Contribution";
import { formatDate, formatScore } from "./format";
import { listQuery, PAGE } from "./listQuery";
import { TraceLink } from "./TraceLink";
import { CreditCell, formatTraceScore, OUTCOMES, OutcomeCell, SORTS, SortHeader } from "./ListScores";

/** The trace list: every filter, the sort and the page live in the URL, so a view is a link. */
export function TracesPage() {
  // Every control gated here is admin-only (import, train, consent, criteria): reviewers and viewers do not see it.
  const { isAdmin: canWrite } = useAuth();
  const [params, setParams] = useSearchParams();
  const q = params.get("q") ?? "";
  const source = params.get("source") ?? "";
  const from = params.get("from") ?? "";
  const to = params.get("to") ?? "";
  const sort = params.get("sort") ?? "";
  const outcome = params.get("outcome") ?? "";
  const creditMax = params.get("action_credit_max") ?? "";
  const member = params.get("member") ?? "";
  const page = Math.max(0, Number(params.get("page") ?? "0") || 0);
  const [search, setSearch] = useState(q);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [showImport, setShowImport] = useState(false);
  const [showConnect, setShowConnect] = useState(false);
  const [consent, setConsent] = useState<ConsentNotice | null>(null);

  const set = (patch: Record<string, string>) => {
    const next = new URLSearchParams(params);
    for (const [k, v] of Object.entries(patch)) if (v) next.set(k, v);
    else next.delete(k);
    if (!("page" in patch)) next.delete("page");
    setParams(next);
  };

  const list = useQuery({
    ...listQuery({ q, source, from, to, sort, page, outcome, creditMax, member }),
    // A page the sidebar's click just fetched is not asked for again on
    // mount; every write that changes the list invalidates ["traces"].
    staleTime: 2000,
    placeholderData: keepPreviousData,
  });
  // Sources for the filter: from the newest 1000 traces (there is no
  // list-sources route), loaded when the filter is first used so the first
  // screen waits only for its own page.
  const [wantSources, setWantSources] = useState(false);
  const sources = useQuery({
    queryKey: ["traces", "sources"],
    queryFn: () => api<TraceList>("/traces?limit=1000"),
    staleTime: 30_000,
    enabled: wantSources,
  });
  const sourceOptions = useMemo(() => {
    const m = new Map<string, string>();
    for (const t of sources.data?.traces ?? []) m.set(t.source_id, t.source_name);
    for (const t of list.data?.traces ?? []) m.set(t.source_id, t.source_name);
    if (source && !m.has(source)) m.set(source, source);
    return [...m.entries()].sort((a, b) => a[1].localeCompare(b[1]));
  }, [sources.data, list.data, source]);

  const rows = list.data?.traces ?? [];
  const total = list.data?.total ?? 0;
  const shownIds = rows.map((r) => r.id);
  const shownSelected = shownIds.filter((id) => selected.has(id)).length;
  const hidden = selected.size - shownSelected;
  const allShown = rows.length > 0 && shownSelected === rows.length;
  // Members for an admin's "Annotated by" filter (the Team page's query).
  const members = useQuery({
    queryKey: ["members"],
    queryFn: () => api<Schemas["MemberList"]>("/members"),
    enabled: canWrite,
  });
  const filtered = !!(q || source || from || to || outcome || creditMax || member);

  const toggleAllShown = () => {
    const next = new Set(selected);
    if (allShown) shownIds.forEach((id) => next.delete(id));
    else shownIds.forEach((id) => next.add(id));
    setSelected(next);
  };
  const toggle = (id: string) => {
    const next = new Set(selected);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setSelected(next);
  };

  return (
    <main className="main">
      <header className="page-head">
        <h1>Traces</h1>
        {canWrite && (
          <button type="button" className="primary" onClick={() => setShowImport(true)} aria-haspopup="dialog">
            Import traces
          </button>
        )}
        <button type="button" onClick={() => setShowConnect(true)}>
          Connect an agent
        </button>
      </header>
      {showConnect && <ConnectDialog onClose={() => setShowConnect(false)} />}
      {showImport && canWrite && <ImportPanel onClose={() => setShowImport(false)} />}

      <form
        className="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          set({ q: search.trim() });
        }}
      >
        <label className="field grow">
          <span>Search</span>
          <input type="search" value={search} placeholder="Titles and step text" onChange={(e) => setSearch(e.target.value)} />
        </label>
        <label className="field">
          <span>Source</span>
          <select
            aria-label="Source"
            value={source}
            onFocus={() => setWantSources(true)}
            onPointerDown={() => setWantSources(true)}
            onChange={(e) => set({ source: e.target.value })}
          >
            <option value="">All sources</option>
            {sourceOptions.map(([id, name]) => (
              <option key={id} value={id}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <label className="field">
          <span>Imported from</span>
          <input type="date" value={from} max={to || undefined} onChange={(e) => set({ from: e.target.value })} />
        </label>
        <label className="field">
          <span>Imported to</span>
          <input type="date" value={to} min={from || undefined} onChange={(e) => set({ to: e.target.value })} />
        </label>
        <label className="field">
          <span>Outcome</span>
          <select aria-label="Outcome" value={outcome} onChange={(e) => set({ outcome: e.target.value })}>
            <option value="">All outcomes</option>
            {OUTCOMES.map(([v, name]) => (
              <option key={v} value={v}>
                {name}
              </option>
            ))}
          </select>
        </label>
        {canWrite && (
          <label className="field">
            <span>Annotated by</span>
            <select aria-label="Annotated by" value={member} onChange={(e) => set({ member: e.target.value })}>
              <option value="">Anyone or no one</option>
              {(members.data?.members ?? []).map((m) => (
                <option key={m.id} value={m.id}>
                  {m.name}
                  {m.removed ? " (removed)" : ""}
                </option>
              ))}
              {member && !members.data?.members.some((m) => m.id === member) && <option value={member}>{member}</option>}
            </select>
          </label>
        )}
        <label className="field inline credit-filter" title="Only traces whose mean action credit is zero or below">
          <input type="checkbox" checked={creditMax === "0"} onChange={(e) => set({ action_credit_max: e.target.checked ? "0" : "" })} />
          <span>Credit ≤ 0</span>
        </label>
        <label className="field narrow-only">
          <span>Sort</span>
          <select aria-label="Sort" value={sort} onChange={(e) => set({ sort: e.target.value })}>
            {SORTS.map(([v, name]) => (
              <option key={v} value={v}>
                {name}
              </option>
            ))}
          </select>
        </label>
        <button type="submit">Search</button>
        {filtered && (
          <button
            type="button"
            className="ghost"
            onClick={() => {
              setSearch("");
              setParams(sort ? { sort } : {});
            }}
          >
            Clear filters
          </button>
        )}
      </form>
      {source && canWrite && (
        <RenameSource sourceId={source} name={sourceOptions.find(([id]) => id === source)?.[1] ?? source} />
      )}

      <div className="selection-bar" aria-live="polite">
        {selected.size > 0 ? (
          <>
            <span>
              {selected.size} selected{hidden > 0 && <> ({hidden} hidden by the filters)</>}
            </span>
            <button type="button" onClick={() => setSelected(new Set(shownIds))} disabled={rows.length === 0}>
              Select only shown
            </button>
            <button type="button" className="ghost" onClick={() => setSelected(new Set())}>
              Clear selection
            </button>
            {canWrite && <ContributeSelection traceIds={[...selected]} onNotice={setConsent} />}
            {canWrite && <TrainPanel traceIds={[...selected]} />}
          </>
        ) : (
          <span className="muted">Select traces to train a reward model on them or change their consent to train the shared evaluator.</span>
        )}
      </div>
      <ConsentNoticeLine notice={consent} />

      {list.isError ? (
        <div role="alert" className="state error">
          <p>Could not load traces: {(list.error as Error).message}</p>
          <button type="button" onClick={() => list.refetch()}>
            Retry
          </button>
        </div>
      ) : list.isPending ? (
        <p className="state muted" aria-busy="true">
          Loading traces…
        </p>
      ) : rows.length === 0 ? (
        <div className="state">
          {filtered ? (
            <p>No traces match these filters. Change the search, source, dates, outcome, credit or member, or clear the filters.</p>
          ) : (
            <p>
              No traces yet.{" "}
              {canWrite
                ? "Import a file with Import traces, or point an agent's OpenTelemetry exporter at /api/v1/rm/otel."
                : "This key is read-only: ask the account owner to import traces."}
            </p>
          )}
        </div>
      ) : (
        <div className="table-wrap">
          <table className="traces">
            <thead>
              <tr>
                <th scope="col" className="check">
                  <input type="checkbox" aria-label="Select all shown" checked={allShown} onChange={toggleAllShown} />
                </th>
                <th scope="col">Title</th>
                <SortHeader col="source" label="Source" sort={sort} onSort={(s) => set({ sort: s })} />
                <th scope="col">Imported</th>
                <th scope="col" className="num">
                  Steps
                </th>
                <th scope="col" className="num">
                  <span aria-hidden="true">▲</span>
                  <span className="sr-only">Positive</span>
                </th>
                <th scope="col" className="num">
                  <span aria-hidden="true">▼</span>
                  <span className="sr-only">Negative</span>
                </th>
                <th scope="col" className="num">
                  Comments
                </th>
                <SortHeader col="action_credit" label="Credit" sort={sort} onSort={(s) => set({ sort: s })} className="num score" title="Mean action credit (−1..+1) of the newest model that scored the trace's actions" />
                <SortHeader col="scored_actions" label="Actions scored" sort={sort} onSort={(s) => set({ sort: s })} className="num wrap score lesser" />
                <SortHeader col="trace_score" label="Trace score" sort={sort} onSort={(s) => set({ sort: s })} className="num wrap score" title="The automatic annotation's trace score (step labels)" />
                <SortHeader col="outcome" label="Outcome" sort={sort} onSort={(s) => set({ sort: s })} className="score" title="The automatic annotation's outcome; sorted worst first" />
                <SortHeader col="latest_score" label="Model score" sort={sort} onSort={(s) => set({ sort: s })} className="num wrap score" title="The newest personal reward model's whole-trace score" />
                <th scope="col" title="Consent to train the shared evaluator with this trace's corrections, step ratings and reviewed comparisons">
                  Contributes
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((t) => (
                <tr key={t.id} className={selected.has(t.id) ? "selected" : undefined}>
                  <td className="check">
                    <input type="checkbox" aria-label={`Select ${t.title}`} checked={selected.has(t.id)} onChange={() => toggle(t.id)} />
                  </td>
                  <td className="title">
                    <TraceLink id={t.id}>{t.title || "(untitled)"}</TraceLink>
                    {t.label_error_count > 0 && <span className="badge warn">{t.label_error_count} flagged</span>}
                  </td>
                  <td className="inline source">
                    <button type="button" className="link" onClick={() => set({ source: t.source_id })} title={`Only ${t.source_name}`}>
                      {t.source_name}
                    </button>
                  </td>
                  <td className="inline">
                    <time dateTime={t.created_at}>{formatDate(t.created_at)}</time>
                  </td>
                  <td className="num inline" data-label="Steps">
                    {t.step_count}
                  </td>
                  <td className="num pos inline" data-label="▲">
                    {t.positive_count}
                  </td>
                  <td className="num neg inline" data-label="▼">
                    {t.negative_count}
                  </td>
                  <td className="num inline" data-label="Comments">
                    {t.comment_count}
                  </td>
                  <td className="num score" data-label="Credit">
                    <CreditCell credit={t.action_credit} actions={t.scored_actions} />
                  </td>
                  <td className="num lesser">{t.scored_actions}</td>
                  <td className="num score" data-label="Trace score">
                    {t.trace_score != null ? formatTraceScore(t.trace_score) : <span className="muted">—</span>}
                  </td>
                  <td className="score" data-label="Outcome">
                    <OutcomeCell outcome={t.outcome} />
                  </td>
                  <td className="num score" data-label="Model score">
                    {t.latest_score ? <span title={t.latest_score.reward_model_name}>{formatScore(t.latest_score.score)}</span> : <span className="muted">—</span>}
                  </td>
                  <td className="consent" data-label="Contributes">
                    <ContributeSwitch
                      traceId={t.id}
                      name={`Contribute ${t.title || "(untitled)"} to the shared evaluator`}
                      contribute={t.contribute}
                      canWrite={canWrite}
                      onNotice={setConsent}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {total > 0 && (
        <nav className="pager" aria-label="Pages">
          <span>
            {page * PAGE + 1}–{Math.min(total, (page + 1) * PAGE)} of {total}
          </span>
          <button type="button" disabled={page === 0} onClick={() => set({ page: String(page - 1) })}>
            Previous
          </button>
          <button type="button" disabled={(page + 1) * PAGE >= total} onClick={() => set({ page: String(page + 1) })}>
            Next
          </button>
        </nav>
      )}
    </main>
  );
}
