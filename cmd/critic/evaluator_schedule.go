package main

import (
	"cmp"
	"fmt"
	"os"
	"time"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/handlers/apiserver"
)

// evaluatorSchedule is CRITIC_EVALUATOR_TRAIN_EVERY (0: off) and
// CRITIC_EVALUATOR_BASE_MODEL: how often the API queues a shared-evaluator
// candidate on its own, and on which base. A scheduled candidate is only a
// candidate: releasing it stays an operator's explicit `critic evaluator
// release`.
type evaluatorSchedule struct {
	Every time.Duration
	Base  string
}

func loadEvaluatorSchedule() (evaluatorSchedule, error) {
	s := evaluatorSchedule{Base: cmp.Or(os.Getenv("CRITIC_EVALUATOR_BASE_MODEL"), rewardmodels.DefaultBaseModel)}
	if v := os.Getenv("CRITIC_EVALUATOR_TRAIN_EVERY"); v != "" && v != "0" && v != "off" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute {
			return s, fmt.Errorf("CRITIC_EVALUATOR_TRAIN_EVERY must be a duration of at least 1m (e.g. 24h), or off; got %q", v)
		}
		s.Every = d
	}
	return s, nil
}

// startEvaluatorSchedule runs the schedule: every interval one
// ScheduledCandidate tick, logged with why it queued nothing. Several API
// instances may each run it: a tick skips while a candidate is queued or
// running, and the evaluator stream's version check serializes requests.
func startEvaluatorSchedule(a *apiserver.Server, in *infra, s evaluatorSchedule) {
	if s.Every <= 0 {
		return
	}
	in.log.Info("shared-evaluator candidates on a schedule", "every", s.Every.String(), "base_model", s.Base)
	a.Go("evaluator-schedule", func() error {
		t := time.NewTicker(s.Every)
		defer t.Stop()
		for {
			select {
			case <-a.Ctx.Done():
				return nil
			case <-t.C:
			}
			res, skip, err := a.Cmds.ScheduledCandidate.Handle(a.Ctx, commands.ScheduledCandidate{Base: s.Base})
			switch {
			case err != nil:
				in.log.Warn("scheduled evaluator candidate", "err", err)
			case skip != "":
				in.log.Info("no scheduled evaluator candidate", "reason", skip)
			default:
				in.log.Info("scheduled evaluator candidate queued", "candidate", res.Candidate.CandidateID, "pairs", res.Candidate.NumPairs)
			}
		}
	}, nil)
}
