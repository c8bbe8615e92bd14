// The REST client: every call sends the stored key as a bearer token (never
// in a URL) and turns error bodies into ApiError with the server's detail.
// A write (POST, PATCH, PUT, DELETE) carries an Idempotency-Key and is
// retried while the server is briefly unavailable (writeWithRetries).
import type { components } from "./schema";
import { retried, retrying, retryId } from "./retries";

export type Schemas = components["schemas"];
export type TraceSummary = Schemas["TraceSummary"];
export type TraceDetail = Schemas["TraceDetail"];
export type TraceList = Schemas["TraceList"];
export type Step = Schemas["Step"];
export type Span = Schemas["Span"];
export type Annotation = Schemas["Annotation"];
export type Me = Schemas["Me"];
export type RewardModel = Schemas["RewardModel"];
export type Format = Schemas["Format"];
export type ImportResponse = Schemas["ImportResponse"];
export type QueryResult = Schemas["QueryResult"];
export type AddAnnotation = Schemas["AddAnnotation"];
export type RewardModelDetail = Schemas["RewardModelDetail"];
export type FeedbackEntry = Schemas["FeedbackEntry"];
export type ScoringRun = Schemas["ScoringRun"];
export type Metrics = Schemas["Metrics"];
export type EditAnnotation = Schemas["EditAnnotation"];

export const API = "/api/v1/rm";
const KEY = "critic.apiKey";

export function getKey(): string | null {
  return localStorage.getItem(KEY);
}
export function setKey(k: string) {
  localStorage.setItem(KEY, k);
}
export function clearKey() {
  localStorage.removeItem(KEY);
}

/** Takes a key from the URL fragment (#key=…), stores it, and removes it from the address bar at once. */
export function takeKeyFromFragment(): boolean {
  const m = /(?:^#|&)key=([^&]+)/.exec(window.location.hash);
  if (!m) return false;
  setKey(decodeURIComponent(m[1]));
  history.replaceState(history.state, "", window.location.pathname + window.location.search);
  return true;
}

/**
 * Takes a one-time sign-in link's token from the URL fragment (#invite=…)
 * and removes it from the address bar at once; SignIn spends it.
 */
export function takeInviteFromFragment(): string | null {
  const m = /(?:^#|&)invite=([^&]+)/.exec(window.location.hash);
  if (!m) return null;
  history.replaceState(history.state, "", window.location.pathname + window.location.search);
  return decodeURIComponent(m[1]);
}

export class ApiError extends Error {
  constructor(
    public status: number,
    public code: string,
    detail: string,
    /** The upload line and request field the error is about, when the server names them. */
    public line?: number,
    public field?: string,
    public requestId?: string,
  ) {
    super(detail);
  }
}

type Preload = Record<string, Promise<Response> | string>;

/** A GET that public/preload.js already started for this key, taken once. */
function preloaded(path: string, init: RequestInit, key: string | null): Promise<Response> | undefined {
  const pre = (window as { __criticPreload?: Preload }).__criticPreload;
  if (!pre || pre.key !== key || (init.method ?? "GET") !== "GET") return undefined;
  const p = pre[path];
  if (typeof p === "string" || !p) return undefined;
  delete pre[path];
  return p;
}

export async function api<T>(path: string, init: RequestInit & { json?: unknown } = {}): Promise<T> {
  const headers = new Headers(init.headers);
  const key = getKey();
  if (key) headers.set("Authorization", "Bearer " + key);
  let body = init.body;
  if (init.json !== undefined) {
    headers.set("Content-Type", "application/json");
    body = JSON.stringify(init.json);
  }
  const req = { ...init, headers, body };
  const method = (init.method ?? "GET").toUpperCase();
  const write = key && WRITES.has(method) && !(method === "POST" && POST_READS.test(path));
  const res = await (preloaded(path, init, key) ?? (write ? writeWithRetries(API + path, req) : fetch(API + path, req)));
  if (res.status === 204) return undefined as T;
  const { data, error } = await read(res);
  if (error) throw error;
  return data as T;
}

/** An answer's JSON body, and the ApiError it stands for when it is an error. */
async function read(res: Response): Promise<{ data: unknown; error?: ApiError }> {
  const text = await res.text();
  let data: unknown = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (res.ok) return { data };
  const e = (data ?? {}) as { detail?: string; code?: string; line?: number; field?: string; request_id?: string };
  return { data, error: new ApiError(res.status, e.code ?? "error", e.detail ?? `HTTP ${res.status}`, e.line, e.field, e.request_id) };
}

/**
 * POSTs that only read (a SQL query, a trace's section titles or completion
 * estimate): no Idempotency-Key — the server would keep each answer, up to
 * 16 MiB, for a day — and no retries here; their queries retry themselves.
 * (Writes need credentials too: the server keys only a write that has them.)
 */
const POST_READS = /^\/query$|^\/traces\/[^/]+\/(section-summaries|completion)$/;

/**
 * The methods that write, each keyed and retried alike: the server honours
 * the key on all four, and a re-rating (PATCH), a removed vote (DELETE) or
 * a setting (PUT) lost to a restart is as lost as a new comment.
 */
const WRITES = new Set(["POST", "PATCH", "PUT", "DELETE"]);

/** How long a write keeps being retried before the client gives up. */
export const RETRY_BUDGET_S = 20;

/**
 * Sends a write (POST, PATCH, PUT, DELETE) with an Idempotency-Key — one
 * per call, that is per user action, kept across its retries — and sends
 * it again while the server cannot take it: 502/503/504 (starting,
 * draining, a dependency briefly down, a proxy between instances), 409
 * idempotency_key_in_flight (the first try is still running), or a
 * connection that failed. The key makes every retry safe: the server runs
 * a keyed request at most once and answers a retry of one that stored its
 * write with the first answer (docs/api.md), so a rating, a re-rating or a
 * comment is never lost to a brief outage and never stored twice (nor a
 * removal answered 404 for its own retry). Waits follow Retry-After, else
 * back off from 0.5 s to 4 s, for up to RETRY_BUDGET_S; then the last
 * problem is thrown, saying the client gave up. A replayed answer is final whatever its
 * status, and so is 503 projection_parked (it needs an operator).
 */
async function writeWithRetries(url: string, init: RequestInit): Promise<Response> {
  const headers = new Headers(init.headers);
  if (!headers.has("Idempotency-Key")) headers.set("Idempotency-Key", idempotencyKey());
  const started = Date.now();
  const id = retryId();
  try {
    for (let attempt = 1; ; attempt++) {
      let res: Response | undefined;
      let lost: unknown;
      try {
        res = await fetch(url, { ...init, headers });
      } catch (e) {
        if (init.signal?.aborted) throw e;
        lost = e;
      }
      if (res && !(await mayRetry(res))) return res;
      const why = res
        ? `the server answered ${res.status}${res.status === 409 ? " (the first try is still running)" : " (unavailable)"}`
        : "the connection to the server failed";
      const after = res ? retryAfterMs(res) : undefined;
      const wait = after ?? Math.min(500 * 2 ** (attempt - 1), 4000);
      const spent = Date.now() - started;
      if (spent + wait > RETRY_BUDGET_S * 1000) {
        const tried = `gave up after ${attempt} ${attempt === 1 ? "try" : "tries"} in ${Math.round(spent / 1000)} s` +
          (after !== undefined && spent + after > RETRY_BUDGET_S * 1000 ? ` (the server asked to wait ${Math.round(after / 1000)} s more)` : "");
        if (!res) {
          throw new ApiError(0, "unreachable", `Could not reach the server (${(lost as Error)?.message ?? lost}); ${tried}. Reload to see whether it was saved.`);
        }
        const { error } = await read(res);
        throw new ApiError(res.status, error!.code, `${error!.message} — ${tried}. Reload to see whether it was saved.`, error!.line, error!.field, error!.requestId);
      }
      retrying(id, { why, attempts: attempt });
      await sleep(wait, init.signal);
    }
  } finally {
    retried(id);
  }
}

/** Whether a keyed write's answer asks for another try. */
async function mayRetry(res: Response): Promise<boolean> {
  if (res.headers.get("Idempotent-Replayed") === "true") return false;
  if (res.status !== 409 && res.status !== 502 && res.status !== 503 && res.status !== 504) return false;
  let code = "";
  try {
    code = ((await res.clone().json()) as { code?: string }).code ?? "";
  } catch {
    // a proxy's page, not the API's JSON
  }
  if (res.status === 409) return code === "idempotency_key_in_flight";
  return code !== "projection_parked";
}

/** Retry-After (seconds or an HTTP date) in milliseconds; undefined when absent. */
function retryAfterMs(res: Response): number | undefined {
  const v = res.headers.get("Retry-After");
  if (!v) return undefined;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(t - Date.now(), 0);
}

function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const t = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(t), reject(signal.reason)), { once: true });
  });
}

/** 128 random bits in hex (crypto.randomUUID needs a secure context; an instance may be served over plain http). */
function idempotencyKey(): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

export function qs(params: Record<string, string | number | undefined | null>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") u.set(k, String(v));
  const s = u.toString();
  return s ? "?" + s : "";
}
