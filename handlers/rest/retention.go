package rest

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/handlers/edge"
)

// getRetention is GET /retention[?days=N]: the account's retention period
// and how many traces it would erase now; with days, the count for that
// period instead (the team page's preview before saving).
func (a *API) getRetention(w http.ResponseWriter, r *http.Request) error {
	var preview *int
	if v := r.URL.Query().Get("days"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return domain.InvalidField("days", "days must be a whole number of days, got "+strconv.Quote(v))
		}
		preview = &n
	}
	ret, err := a.d.Backend().GetRetention(r.Context(), edge.CallerFrom(r.Context()), preview)
	return reply(w, http.StatusOK, ret, err)
}

type setRetentionRequest struct {
	// Days is raw so that a missing field (refused) differs from null
	// (retention off).
	Days json.RawMessage `json:"days"`
}

// setRetention is PUT /retention {"days": N|null}: an admin sets how long
// the account keeps a trace after its last activity, or turns it off.
func (a *API) setRetention(w http.ResponseWriter, r *http.Request) error {
	var req setRetentionRequest
	if err := a.decodeBody(w, r, &req); err != nil {
		return err
	}
	var days *int
	switch string(req.Days) {
	case "":
		return domain.InvalidField("days", "days is required: a whole number of days (traces older than this are erased), or null to turn retention off")
	case "null":
	default:
		var n int
		if err := json.Unmarshal(req.Days, &n); err != nil {
			return domain.InvalidField("days", "days must be a whole number of days or null, got "+string(req.Days))
		}
		days = &n
	}
	ret, err := a.d.Backend().SetRetention(r.Context(), edge.CallerFrom(r.Context()), days)
	return reply(w, http.StatusOK, ret, err)
}
