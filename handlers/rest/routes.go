// Package rest serves the REST API under /api/v1/rm exactly as spec 001's
// "REST API" table describes it. Handlers are thin: decode → command or
// query → respond; every error goes through edge.WriteError.
package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/members"
	"github.com/criticml/critic/handlers/edge"
)

// Prefix is where the API lives.
const Prefix = "/api/v1/rm"

// TranscriptsPath is where agent session recorders upload transcripts.
const TranscriptsPath = "/api/v1/me/transcripts"

// API holds the REST handlers' dependencies.
type API struct {
	d edge.Deps
	// routes is what Register registered (Routes).
	routes []Route
}

// New returns the REST API over d.
func New(d edge.Deps) *API {
	if d.MaxBody <= 0 {
		d.MaxBody = edge.DefaultMaxBody
	}
	return &API{d: d}
}

// Route is one registered route and the permission its caller's role
// needs (domain/members), checked by edge.Require before the handler runs.
type Route struct {
	Pattern    string // "METHOD /path" (under Prefix, except TranscriptsPath)
	Permission members.Permission
}

// Routes lists what Register registered, for tests that walk every route.
func (a *API) Routes() []Route { return a.routes }

// Register adds every route to mux, behind authentication (except the
// OpenAPI document), each declaring the permission it needs.
func (a *API) Register(mux Mux) {
	route := func(pattern string, perm members.Permission, h func(http.ResponseWriter, *http.Request) error) {
		a.routes = append(a.routes, Route{Pattern: pattern, Permission: perm})
		method, path, _ := strings.Cut(pattern, " ")
		mux.Handle(method+" "+Prefix+path, a.d.Auth.Middleware(edge.Require(perm, handle(textChecked(pathWildcards(path), h)))))
	}
	mux.Handle("GET "+OpenAPIPath, http.HandlerFunc(serveOpenAPI))
	mux.Handle("POST "+Prefix+InvitationsAcceptPath, handle(a.acceptInvitation))
	route("GET /me", members.Read, a.me)
	route("GET /formats", members.Read, a.listFormats)
	route("POST /traces/import", members.Ingest, a.importTraces)
	route("GET /traces", members.Read, a.listTraces)
	route("GET /traces/{trace_id}", members.Read, a.getTrace)
	route("DELETE /traces/{trace_id}", members.Delete, a.deleteTrace)
	route("PUT /traces/{trace_id}/contribution", members.Manage, a.setContribution)
	route("GET /comparisons/queue", members.Read, a.comparisonQueue)
	route("POST /comparisons", members.Annotate, a.reviewComparison)
	route("GET /review-queue", members.Read, a.reviewQueue)
	route("GET /review-overlap", members.Read, a.getReviewOverlap)
	route("PUT /review-overlap", members.Manage, a.setReviewOverlap)
	route("GET /retention", members.Read, a.getRetention)
	route("PUT /retention", members.Manage, a.setRetention)
	route("GET /agreement", members.Read, a.agreement)
	route("GET /disputed", members.Read, a.disputed)
	route("POST /traces/{trace_id}/adjudications", members.Manage, a.adjudicate)
	route("GET /evaluator", members.Read, a.getEvaluator)
	route("PUT /trace-sources", members.Manage, a.renameSource)
	route("GET /criteria", members.Read, a.listCriteria)
	route("POST /criteria", members.Manage, a.defineCriterion)
	route("PATCH /criteria/{criterion_id}", members.Manage, a.changeCriterion)
	route("DELETE /criteria/{criterion_id}", members.Manage, a.archiveCriterion)
	route("GET /guidelines", members.Read, a.getGuidelines)
	route("PUT /guidelines", members.Manage, a.setGuidelines)
	route("POST /traces/{trace_id}/annotations", members.Annotate, a.addAnnotation)
	route("PATCH /annotations/{annotation_id}", members.Annotate, a.editAnnotation)
	route("DELETE /annotations/{annotation_id}", members.Annotate, a.removeAnnotation)
	route("POST /traces/{trace_id}/score", members.Train, a.scoreTrace)
	route("POST /traces/{trace_id}/section-summaries", members.Annotate, a.sectionSummaries)
	route("POST /traces/{trace_id}/completion", members.Annotate, a.completion)
	route("POST /traces/{trace_id}/labeling/retry", members.Train, a.retryLabeling)
	route("POST /traces/{trace_id}/labeling/rescore", members.Train, a.rescoreLabels)
	route("POST /traces/{trace_id}/evaluator/rescore", members.Train, a.rescoreWithEvaluator)
	route("GET /base-models", members.Read, a.listBaseModels)
	route("POST /reward-models", members.Train, a.createRewardModel)
	route("GET /reward-models", members.Read, a.listRewardModels)
	route("GET /reward-models/{model_id}", members.Read, a.getRewardModel)
	route("POST /reward-models/{model_id}/retry", members.Train, a.retryRewardModel)
	route("PUT /reward-models/{model_id}/background-scoring", members.Train, a.setBackgroundScoring)
	route("GET /reward-models/{model_id}/weights", members.Read, a.weights)
	route("POST /gepa-runs", members.Train, a.createGepaRun)
	route("GET /gepa-runs", members.Read, a.listGepaRuns)
	route("GET /gepa-runs/{run_id}", members.Read, a.getGepaRun)
	route("GET /gepa-runs/{run_id}/skill", members.Read, a.gepaSkill)
	route("GET /export/traces", members.Read, a.exportTraces)
	route("GET /export/annotations", members.Read, a.exportAnnotations)
	route("GET /export/pairs", members.Read, a.exportPairs)
	route("GET /export/account", members.Manage, a.exportAccount)
	route("GET /members", members.Read, a.listMembers)
	route("GET /members/progress", members.Read, a.membersProgress)
	route("POST /members", members.Manage, a.addMember)
	route("PATCH /members/{member_id}", members.Manage, a.changeMember)
	route("DELETE /members/{member_id}", members.Manage, a.removeMember)
	// The native upload path of session recorders lives outside /rm.
	a.routes = append(a.routes, Route{Pattern: "POST " + TranscriptsPath, Permission: members.Ingest})
	mux.Handle("POST "+TranscriptsPath, a.d.Auth.Middleware(edge.Require(members.Ingest, handle(textChecked(nil, a.uploadTranscript)))))
	// Anything else under the prefix is a 404 in the API's error shape (after
	// auth, so unauthenticated probing learns nothing).
	mux.Handle(Prefix+"/", a.d.Auth.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		edge.WriteError(w, &domain.NotFoundError{What: "route " + r.Method + " " + r.URL.Path})
	})))
}

// handle serves h, every error it returns leaving through edge.WriteError.
func handle(h func(http.ResponseWriter, *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			edge.WriteError(w, err)
		}
	})
}

// textChecked is h behind checkRequestText for the route's path wildcards.
func textChecked(wildcards []string, h func(http.ResponseWriter, *http.Request) error) func(http.ResponseWriter, *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := checkRequestText(r, wildcards); err != nil {
			return err
		}
		return h(w, r)
	}
}

// pathWildcards lists the {names} of a route pattern's path.
func pathWildcards(path string) []string {
	var out []string
	for seg := range strings.SplitSeq(path, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok {
			out = append(out, strings.TrimSuffix(strings.TrimSuffix(name, "}"), "..."))
		}
	}
	return out
}

// checkRequestText is the REST edge's text rule (domain.CheckText) for
// what reaches a handler outside the body: every path id and every query
// parameter (name and values), decoded, is checked before any handler
// sees it, so no handler has to remember to. A query string that cannot
// be decoded (a bad percent escape) is refused, not silently dropped.
func checkRequestText(r *http.Request, wildcards []string) error {
	for _, name := range wildcards {
		if err := domain.CheckText(name, r.PathValue(name), domain.MaxIDBytes); err != nil {
			return err
		}
	}
	if r.URL.RawQuery == "" {
		return nil
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return &domain.ValidationError{Code: "invalid_text", Field: "query", Message: "the query string cannot be decoded: " + err.Error()}
	}
	for _, name := range slices.Sorted(maps.Keys(q)) {
		if err := domain.CheckText("query", name, domain.MaxNameBytes); err != nil {
			return err
		}
		for _, v := range q[name] {
			if err := domain.CheckText(name, v, domain.MaxQueryParamBytes); err != nil {
				return err
			}
		}
	}
	return nil
}

// reply writes v with status, or returns err for the route's error
// mapping: the end every handler that answers a value shares.
func reply(w http.ResponseWriter, status int, v any, err error) error {
	if err != nil {
		return err
	}
	edge.WriteJSON(w, status, v)
	return nil
}

// noContent answers 204, or returns err for the route's error mapping: the
// end of every handler that answers nothing.
func noContent(w http.ResponseWriter, err error) error {
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// decodeBody reads a JSON body strictly: unknown fields and trailing data are
// 422 naming the field, a body over the limit is 413.
func (a *API) decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	body, err := a.readBody(w, r)
	if err != nil {
		return err
	}
	return decodeBodyBytes(body, v)
}

// readBody reads the request body within the size limit.
func (a *API) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, a.d.MaxBody))
	if err != nil {
		if mbe, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, &domain.TooLargeError{Limit: mbe.Limit}
		}
		return nil, domain.Invalid("could not read the request body: %v", err)
	}
	return body, nil
}

// decodeBodyBytes decodes a read body strictly (see decodeBody).
func decodeBodyBytes(body []byte, v any) error {
	// Every string of every JSON body passes the edge's text rule, named
	// by its path (encoding/json would silently turn invalid UTF-8 into
	// U+FFFD and keep U+0000, which the stores refuse).
	if err := domain.CheckJSON("", body); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			f = strings.Trim(f, `"`)
			return &domain.ValidationError{Code: "unknown_field", Field: f, Message: "unknown field " + f}
		}
		if typ, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return domain.InvalidField(typ.Field, "expected "+typ.Type.String()+", got JSON "+typ.Value)
		}
		return domain.Invalid("malformed JSON body: %v", err)
	}
	if dec.More() {
		return domain.Invalid("malformed JSON body: unexpected data after the object")
	}
	return nil
}
