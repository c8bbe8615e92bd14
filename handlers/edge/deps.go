package edge

import (
	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/evaluator"
	"github.com/criticml/critic/handlers/usecase"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/projections/readmodel"
)

// DefaultMaxBody is the request body (or Connect message) limit when none
// is configured: 64 MiB.
const DefaultMaxBody = 64 << 20

// Deps is what the REST API and the Connect services are built over, one
// struct so that both surfaces get the same command and query sides.
type Deps struct {
	Cmds    *commands.Commands
	Queries *readmodel.Queries
	Waiter  *readmodel.Waiter
	Auth    *Authenticator
	// Blobs signs checkpoint and weights downloads.
	Blobs blob.Store
	// Query answers Connect's QueryService (the use case REST's POST /query
	// runs); nil makes Query an internal error, as for REST.
	Query *usecase.Query
	// MaxBody bounds one request body or message; <= 0 is DefaultMaxBody.
	MaxBody int64
	// Assessments makes section summaries and completion estimates; nil (no
	// model configured) makes them unavailable.
	Assessments usecase.Assessments
	// EvaluatorPolicy is the release policy the evaluator endpoints report
	// (CRITIC_EVALUATOR_MIN_SLICE, CRITIC_EVALUATOR_SLICE_TOLERANCE); nil →
	// spec defaults.
	EvaluatorPolicy *evaluator.Policy
	// Workers is where the base-model list learns which bases the workers
	// can load (nil → no worker known), and ModelRoots where a tenant's
	// local base_model may lie (commands.WithModelRoots: the same rule
	// creating a reward model applies, so nothing is offered that would be
	// refused).
	Workers    usecase.Workers
	ModelRoots []string
}

// Backend is the use-case layer over d's command and query sides.
func (d Deps) Backend() usecase.Backend {
	return usecase.Backend{Cmds: d.Cmds, Queries: d.Queries, Waiter: d.Waiter}
}
