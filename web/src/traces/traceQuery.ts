import { api, type TraceDetail } from "../api/client";

/**
 * One trace as a query. Shared by the viewer and every link that opens one,
 * which starts the trace's request on the click, alongside the viewer's code
 * instead of after it has rendered (the viewer's query then takes the
 * request in flight, or its answer: STALE_MS).
 */
export function traceQuery(id: string) {
  return { queryKey: ["trace", id] as const, queryFn: () => api<TraceDetail>(`/traces/${id}`), staleTime: STALE_MS };
}

/** How long a trace fetched on a click counts as fresh for the viewer that the click opens. */
const STALE_MS = 2000;
