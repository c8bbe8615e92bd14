// The REST client: every call sends the stored key as a bearer token (never
// in a URL) and turns error bodies into ApiError with the server's detail.
import type { components } from "./schema";

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
  const res = await (preloaded(path, init, key) ?? fetch(API + path, { ...init, headers, body }));
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let data: unknown = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!res.ok) {
    const e = (data ?? {}) as { detail?: string; code?: string; line?: number; field?: string; request_id?: string };
    throw new ApiError(res.status, e.code ?? "error", e.detail ?? `HTTP ${res.status}`, e.line, e.field, e.request_id);
  }
  return data as T;
}

export function qs(params: Record<string, string | number | undefined | null>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") u.set(k, String(v));
  const s = u.toString();
  return s ? "?" + s : "";
}
