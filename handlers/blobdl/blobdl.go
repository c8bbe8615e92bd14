// Package blobdl serves the local blob store's signed download URLs. A
// single-machine deployment has no S3 to hand out presigned links, so the API
// plays that role: GET /blobs/<key>?expires=…&sig=… streams the file to anyone
// holding an unexpired link, with no API key — the user downloads a
// checkpoint with plain curl, never forwarding their key (spec: "Downloading
// the weights").
//
// Mount it outside the authentication middleware:
//
//	mux.Handle(blobdl.Pattern, blobdl.Handler(local))
package blobdl

import (
	"errors"
	"net/http"
	"time"

	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/platform/blob"
)

// Pattern is the route the handler answers; blob.Local.SignedURL builds URLs
// under it. GET patterns also match HEAD.
const Pattern = "GET /blobs/{key...}"

// Handler serves store's objects to requests whose signature verifies. It
// routes by Pattern itself, so it works mounted on a mux under Pattern (or
// "/blobs/") and served directly (tests).
func Handler(store *blob.Local) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(Pattern, func(w http.ResponseWriter, r *http.Request) { serve(store, w, r) })
	return mux
}

func serve(store *blob.Local, w http.ResponseWriter, r *http.Request) {
	key := r.PathValue("key")
	q := r.URL.Query()
	// The signature is checked before the key is even looked at, so an
	// unsigned request learns nothing about which objects exist.
	switch err := store.VerifySignature(key, q.Get("expires"), q.Get("sig"), time.Now()); {
	case errors.Is(err, blob.ErrExpired):
		deny(w, "this download link has expired; request a new one", "link_expired")
		return
	case err != nil:
		deny(w, "invalid download signature", "bad_signature")
		return
	}
	f, fi, err := store.Open(key)
	switch {
	case errors.Is(err, blob.ErrNotFound), errors.Is(err, blob.ErrInvalidKey):
		edge.WriteJSON(w, http.StatusNotFound, edge.ErrorBody{Detail: "object not found", Code: "not_found"})
		return
	case err != nil:
		edge.WriteError(w, err)
		return
	}
	defer f.Close()
	hd := w.Header()
	hd.Set("Content-Type", blob.ContentType(key))
	hd.Set("Content-Disposition", blob.ContentDisposition(key))
	hd.Set("X-Content-Type-Options", "nosniff")
	// The link is a bearer credential: keep it and the bytes out of shared
	// caches and Referer headers.
	hd.Set("Cache-Control", "private, no-store")
	hd.Set("Referrer-Policy", "no-referrer")
	// ServeContent sets Content-Length, streams from the file (no
	// buffering) and honours Range, so an interrupted multi-hundred-MB
	// download can resume with curl -C -.
	http.ServeContent(w, r, "", fi.ModTime(), f)
}

func deny(w http.ResponseWriter, detail, code string) {
	edge.WriteJSON(w, http.StatusForbidden, edge.ErrorBody{Detail: detail, Code: code})
}
