package rest

import (
	"archive/zip"
	"net/http"
	"time"

	"github.com/criticml/critic/handlers/edge"
)

// exportAccount streams the caller's whole account as a zip (issue 37,
// "export before erase"): traces.jsonl (re-importable with `critic import`),
// annotations.jsonl, pairs.jsonl, reward_models.json, skills.json,
// criteria.json, members.json and manifest.json. A zip because it streams
// file by file without knowing a file's size first (a tar header needs it)
// and every desktop opens it. Admins only: it holds every member's work.
func (a *API) exportAccount(w http.ResponseWriter, r *http.Request) error {
	caller := edge.CallerFrom(r.Context())
	now := time.Now().UTC()
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", `attachment; filename="critic-account-`+now.Format("20060102-150405")+`.zip"`)
	zw := zip.NewWriter(w)
	if _, err := a.d.Backend().ExportAccount(r.Context(), caller.UserID, caller.Name, zw, now); err != nil {
		return err
	}
	return zw.Close()
}
