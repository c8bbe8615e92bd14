import "./listScores.css";

/** The automatic outcomes GET /traces?outcome= takes, worst first, with their names and the chip's short name. */
export const OUTCOMES: [string, string, string][] = [
  ["failure", "Failure", "Failure"],
  ["insufficient_evidence", "Insufficient evidence", "No evidence"],
  ["partial_success", "Partial success", "Partial"],
  ["success", "Success", "Success"],
];

/**
 * Every order of the list, for the Sort select that stands in for the
 * column headers on a narrow screen (where the table has no header row).
 */
export const SORTS: [string, string][] = [
  ["", "Newest first"],
  ["action_credit", "Credit, lowest first"],
  ["-action_credit", "Credit, highest first"],
  ["-scored_actions", "Most actions scored"],
  ["trace_score", "Trace score, lowest first"],
  ["-trace_score", "Trace score, highest first"],
  ["outcome", "Outcome, worst first"],
  ["-outcome", "Outcome, best first"],
  ["latest_score", "Model score, lowest first"],
  ["-latest_score", "Model score, highest first"],
  ["source", "Source, A–Z"],
  ["-source", "Source, Z–A"],
];

/**
 * A sortable column header: a click sorts ascending, then descending, then
 * back to newest first; the sort is the address's ?sort, as GET /traces
 * takes it (traces without the value stay last either way).
 */
export function SortHeader(p: { col: string; label: string; sort: string; onSort: (sort: string) => void; className?: string; title?: string }) {
  const dir = p.sort === p.col ? "ascending" : p.sort === "-" + p.col ? "descending" : "none";
  const next = dir === "none" ? p.col : dir === "ascending" ? "-" + p.col : "";
  return (
    <th scope="col" className={p.className} aria-sort={dir} title={p.title}>
      <button type="button" className="sort" onClick={() => p.onSort(next)}>
        {p.label} {dir === "ascending" ? "▲" : dir === "descending" ? "▼" : ""}
      </button>
    </th>
  );
}

/** A trace score, signed, to two places. */
export function formatTraceScore(s: number): string {
  return (s >= 0 ? "+" : "") + s.toFixed(2);
}

/** Mean action credit, signed and colored as the viewer's credit badges. */
export function CreditCell({ credit, actions }: { credit: number | null; actions: number }) {
  if (credit == null) return <span className="muted">—</span>;
  const tone = credit > 0.05 ? " pos" : credit < -0.05 ? " neg" : "";
  return (
    <span className={"chip credit" + tone} title={`Mean credit of ${actions} scored action${actions === 1 ? "" : "s"}`}>
      {(credit >= 0 ? "+" : "") + credit.toFixed(2)}
    </span>
  );
}

/** The automatic annotation's outcome as a chip: success green, failure red. */
export function OutcomeCell({ outcome }: { outcome: string | null }) {
  if (!outcome) return <span className="muted">—</span>;
  const known = OUTCOMES.find(([v]) => v === outcome);
  const tone = outcome === "success" ? " pos" : outcome === "failure" ? " neg" : "";
  return (
    <span className={"chip outcome" + tone} title={known?.[1] ?? outcome}>
      {known?.[2] ?? outcome}
    </span>
  );
}
