import { defineConfig, type Plugin } from "vite";
import react from "@vitejs/plugin-react";

/**
 * Writes into index.html, as <meta name="critic-route-chunks">, the files
 * each lazily loaded module needs beyond the entry (its chunk and the shared
 * chunks it imports), keyed by chunk name ("TraceViewer", "markdown", …).
 * public/preload.js, which runs before the entry is even fetched,
 * modulepreloads the current route's files from it, so the page's code
 * downloads and compiles alongside the shell instead of after it.
 */
const PLACEHOLDER = '<meta name="critic-route-chunks" />';

function routeChunks(): Plugin {
  return {
    name: "critic-route-chunks",
    apply: "build",
    transformIndexHtml: {
      order: "post",
      handler(html, ctx) {
        const bundle = ctx.bundle;
        if (!bundle) return;
        const imports = (f: string) => {
          const c = bundle[f];
          return c && c.type === "chunk" ? c.imports : [];
        };
        const closure = (f: string, into = new Set<string>()) => {
          if (!into.has(f)) {
            into.add(f);
            for (const i of imports(f)) closure(i, into);
          }
          return into;
        };
        const chunks = Object.values(bundle).flatMap((c) => (c.type === "chunk" ? [c] : []));
        const entry = chunks.find((c) => c.isEntry);
        if (!entry) throw new Error("critic-route-chunks: the build has no entry chunk");
        const shell = closure(entry.fileName);
        const lazy = new Set(chunks.flatMap((c) => c.dynamicImports));
        const routes: Record<string, string[]> = {};
        for (const c of chunks)
          if (lazy.has(c.fileName) && !c.isEntry) {
            if (routes[c.name]) throw new Error(`critic-route-chunks: two lazy modules are both named ${c.name}; preload.js could not tell them apart`);
            routes[c.name] = [...closure(c.fileName)].filter((f) => !shell.has(f)).map((f) => "/" + f);
          }
        if (!html.includes(PLACEHOLDER)) throw new Error(`critic-route-chunks: index.html lost its ${PLACEHOLDER} (preload.js reads it)`);
        const attr = JSON.stringify(routes).replace(/&/g, "&amp;").replace(/"/g, "&quot;");
        return html.replace(PLACEHOLDER, `<meta name="critic-route-chunks" content="${attr}" />`);
      },
    },
  };
}

// base "./" keeps the app working under a path prefix; assets/ names are
// content-hashed, which is what lets the Go server cache them forever.
export default defineConfig({
  base: "/",
  plugins: [react(), routeChunks()],
  // The app is written against React's API (types from @types/react) and
  // bundled with Preact's implementation of it (preact/compat, Preact 11,
  // which follows React 19: refs as props, useId, useSyncExternalStore).
  // react-dom alone was two thirds of the entry (303 kB → 103 kB): a cold
  // first screen went from 590–890 ms to 350–450 ms (make bench-ui,
  // web/BENCH_UI.md); the whole browser suite runs on this build.
  resolve: {
    alias: [
      { find: /^react-dom\/client$/, replacement: "preact/compat/client" },
      { find: /^react-dom$/, replacement: "preact/compat" },
      { find: /^react\/jsx-runtime$/, replacement: "preact/jsx-runtime" },
      { find: /^react\/jsx-dev-runtime$/, replacement: "preact/jsx-dev-runtime" },
      { find: /^react$/, replacement: "preact/compat" },
    ],
  },
  build: {
    outDir: "dist",
    assetsDir: "assets",
    sourcemap: false,
    chunkSizeWarningLimit: 1500,
    rolldownOptions: {
      // react-router feature-detects React 19's useOptimistic and falls back
      // when it is absent, as it is from preact/compat: not a problem.
      onwarn(w, warn) {
        if (w.code === "IMPORT_IS_UNDEFINED" && w.message.includes("useOptimistic")) return;
        warn(w);
      },
    },
  },
  server: { proxy: { "/api": "http://127.0.0.1:8080" } },
});
