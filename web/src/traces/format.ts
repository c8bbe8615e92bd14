export function formatDate(iso: string): string {
  const d = new Date(iso);
  return d.toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
}
export function formatScore(s: number): string {
  return (s >= 0 ? "+" : "") + s.toFixed(3);
}
