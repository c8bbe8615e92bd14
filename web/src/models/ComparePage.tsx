import { useMemo } from "react";
import { Link, useSearchParams } from "react-router";
import { useQuery } from "@tanstack/react-query";
import { api, type QueryResult, type RewardModel } from "../api/client";
import { formatScore } from "../traces/format";
import { TraceLink } from "../traces/TraceLink";

/** Spearman rank correlation (average ranks for ties); null under 2 points. */
export function spearman(a: number[], b: number[]): number | null {
  const n = a.length;
  if (n < 2) return null;
  const rank = (xs: number[]) => {
    const idx = xs.map((v, i) => [v, i] as const).sort((p, q) => p[0] - q[0]);
    const r = new Array<number>(n);
    for (let i = 0; i < n; ) {
      let j = i;
      while (j + 1 < n && idx[j + 1][0] === idx[i][0]) j++;
      for (let k = i; k <= j; k++) r[idx[k][1]] = (i + j) / 2 + 1;
      i = j + 1;
    }
    return r;
  };
  const ra = rank(a);
  const rb = rank(b);
  const mean = (n + 1) / 2;
  let num = 0;
  let da = 0;
  let db = 0;
  for (let i = 0; i < n; i++) {
    num += (ra[i] - mean) * (rb[i] - mean);
    da += (ra[i] - mean) ** 2;
    db += (rb[i] - mean) ** 2;
  }
  return da && db ? num / Math.sqrt(da * db) : null;
}

const q = (sql: string) => api<QueryResult>("/query", { method: "POST", json: { sql } });
const lit = (s: string) => "'" + s.replace(/'/g, "''") + "'";

/**
 * Two succeeded models side by side: their scores on the same traces, the
 * rank correlation, and the traces and actions they disagree on most (by
 * rank for traces, by credit for actions), each a link into the viewer.
 * The data comes from the SQL endpoint's scores and action_scores tables.
 */
export function ComparePage() {
  const [params, setParams] = useSearchParams();
  const models = useQuery({ queryKey: ["reward-models"], queryFn: () => api<RewardModel[]>("/reward-models") });
  const ok = (models.data ?? []).filter((m) => m.status === "succeeded");
  const a = params.get("a") ?? ok[0]?.id ?? "";
  const b = params.get("b") ?? ok.find((m) => m.id !== a)?.id ?? "";
  const ready = !!a && !!b && a !== b;
  const traces = useQuery({
    queryKey: ["compare", "traces", a, b],
    enabled: ready,
    queryFn: () =>
      q(`SELECT x.trace_id, t.title, x.score AS a, y.score AS b FROM scores x JOIN scores y ON x.trace_id = y.trace_id
         JOIN traces t ON t.id = x.trace_id WHERE x.reward_model_id = ${lit(a)} AND y.reward_model_id = ${lit(b)}`),
  });
  const actions = useQuery({
    queryKey: ["compare", "actions", a, b],
    enabled: ready,
    queryFn: () =>
      q(`SELECT x.trace_id, t.title, x.step_index, x.credit AS a, y.credit AS b, abs(x.credit - y.credit) AS gap FROM action_scores x
         JOIN action_scores y ON x.step_id = y.step_id JOIN traces t ON t.id = x.trace_id
         WHERE x.reward_model_id = ${lit(a)} AND y.reward_model_id = ${lit(b)} ORDER BY gap DESC LIMIT 10`),
  });
  const rows = useMemo(() => (traces.data?.rows ?? []) as [string, string, number, number][], [traces.data]);
  const rho = useMemo(() => spearman(rows.map((r) => r[2]), rows.map((r) => r[3])), [rows]);
  const ranked = useMemo(() => {
    const rk = (k: 2 | 3) => {
      const s = [...rows].sort((p, q) => q[k] - p[k]);
      return new Map(s.map((r, i) => [r[0], i + 1]));
    };
    const ra = rk(2);
    const rb = rk(3);
    return rows.map((r) => ({ id: r[0], title: r[1], a: r[2], b: r[3], ra: ra.get(r[0])!, rb: rb.get(r[0])! })).sort((p, q) => Math.abs(q.ra - q.rb) - Math.abs(p.ra - p.rb));
  }, [rows]);
  const name = (id: string) => ok.find((m) => m.id === id)?.name ?? id;
  const pick = (k: "a" | "b", v: string) => {
    const n = new URLSearchParams(params);
    n.set("a", a);
    n.set("b", b);
    n.set(k, v);
    setParams(n, { replace: true });
  };
  return (
    <main className="main">
      <nav className="crumbs" aria-label="Breadcrumb">
        <Link to="/models">Models</Link> <span aria-hidden="true">/</span>
      </nav>
      <h1>Compare models</h1>
      {ok.length < 2 ? (
        <p className="state">Comparing needs two succeeded models; this account has {ok.length}.</p>
      ) : (
        <>
          <div className="row">
            {(["a", "b"] as const).map((k) => (
              <label key={k} className="field">
                <span>{k === "a" ? "First model" : "Second model"}</span>
                <select value={k === "a" ? a : b} onChange={(e) => pick(k, e.target.value)}>
                  {ok.map((m) => (
                    <option key={m.id} value={m.id}>
                      {m.name}
                    </option>
                  ))}
                </select>
              </label>
            ))}
          </div>
          {!ready && <p className="muted">Choose two different models.</p>}
          {(traces.isError || actions.isError) && <p role="alert" className="error">{((traces.error ?? actions.error) as Error).message}</p>}
          {ready && traces.data && (
            <section className="panel" aria-labelledby="cmp-t">
              <h2 id="cmp-t">Traces scored by both: {rows.length}</h2>
              <p role="status">
                Rank correlation (Spearman): <strong>{rho == null ? "n/a (fewer than two traces)" : rho.toFixed(3)}</strong>
              </p>
              <div className="table-wrap">
                <table className="traces">
                  <thead>
                    <tr>
                      <th scope="col">Trace (most disagreement first)</th>
                      <th scope="col" className="num">{name(a)}</th>
                      <th scope="col" className="num">rank</th>
                      <th scope="col" className="num">{name(b)}</th>
                      <th scope="col" className="num">rank</th>
                    </tr>
                  </thead>
                  <tbody>
                    {ranked.map((r) => (
                      <tr key={r.id}>
                        <td>
                          <TraceLink id={r.id}>{r.title || r.id}</TraceLink>
                        </td>
                        <td className="num">{formatScore(r.a)}</td>
                        <td className="num">{r.ra}</td>
                        <td className="num">{formatScore(r.b)}</td>
                        <td className="num">{r.rb}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </div>
            </section>
          )}
          {ready && actions.data && (
            <section className="panel" aria-labelledby="cmp-a">
              <h2 id="cmp-a">Actions they disagree on most</h2>
              {actions.data.rows.length === 0 ? (
                <p className="muted">No action scored by both.</p>
              ) : (
                <ul className="plain">
                  {(actions.data.rows as [string, string, number, number, number][]).map(([tid, title, idx, ca, cb]) => (
                    <li key={tid + idx}>
                      <TraceLink id={tid} step={idx + 1}>
                        {title || tid}, step {idx + 1}
                      </TraceLink>{" "}
                      <span className="muted">
                        credit {ca.toFixed(3)} vs {cb.toFixed(3)}
                      </span>
                    </li>
                  ))}
                </ul>
              )}
            </section>
          )}
        </>
      )}
    </main>
  );
}
