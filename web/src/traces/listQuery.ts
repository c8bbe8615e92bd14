import { api, qs, type TraceList } from "../api/client";

/** Traces per page of the list. */
export const PAGE = 50;

/**
 * What the list shows: its address's query parameters. outcome and
 * creditMax are GET /traces's `outcome` and `action_credit_max`, under the
 * same names in the address; member (an admin's filter) is `member`, the
 * traces that member annotated.
 */
export type ListView = { q: string; source: string; from: string; to: string; sort: string; page: number; outcome: string; creditMax: string; member: string };

/** The unfiltered first page, where the sidebar's Traces link goes. */
export const FIRST_PAGE: ListView = { q: "", source: "", from: "", to: "", sort: "", page: 0, outcome: "", creditMax: "", member: "" };

// The browser's time zone, asked only when a date filter needs it: the first
// Intl call in a tab costs tens of milliseconds (ICU warm-up).
const tz = () => Intl.DateTimeFormat().resolvedOptions().timeZone;

/**
 * One page of the list as a query. Shared by the list and the sidebar,
 * which starts the first page's request on the click that opens the list,
 * alongside the list's code instead of after it (this module is in the
 * shell; the page's chunk is not).
 */
export function listQuery(v: ListView) {
  return {
    queryKey: ["traces", v] as const,
    queryFn: () => api<TraceList>("/traces" + qs({ limit: PAGE, offset: v.page * PAGE, q: v.q, source_id: v.source, from: v.from, to: v.to, tz: v.from || v.to ? tz() : "", sort: v.sort, outcome: v.outcome, action_credit_max: v.creditMax, member: v.member })),
  };
}
