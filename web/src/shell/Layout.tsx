import { NavLink, useLocation } from "react-router";
import { useState, type ReactNode } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { useAuth } from "../auth/auth";
import { FIRST_PAGE, listQuery } from "../traces/listQuery";
import { saveTheme, storedTheme, type Theme } from "../theme/theme";

/** The left sidebar (navigation, account, theme toggle at the bottom) and the page. */
export function Layout({ children }: { children: ReactNode }) {
  const { me, signOut, may } = useAuth();
  const qc = useQueryClient();
  const { pathname } = useLocation();
  // Opening the list from another page: its first page is asked for on the
  // click, while the list's chunk loads, not once the chunk has rendered
  // (the list's own query takes the request in flight or its answer).
  const openList = () => {
    if (pathname !== "/traces") void qc.prefetchQuery({ ...listQuery(FIRST_PAGE), staleTime: 2000 });
  };
  const [theme, setTheme] = useState<Theme>(storedTheme());
  // On a narrow screen the sidebar is a bar with a Menu button; following a
  // link closes it.
  const [menu, setMenu] = useState(false);
  const toggle = () => {
    const t = theme === "dark" ? "light" : "dark";
    saveTheme(t);
    setTheme(t);
  };
  return (
    <div className="app">
      <aside className={"sidebar" + (menu ? " open" : "")}>
        <div className="brand" aria-hidden="true">
          <span className="logo">✓</span> Critic
        </div>
        <button type="button" className="ghost menu-toggle" aria-expanded={menu} aria-controls="main-nav" onClick={() => setMenu(!menu)}>
          Menu
        </button>
        <nav aria-label="Main" id="main-nav" onClick={() => setMenu(false)}>
          <NavLink to="/traces" onClick={openList}>
            Traces
          </NavLink>
          <NavLink to="/review">Review</NavLink>
          <NavLink to="/models">Models</NavLink>
          <NavLink to="/skills">Skills</NavLink>
          {may("query") && <NavLink to="/sql">SQL</NavLink>}
          <NavLink to="/comparisons">Comparisons</NavLink>
          <NavLink to="/criteria">Criteria</NavLink>
          <NavLink to="/team">Team</NavLink>
        </nav>
        <div className="sidebar-bottom">
          {me && (
            <div className="account">
              <span title={me.user_id}>{me.member && me.member.name !== me.name ? `${me.member.name} · ${me.name}` : me.name}</span>
              {me.member && <span className="badge">{me.member.role}</span>}
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
