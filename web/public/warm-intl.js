// A dedicated worker that public/preload.js starts on every page load. The
// first Intl call in a renderer process loads and initialises ICU's locale
// and time-zone data, 15–60 ms that would otherwise land on the main thread
// inside the first render (every date on the first screen goes through
// Intl). That state is process-wide, so doing it here, on another thread
// while the app's code loads, makes the page's own first call cheap. It
// formats with the options the app uses (traces/format.ts, the viewer's
// step times) and exits; nothing reads its result.
new Date(0).toLocaleString(undefined, { year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
new Date(0).toLocaleTimeString();
self.close();
