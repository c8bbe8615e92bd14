import { useSyncExternalStore } from "react";
import { RETRY_BUDGET_S } from "./client";
import { retriesNow, subscribeRetries } from "./retries";

/**
 * Says, while the client is retrying a write the server could not take
 * (503 while it starts or drains, a dropped connection), that the change is
 * not saved yet: the control that made it stays busy meanwhile, and a
 * reviewer who saw nothing might close the tab. Gone once the write is
 * saved or the client gave up (then the page shows the error).
 */
export function RetryNotice() {
  const writes = useSyncExternalStore(subscribeRetries, retriesNow);
  if (writes.length === 0) return null;
  const last = writes[writes.length - 1];
  const what = writes.length === 1 ? "Your change is" : `${writes.length} changes are`;
  return (
    <div className="undo-bar retry-bar" role="status">
      {what} not saved yet: {last.why}. Retrying (try {last.attempts + 1}, for up to {RETRY_BUDGET_S} s)…
    </div>
  );
}
