// The writes the client is retrying right now, for the notice that tells the
// user their change is not saved yet (RetryNotice). A tiny external store:
// the client is no component, so it cannot hold React state.

/** One write waiting to be sent again: why it was not saved, and how often it was tried. */
export type Retrying = { why: string; attempts: number };

let pending = new Map<number, Retrying>();
let snapshot: Retrying[] = [];
const listeners = new Set<() => void>();
let next = 0;

function publish() {
  snapshot = [...pending.values()];
  for (const f of listeners) f();
}

/** A new id for one write's retries. */
export function retryId(): number {
  return ++next;
}

/** Records that write id failed attempts times and will be tried again. */
export function retrying(id: number, r: Retrying) {
  pending = new Map(pending).set(id, r);
  publish();
}

/** Write id is done retrying (saved, refused or given up). */
export function retried(id: number) {
  if (!pending.has(id)) return;
  pending = new Map(pending);
  pending.delete(id);
  publish();
}

export function subscribeRetries(f: () => void): () => void {
  listeners.add(f);
  return () => listeners.delete(f);
}

/** The writes being retried now (the same array until that changes). */
export function retriesNow(): Retrying[] {
  return snapshot;
}
