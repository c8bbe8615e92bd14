// Package web serves Critic's browser app, built by `make web` into
// web/dist and embedded into the binary, at / on the API port (DESIGN §14).
//
// The build output is not committed (hashed file names churn); only
// dist/.keep is, so `go build` and `go test` work on a clone without Node,
// and such a binary answers every page with one that says how to build the
// app instead of a bare 404.
package web

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed all:dist
var dist embed.FS

// Pattern is where the app is mounted; every more specific route (the API,
// /healthz, Connect) wins over it in a ServeMux. It names no method: "GET /"
// would conflict with the method-less /api/v1/rm/ catch-all.
const Pattern = "/"

// Handler serves the embedded build.
func Handler() http.Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // "dist" is embedded above; Sub cannot fail on it
	}
	return NewHandler(sub)
}

// Built reports whether the binary carries the app (make web ran before
// go build), for the startup banner.
func Built() bool {
	_, err := fs.Stat(dist, "dist/index.html")
	return err == nil
}

// contentSecurityPolicy lets the app load only its own scripts and talk only
// to its own origin: trace content is untrusted and rendered as markdown, so
// even a sanitizer miss cannot run script or send data elsewhere. Inline
// style attributes are allowed (virtualized rows position themselves).
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

// NewHandler serves a Vite build in fsys: files as they are (hashed assets
// under assets/ cached forever, everything else revalidated), any other
// path as index.html so client routes deep-link, and never the app for
// /api/… (a mistyped API call gets a JSON 404, not HTML).
func NewHandler(fsys fs.FS) http.Handler {
	files := http.FileServerFS(fsys)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p == "/api" || strings.HasPrefix(p, "/api/") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"detail":"route ` + r.Method + ` not found under /api","code":"not_found"}` + "\n"))
			return
		}
		// Anything but GET/HEAD is no page: a 404 (not 405), so a gRPC or
		// Connect call to an unknown service still reads as unimplemented.
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.NotFound(w, r)
			return
		}
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		index, err := fs.ReadFile(fsys, "index.html")
		if err != nil {
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Cache-Control", "no-cache")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte(placeholder))
			return
		}
		name := strings.TrimPrefix(path.Clean(p), "/")
		if name != "" && name != "index.html" {
			if st, err := fs.Stat(fsys, name); err == nil && !st.IsDir() {
				if strings.HasPrefix(name, "assets/") {
					h.Set("Cache-Control", "public, max-age=31536000, immutable")
				} else {
					h.Set("Cache-Control", "no-cache")
				}
				files.ServeHTTP(w, r)
				return
			}
			// A missing file that looks like a build asset is a 404: an old
			// tab asking for a chunk of a previous build must not get HTML.
			if strings.HasPrefix(name, "assets/") || path.Ext(name) != "" {
				http.NotFound(w, r)
				return
			}
		}
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(index)
		}
	})
}

// placeholder is the page of a binary built without the app.
const placeholder = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Critic: web app not built</title></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 4rem auto; line-height: 1.5">
<h1>The web app is not built into this binary</h1>
<p>Run <code>make web</code> (needs Node.js 20 and npm), then rebuild with <code>make build</code>,
or simply run <code>make run</code>, which does both.</p>
<p>The REST API is available under <code>/api/v1/rm</code>; its OpenAPI document is
<a href="/api/v1/rm/openapi.json">/api/v1/rm/openapi.json</a>.</p>
</body></html>
`
