import { useState } from "react";
import { useSearchParams } from "react-router";
import { useMutation, useQuery } from "@tanstack/react-query";
import { api, type QueryResult } from "../api/client";
import { ResultChart, chartable } from "./ResultChart";

const TABLES = ["traces", "trace_list", "steps", "annotations", "scores", "action_scores", "step_labels", "task_scores"];

const EXAMPLES: [string, string][] = [
  ["Traces per source", "SELECT source_id, count(*) AS traces, sum(step_count) AS steps FROM traces GROUP BY source_id ORDER BY traces DESC"],
  ["Ratings per trace", "SELECT t.title, sum(CASE WHEN a.rating = 1 THEN 1 ELSE 0 END) AS up, sum(CASE WHEN a.rating = -1 THEN 1 ELSE 0 END) AS down\nFROM traces t JOIN annotations a ON a.trace_id = t.id GROUP BY t.title ORDER BY up + down DESC LIMIT 20"],
  ["Steps by role", "SELECT role, count(*) AS steps FROM steps GROUP BY role ORDER BY steps DESC"],
  ["Lowest action credit", "SELECT reward_model_name, trace_id, step_index, credit FROM action_scores ORDER BY credit LIMIT 20"],
];

/**
 * The SQL console: read-only DuckDB over the account's own rows. The query
 * is in the URL (?sql=), so a result is a link; Ctrl/Cmd+Enter runs it.
 */
export function SqlPage() {
  const [params, setParams] = useSearchParams();
  const [sql, setSql] = useState(params.get("sql") ?? EXAMPLES[0][1]);
  const run = useMutation({
    mutationFn: (q: string) => api<QueryResult>("/query", { method: "POST", json: { sql: q } }),
  });
  const exec = () => {
    if (!sql.trim()) return;
    setParams({ sql }, { replace: true });
    run.mutate(sql);
  };
  // Each table's columns, asked of the endpoint itself (SELECT … LIMIT 0):
  // the console lists exactly what a query can read.
  const columns = useQuery({
    queryKey: ["sql-columns"],
    queryFn: async () => {
      const out: [string, string[]][] = [];
      for (const t of TABLES) {
        try {
          const r = await api<QueryResult>("/query", { method: "POST", json: { sql: `SELECT * FROM ${t} LIMIT 0` } });
          out.push([t, r.columns]);
        } catch {
          /* a table this server does not have is left out */
        }
      }
      return out;
    },
    staleTime: Infinity,
  });
  const tables = columns.data ?? [];
  const res = run.data;
  const [chart, setChart] = useState<"bar" | "line" | null>(null);
  const canChart = res ? chartable(res) : null;
  // A column of numbers (nulls aside) is right-aligned, header included, so
  // digits and their column name line up.
  const numeric = res ? res.columns.map((_, j) => res.rows.some((r) => typeof (r as unknown[])[j] === "number") && res.rows.every((r) => (r as unknown[])[j] == null || typeof (r as unknown[])[j] === "number")) : [];

  return (
    <main className="main sql">
      <header className="page-head">
        <h1>SQL</h1>
        <span className="muted">Read-only DuckDB over your own traces, steps, annotations and scores. One SELECT, up to 1,000 rows.</span>
      </header>
      <div className="sql-grid">
        <aside className="panel schema" aria-label="Tables">
          <h2>Tables</h2>
          {columns.isError && <p className="error">Could not list the columns: {(columns.error as Error).message}</p>}
          {tables.map(([t, cols]) => (
            <details key={t} open={t === "traces"}>
              <summary className="mono">{t}</summary>
              <ul className="plain small-text">
                {cols.map((c) => (
                  <li key={c} className="mono">
                    {c}
                  </li>
                ))}
              </ul>
            </details>
          ))}
          <h2>Examples</h2>
          <ul className="plain">
            {EXAMPLES.map(([name, q]) => (
              <li key={name}>
                <button type="button" className="link" onClick={() => setSql(q)}>
                  {name}
                </button>
              </li>
            ))}
          </ul>
        </aside>
        <section className="sql-main">
          <label className="field">
            <span>SQL</span>
            <textarea
              aria-label="SQL"
              className="mono editor"
              rows={8}
              spellCheck={false}
              value={sql}
              onChange={(e) => setSql(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
                  e.preventDefault();
                  exec();
                }
              }}
            />
          </label>
          <div className="row">
            <button type="button" className="primary" onClick={exec} disabled={run.isPending || !sql.trim()}>
              Run query
            </button>
            <span className="muted small-text">Ctrl/Cmd+Enter</span>
            <span className="spacer" />
            {res && (
              <>
                {canChart && (
                  <>
                    <button type="button" aria-pressed={chart === "bar"} onClick={() => setChart(chart === "bar" ? null : "bar")}>
                      Bar chart
                    </button>
                    <button type="button" aria-pressed={chart === "line"} onClick={() => setChart(chart === "line" ? null : "line")}>
                      Line chart
                    </button>
                  </>
                )}
                <button type="button" onClick={() => downloadCSV(res)}>
                  Download CSV
                </button>
              </>
            )}
          </div>
          {run.isError && (
            <pre role="alert" className="error raw" tabIndex={0}>
              {(run.error as Error).message}
            </pre>
          )}
          {res && (
            <>
              <p role="status" className="muted">
                {res.rows.length} row{res.rows.length === 1 ? "" : "s"}
                {res.truncated && <strong className="warn-text"> — truncated: the result has more than 1,000 rows; add a LIMIT or aggregate</strong>}
              </p>
              {chart && canChart && <ResultChart result={res} kind={chart} spec={canChart} />}
              <div className="table-wrap">
                <table className="traces result">
                  <thead>
                    <tr>
                      {res.columns.map((c, j) => (
                        <th key={c} scope="col" className={numeric[j] ? "num" : undefined}>
                          {c}
                        </th>
                      ))}
                    </tr>
                  </thead>
                  <tbody>
                    {res.rows.map((r, i) => (
                      <tr key={i}>
                        {(r as unknown[]).map((v, j) => (
                          <td key={j} className={numeric[j] || typeof v === "number" ? "num" : undefined}>
                            {cell(v)}
                          </td>
                        ))}
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </>
          )}
        </section>
      </div>
    </main>
  );
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return "NULL";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

/** RFC 4180 CSV of the result, as the browser downloads it. */
export function toCSV(r: QueryResult): string {
  const esc = (v: unknown) => {
    const s = v === null || v === undefined ? "" : typeof v === "object" ? JSON.stringify(v) : String(v);
    return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return [r.columns.map(esc).join(","), ...r.rows.map((row) => (row as unknown[]).map(esc).join(","))].join("\r\n") + "\r\n";
}

function downloadCSV(r: QueryResult) {
  const url = URL.createObjectURL(new Blob([toCSV(r)], { type: "text/csv" }));
  const a = document.createElement("a");
  a.href = url;
  a.download = "query.csv";
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
