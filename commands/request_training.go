package commands

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
)

// RequestTrainingInput is what POST /reward-models asks.
type RequestTrainingInput struct {
	Name      string
	TraceIDs  []string
	BaseModel string
	Epochs    int
	MaxPairs  int
	// Config is training_config (nil: the defaults).
	Config *TrainingConfig
}

// TrainingConfig is training_config as a client sent it (nil = absent).
type TrainingConfig struct {
	AnnotationSource *string
	InputVersion     *int
	Criteria         []string
	// CriteriaSet distinguishes "criteria": [] (refused) from absent.
	CriteriaSet bool
	// Criterion is the id of a criterion of the account to train on.
	Criterion *string
	// ExcludeDisputed leaves out disputed, unadjudicated targets (issue 36).
	ExcludeDisputed *bool
}

// badConfig refuses the training_config field named.
func badConfig(field, msg string) error { return domain.InvalidField("training_config."+field, msg) }

// checkConfig applies training_config's defaults and refuses what cannot
// run, naming the field.
func checkConfig(in *TrainingConfig) (events.TrainingConfig, error) {
	cfg := events.TrainingConfig{AnnotationSource: events.SourceFeedback, InputVersion: 1, ThinkingExcluded: true}
	if in == nil {
		return cfg, nil
	}
	if in.AnnotationSource != nil {
		switch *in.AnnotationSource {
		case events.SourceExplicit, events.SourceFeedback, events.SourceAutomatic:
			cfg.AnnotationSource = *in.AnnotationSource
		default:
			return cfg, badConfig("annotation_source", fmt.Sprintf("%q is not explicit, feedback or automatic", *in.AnnotationSource))
		}
	}
	if in.InputVersion != nil {
		if *in.InputVersion != 1 && *in.InputVersion != 3 {
			return cfg, badConfig("input_version", fmt.Sprintf("input_version must be 1 or 3, not %d", *in.InputVersion))
		}
		cfg.InputVersion = *in.InputVersion
	}
	if in.ExcludeDisputed != nil {
		cfg.ExcludeDisputed = *in.ExcludeDisputed
	}
	if in.CriteriaSet {
		if len(in.Criteria) < 1 || len(in.Criteria) > 12 {
			return cfg, badConfig("criteria", "give 1–12 criteria, or leave criteria out for the four defaults")
		}
		for i, c := range in.Criteria {
			c = strings.TrimSpace(c)
			if n := utf8.RuneCountInString(c); n < 1 || n > 500 {
				return cfg, badConfig(fmt.Sprintf("criteria[%d]", i), "each criterion must be 1–500 characters")
			}
			cfg.Criteria = append(cfg.Criteria, c)
		}
	}
	return cfg, nil
}

// RequestTrainingResult carries the new model's id and the request as
// stored (defaults applied, trace ids deduplicated).
type RequestTrainingResult struct {
	Result
	ModelID   string
	Requested events.RewardModelRequestedV1
}

// RequestTraining queues a reward model on the caller's selected traces.
// Every trace must be the caller's: the first one that is not is named in a
// 404. Pairs are checked later, before any model is loaded.
type RequestTraining struct {
	Actor Actor
	Input RequestTrainingInput
}

// RequestTrainingHandler runs RequestTraining.
type RequestTrainingHandler struct {
	*Streams
	// compute is where a new model trains until a worker claims it;
	// modelRoots where a local base_model may lie; feedback the
	// deployment's feedback model (or why there is none).
	compute    string
	modelRoots []string
	feedback   events.FeedbackPlan
}

func (c RequestTrainingHandler) Handle(ctx context.Context, cmd RequestTraining) (RequestTrainingResult, error) {
	in := cmd.Input
	in.Name = strings.TrimSpace(in.Name)
	if n := utf8.RuneCountInString(in.Name); n < 1 || n > 200 {
		return RequestTrainingResult{}, domain.InvalidField("name", "name must be 1–200 characters")
	}
	if len(in.TraceIDs) == 0 {
		return RequestTrainingResult{}, domain.InvalidField("trace_ids", "select at least one trace")
	}
	in.BaseModel = cmp.Or(in.BaseModel, rewardmodels.DefaultBaseModel)
	if err := rewardmodels.CheckBaseModel(in.BaseModel, c.modelRoots); err != nil {
		return RequestTrainingResult{}, err
	}
	in.Epochs = cmp.Or(in.Epochs, rewardmodels.DefaultEpochs)
	if in.Epochs < 1 || in.Epochs > 100 {
		return RequestTrainingResult{}, domain.InvalidField("epochs", "epochs must be 1–100")
	}
	in.MaxPairs = cmp.Or(in.MaxPairs, domain.DefaultMaxPairs)
	if in.MaxPairs < 1 || in.MaxPairs > 1_000_000 {
		return RequestTrainingResult{}, domain.InvalidField("max_pairs", "max_pairs must be 1–1000000")
	}
	cfg, err := checkConfig(in.Config)
	if err != nil {
		return RequestTrainingResult{}, err
	}
	if in.Config != nil && in.Config.Criterion != nil {
		if cfg, err = c.criterionConfig(ctx, cmd.Actor, cfg, in.Config); err != nil {
			return RequestTrainingResult{}, err
		}
	}
	seen := map[string]bool{}
	var ids []string
	for _, id := range in.TraceIDs {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	owned, err := c.ownedTraces(ctx, cmd.Actor, ids)
	if err != nil {
		return RequestTrainingResult{}, err
	}
	for _, id := range ids {
		if _, ok := owned[id]; !ok {
			return RequestTrainingResult{}, domain.NotFound("trace", id)
		}
	}
	modelID := newID()
	p := events.RewardModelRequestedV1{ModelID: modelID, Name: in.Name, BaseModel: in.BaseModel,
		Compute: c.compute, Epochs: in.Epochs, MaxPairs: in.MaxPairs, TraceIDs: ids,
		TrainingConfig: &cfg, FeedbackPlan: feedbackPlan(c.feedback, cfg)}
	r, err := c.appendEvent(ctx, cmd.Actor, events.RewardModelStream(modelID), cmd.Actor.UserID, 0, events.RewardModelRequested, p)
	return RequestTrainingResult{Result: r, ModelID: modelID, Requested: p}, err
}

// criterionConfig is training_config.criterion: a criterion of the
// account (archived ones too: their values stay), whose values replace
// ratings as the model's only supervision — so annotation_source is
// explicit, and asking for another source with it is refused.
func (c *Streams) criterionConfig(ctx context.Context, actor Actor, cfg events.TrainingConfig, in *TrainingConfig) (events.TrainingConfig, error) {
	if in.AnnotationSource != nil && *in.AnnotationSource != events.SourceExplicit {
		return cfg, badConfig("annotation_source", fmt.Sprintf("a model trained on a criterion learns from its values alone: annotation_source must be explicit or absent, not %q", *in.AnnotationSource))
	}
	st, err := c.criteria(ctx, actor.UserID)
	if err != nil {
		return cfg, err
	}
	cr, ok := st.Get(*in.Criterion)
	if !ok {
		return cfg, badConfig("criterion", fmt.Sprintf("the account has no criterion %q (GET /criteria lists them)", *in.Criterion))
	}
	cfg.AnnotationSource, cfg.Criterion, cfg.CriterionName = events.SourceExplicit, cr.ID, cr.Name
	return cfg, nil
}
