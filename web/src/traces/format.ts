// One formatter for every date: toLocaleString with options builds a new
// Intl.DateTimeFormat on each call (V8 caches only the option-less one),
// which was 50 formatters for the list's first page. Made on first use, so
// the module's evaluation does not pay ICU's start-up before the first paint.
let dateFormat: Intl.DateTimeFormat | undefined;

export function formatDate(iso: string): string {
  dateFormat ??= new Intl.DateTimeFormat(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? "Invalid Date" : dateFormat.format(d); // as toLocaleString says it (format would throw)
}
export function formatScore(s: number): string {
  return (s >= 0 ? "+" : "") + s.toFixed(3);
}
