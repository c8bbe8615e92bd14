import { Component, lazy, type ComponentType, type ReactNode } from "react";
import { useLocation } from "react-router";

/**
 * A page loaded from its own chunk. The module's export named `name` is
 * the page (named exports everywhere else in the app, so no default
 * exports just for this).
 */
export function page<K extends string>(name: K, load: () => Promise<Record<K, ComponentType>>) {
  return lazy(async () => ({ default: (await load())[name] }));
}

type BoundaryState = { failed: Error | null; at: string };

class Boundary extends Component<{ at: string; children: ReactNode }, BoundaryState> {
  state: BoundaryState = { failed: null, at: this.props.at };
  static getDerivedStateFromError(failed: Error) {
    return { failed };
  }
  // Another page is another chunk: navigating away clears the error.
  static getDerivedStateFromProps(p: { at: string }, s: BoundaryState) {
    return p.at !== s.at ? { failed: null, at: p.at } : null;
  }
  render() {
    if (!this.state.failed) return this.props.children;
    return (
      <main className="main">
        <h1>This page could not be loaded</h1>
        <p role="alert">
          {/* The usual cause: the server was upgraded while this tab was open, and the old build's files are gone. */}
          The page's code did not load ({this.state.failed.message}). If Critic was just upgraded, reloading fetches the new version.
        </p>
        <p>
          <button type="button" className="primary" onClick={() => location.reload()}>
            Reload
          </button>
        </p>
      </main>
    );
  }
}

/** Shows a page whose chunk failed to load as a page that says so and offers a reload, instead of a blank screen. */
export function ChunkBoundary({ children }: { children: ReactNode }) {
  const { pathname } = useLocation();
  return <Boundary at={pathname}>{children}</Boundary>;
}
