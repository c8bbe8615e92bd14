package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/jobs"
	"github.com/criticml/critic/domain/traces"
	"github.com/criticml/critic/platform/blob"
)

// AccountErasure counts what erasing an account takes: what `critic users
// erase` shows before it asks, and what account.erased records after.
type AccountErasure struct {
	AccountID string
	Name      string
	// Erased: the account already has its tombstone.
	Erased       bool
	Traces       int // live traces
	Annotations  int // live annotations on them (ratings, comments, quotes, values)
	RewardModels int
	GepaRuns     int
	Criteria     int
	Guidelines   bool
	Members      int // current members (the implicit admin included)
	APIKeys      int // keys not yet revoked
	// traceIDs, keyIDs and streams are what the erasure walks.
	traceIDs, keyIDs, streams []string
}

// Counts is the plan as account.erased records it: numbers only.
func (p AccountErasure) Counts() map[string]int {
	g := 0
	if p.Guidelines {
		g = 1
	}
	return map[string]int{"traces": p.Traces, "annotations": p.Annotations, "reward_models": p.RewardModels,
		"gepa_runs": p.GepaRuns, "criteria": p.Criteria, "guidelines": g, "members": p.Members, "api_keys": p.APIKeys}
}

// PlanAccountErasure reads from the log what erasing the account would
// take. An unknown account is not found.
// A query on the command side because EraseAccount erases exactly this
// plan and `critic users erase` shows it first: one reading of the log.
func (c *Streams) PlanAccountErasure(ctx context.Context, accountID string) (AccountErasure, error) {
	p := AccountErasure{AccountID: accountID}
	user := events.UserStream(accountID)
	uevs, err := c.loadStream(ctx, user)
	if err != nil {
		return p, err
	}
	if len(uevs) == 0 || uevs[0].Type != events.UserCreated {
		return p, domain.NotFound("user", accountID)
	}
	var created events.UserCreatedV1
	if err := uevs[0].Decode(&created); err != nil {
		return p, err
	}
	p.Name = created.Name
	p.Erased = slices.ContainsFunc(uevs, func(e events.Envelope) bool { return e.Type == events.AccountErased })
	if p.Erased {
		return p, nil
	}

	traceStreams, err := c.store.OwnerStreams(ctx, accountID, events.TraceStream(""), 0)
	if err != nil {
		return p, err
	}
	for chunk := range slices.Chunk(traceStreams, 200) {
		loaded, err := c.store.LoadStreams(ctx, chunk)
		if err != nil {
			return p, err
		}
		for _, s := range chunk {
			id := strings.TrimPrefix(s, events.TraceStream(""))
			st, err := traces.Fold(id, loaded[s])
			if err != nil {
				return p, err
			}
			if !st.Exists || st.OwnerID != accountID {
				continue
			}
			p.Traces++
			p.Annotations += len(st.Annotations)
			p.traceIDs = append(p.traceIDs, id)
		}
	}

	keyStreams, err := c.store.OwnerStreams(ctx, accountID, events.APIKeyStream(""), 0)
	if err != nil {
		return p, err
	}
	keys, err := c.store.LoadStreams(ctx, keyStreams)
	if err != nil {
		return p, err
	}
	for _, s := range keyStreams {
		evs := keys[s]
		if len(evs) == 0 || evs[0].Type != events.APIKeyIssued ||
			slices.ContainsFunc(evs, func(e events.Envelope) bool { return e.Type == events.APIKeyRevoked }) {
			continue
		}
		p.APIKeys++
		p.keyIDs = append(p.keyIDs, strings.TrimPrefix(s, events.APIKeyStream("")))
	}

	team, _, err := c.loadTeam(ctx, accountID)
	if err != nil {
		return p, err
	}
	p.Members = len(team.List())

	// Every other stream of the account: models, scores, scoring runs,
	// skills, criteria, guidelines, members, sources. Their blob keys are
	// read from them before the account key goes.
	all, err := c.store.OwnerStreams(ctx, accountID, "", 0)
	if err != nil {
		return p, err
	}
	for _, s := range all {
		if strings.HasPrefix(s, events.TraceStream("")) || strings.HasPrefix(s, events.APIKeyStream("")) || s == user {
			continue
		}
		p.streams = append(p.streams, s)
		switch {
		case strings.HasPrefix(s, events.RewardModelStream("")):
			p.RewardModels++
		case strings.HasPrefix(s, events.GepaRunStream("")):
			p.GepaRuns++
		}
	}
	other, err := c.store.LoadStreams(ctx, []string{events.CriteriaStream(accountID), events.GuidelinesStream(accountID)})
	if err != nil {
		return p, err
	}
	for _, e := range other[events.CriteriaStream(accountID)] {
		if e.Type == events.CriterionDefined {
			p.Criteria++
		}
	}
	p.Guidelines = len(other[events.GuidelinesStream(accountID)]) > 0
	return p, nil
}

// EraseAccount erases an account for good (issue 37, `critic users erase`):
//
//  1. every API key is revoked (api_key.revoked): from then on every API
//     instance answers the account's keys with 401, and nothing new arrives;
//  2. every trace is erased as a deletion erases one (eraseTrace:
//     trace.deleted, trace.erased naming by and the reason; its data key
//     is destroyed, so its content, annotations, comments and quotes stop
//     opening anywhere; its claim-checked blobs and the datasets quoting
//     it are deleted; critic_traces_erased_total{reason="account"});
//  3. every blob the account's other streams name (checkpoints, datasets,
//     extraction inputs, score files, scoring inputs, GEPA examples) is
//     deleted: the events stay, the objects go;
//  4. the account's own data key is destroyed (Store.EraseAccountKey):
//     its models, learning reports, skills, criteria, guidelines, member
//     and source names stop opening;
//  5. account.erased is appended to the user stream: read models and
//     snapshots drop every row the account still has.
//
// Each step can be run again: a failure part way leaves an account whose
// keys are revoked, and a second run finishes it. An account that already
// has its tombstone is a conflict.
type EraseAccount struct {
	AccountID string
	By        string
	Reason    string
}

// EraseAccountHandler runs EraseAccount.
type EraseAccountHandler struct{ *Streams }

func (c EraseAccountHandler) Handle(ctx context.Context, cmd EraseAccount) (AccountErasure, Result, error) {
	p, err := c.PlanAccountErasure(ctx, cmd.AccountID)
	if err != nil {
		return p, Result{}, err
	}
	if p.Erased {
		return p, Result{}, &domain.ConflictError{Code: "account_erased", Message: "account " + p.Name + " (" + cmd.AccountID + ") is already erased"}
	}
	revoke := RevokeAPIKeyHandler{c.Streams}
	for _, k := range p.keyIDs {
		if _, err := revoke.Handle(ctx, RevokeAPIKey{KeyID: k}); err != nil {
			if _, ok := errors.AsType[*domain.ConflictError](err); !ok {
				return p, Result{}, fmt.Errorf("erase account %s: revoke key %s: %w", p.Name, k, err)
			}
		}
	}
	actor := Actor{UserID: cmd.AccountID, Moderates: true}
	for _, id := range p.traceIDs {
		if _, err := c.eraseTrace(ctx, actor, id, ErasedAccount, cmd.By, "account erased: "+cmd.Reason, nil); err != nil {
			if _, ok := errors.AsType[*domain.NotFoundError](err); !ok { // deleted meanwhile: fine
				return p, Result{}, fmt.Errorf("erase account %s: erase trace %s: %w", p.Name, id, err)
			}
		}
	}
	if err := c.eraseAccountBlobs(ctx, p); err != nil {
		return p, Result{}, err
	}
	if err := c.store.EraseAccountKey(ctx, cmd.AccountID); err != nil {
		return p, Result{}, fmt.Errorf("erase account %s: destroy its data key: %w", p.Name, err)
	}
	user := events.UserStream(cmd.AccountID)
	r, err := retryOnConflict(func() (Result, error) {
		evs, err := c.loadStream(ctx, user)
		if err != nil {
			return Result{}, err
		}
		return c.appendEvent(ctx, Actor{}, user, cmd.AccountID, evs[len(evs)-1].Version, events.AccountErased,
			events.AccountErasedV1{AccountID: cmd.AccountID, By: cmd.By, Reason: cmd.Reason, At: time.Now().UTC().Format(time.RFC3339), Counts: p.Counts()})
	})
	return p, r, err
}

// eraseAccountBlobs deletes every blob the account's non-trace streams name,
// and the per-attempt objects a model's stream implies (a worker may have
// written score files no event names yet). A blob key of the account always
// holds the account's id as a path segment, which is how the names are
// found in the payloads; a missing object is fine.
func (c *Streams) eraseAccountBlobs(ctx context.Context, p AccountErasure) error {
	var keys []string
	for chunk := range slices.Chunk(p.streams, 200) {
		loaded, err := c.store.LoadStreams(ctx, chunk)
		if err != nil {
			return err
		}
		for _, s := range chunk {
			for _, e := range loaded[s] {
				keys = append(keys, blobKeysIn(e.Payload, p.AccountID)...)
			}
		}
	}
	for _, s := range p.streams {
		if !strings.HasPrefix(s, events.RewardModelStream("")) {
			if id, ok := strings.CutPrefix(s, events.GepaRunStream("")); ok {
				keys = append(keys, jobs.GepaExamplesKey(p.AccountID, id))
			}
			continue
		}
		st, err := c.Model(ctx, strings.TrimPrefix(s, events.RewardModelStream("")))
		if err != nil {
			if _, ok := errors.AsType[*domain.NotFoundError](err); ok {
				continue // a stream the store no longer opens
			}
			return err
		}
		keys = append(keys, jobs.ArtifactKey(p.AccountID, st.ID))
		for a := 1; a <= max(st.Attempt, 1); a++ {
			keys = append(keys, DatasetKey(p.AccountID, st.ID, a), jobs.ExtractionInputsKey(p.AccountID, st.ID, a),
				jobs.ScoresKey(p.AccountID, st.ID, a), jobs.ActionScoresKey(p.AccountID, st.ID, a))
		}
	}
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		if err := c.store.Blobs().Delete(ctx, k); err != nil && !errors.Is(err, blob.ErrNotFound) {
			return fmt.Errorf("erase account %s: delete blob %s: %w", p.Name, k, err)
		}
	}
	return nil
}

// blobKeysIn returns the strings of a JSON payload that are blob keys of
// the account: a relative path with the account's id as a segment.
func blobKeysIn(payload json.RawMessage, accountID string) []string {
	var v any
	if json.Unmarshal(payload, &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for _, y := range x {
				walk(y)
			}
		case []any:
			for _, y := range x {
				walk(y)
			}
		case string:
			if !strings.HasPrefix(x, "/") && !strings.Contains(x, "://") && !strings.Contains(x, " ") &&
				strings.Contains(x, "/"+accountID+"/") {
				out = append(out, x)
			}
		}
	}
	walk(v)
	return out
}
