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
	return a.d.Queries.ExportTraces(r.Context(), edge.CallerFrom(r.Context()).UserID, w)
}

func (a *API) exportAnnotations(w http.ResponseWriter, r *http.Request) error {
	member, err := a.memberParam(r)
	if err != nil {
		return err
	}
	jsonlHeaders(w, "annotations.jsonl")
	return a.d.Queries.ExportAnnotationsBy(r.Context(), edge.CallerFrom(r.Context()).UserID, member, w)
}

// exportPairs writes preference pairs as JSONL. With ?reward_model_id it is
// exactly that model's training pairs, in order, as its stored dataset
// holds them (the selected traces, as annotated when the dataset was built;
// max_pairs does not apply: the model's own cap already did). Without it,
// it is the pairs training would build right now from all of the caller's
// traces, in the order training would use them (?max_pairs, default 4000):
// a preview, not any model's dataset; ?member= builds it from that member's
// ratings alone.
func (a *API) exportPairs(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	caller := edge.CallerFrom(r.Context())
	var pairs []domain.Pair
	var err error
	if q.Has("reward_model_id") {
		if q.Has("max_pairs") {
			return domain.InvalidField("max_pairs", "max_pairs does not apply with reward_model_id: the model's dataset is exported as it is")
		}
		if q.Has("member") {
			return domain.InvalidField("member", "member does not apply with reward_model_id: the model's dataset is exported as it is")
		}
		pairs, err = a.d.Backend().ModelPairs(r.Context(), a.d.Blobs, caller.UserID, q.Get("reward_model_id"))
	} else {
		var maxPairs *int
		if v := q.Get("max_pairs"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return usecase.InvalidMaxPairs()
			}
			maxPairs = &n
		}
		var member string
		if member, err = a.memberParam(r); err != nil {
			return err
		}
		pairs, err = a.d.Backend().PairsBy(r.Context(), caller.UserID, member, maxPairs)
	}
	if err != nil {
		return err
	}
	jsonlHeaders(w, "pairs.jsonl")
	_, err = w.Write(domain.MarshalPairsJSONL(pairs))
	return err
}
