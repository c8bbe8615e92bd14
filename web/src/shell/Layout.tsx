import { NavLink } from "react-router";
import { useState, type ReactNode } from "react";
import { useAuth } from "../auth/auth";
import { saveTheme, storedTheme, type Theme } from "../theme/theme";

/** The left sidebar (navigation, account, theme toggle at the bottom) and the page. */
export function Layout({ children }: { children: ReactNode }) {
  const { me, signOut } = useAuth();
  const [theme, setTheme] = useState<Theme>(storedTheme());
  const toggle = () => {
    const t = theme === "dark" ? "light" : "dark";
    saveTheme(t);
    setTheme(t);
  };
  return (
    <div className="app">
      <aside className="sidebar">
        <div className="brand" aria-hidden="true">
          <span className="logo">✓</span> Critic
        </div>
        <nav aria-label="Main">
          <NavLink to="/traces">Traces</NavLink>
          <NavLink to="/review">Review</NavLink>
          <NavLink to="/models">Models</NavLink>
          <NavLink to="/skills">Skills</NavLink>
          <NavLink to="/sql">SQL</NavLink>
          <NavLink to="/comparisons">Comparisons</NavLink>
        </nav>
        <div className="sidebar-bottom">
          {me && (
            <div className="account">
              <span title={me.user_id}>{me.name}</span>
              {me.read_only && <span className="badge">read-only</span>}
            </div>
          )}
          <button type="button" className="ghost" onClick={signOut}>
            Sign out
          </button>
          <button type="button" className="ghost" onClick={toggle} title={`${theme === "dark" ? "Dark" : "Light"} theme: switch to ${theme === "dark" ? "light" : "dark"}`}>
            <span aria-hidden="true">{theme === "dark" ? "☾ " : "☀ "}</span>Theme
          </button>
        </div>
      </aside>
      <div className="page">
        {children}
      </div>
    </div>
  );
}
