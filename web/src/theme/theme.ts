// Dark and light themes: the choice is remembered in localStorage; without
// one the system preference decides.
export type Theme = "dark" | "light";
const KEY = "critic.theme";

export function storedTheme(): Theme {
  const t = localStorage.getItem(KEY);
  if (t === "dark" || t === "light") return t;
  return window.matchMedia?.("(prefers-color-scheme: light)").matches ? "light" : "dark";
}

export function applyTheme(t: Theme) {
  document.documentElement.dataset.theme = t;
}

export function saveTheme(t: Theme) {
  localStorage.setItem(KEY, t);
  applyTheme(t);
}
