package rest

import (
	"net/http"
	"strconv"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/handlers/usecase"
)

func jsonlHeaders(w http.ResponseWriter, name string) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
}

func (a *API) exportTraces(w http.ResponseWriter, r *http.Request) error {
	jsonlHeaders(w, "traces.jsonl")
	return a.queries.ExportTraces(r.Context(), edge.CallerFrom(r.Context()).UserID, w)
}

func (a *API) exportAnnotations(w http.ResponseWriter, r *http.Request) error {
	jsonlHeaders(w, "annotations.jsonl")
	return a.queries.ExportAnnotations(r.Context(), edge.CallerFrom(r.Context()).UserID, w)
}

// exportPairs writes the exact preference pairs training would use on all of
// the caller's traces (?max_pairs, default 4000).
func (a *API) exportPairs(w http.ResponseWriter, r *http.Request) error {
	var maxPairs *int
	if v := r.URL.Query().Get("max_pairs"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return usecase.InvalidMaxPairs()
		}
		maxPairs = &n
	}
	pairs, err := a.backend().Pairs(r.Context(), edge.CallerFrom(r.Context()).UserID, maxPairs)
	if err != nil {
		return err
	}
	jsonlHeaders(w, "pairs.jsonl")
	_, err = w.Write(domain.MarshalPairsJSONL(pairs))
	return err
}
