package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/criticml/critic/commands"
	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/criticml/critic/domain/traces"
	"github.com/criticml/critic/handlers/usecase"
	"github.com/criticml/critic/platform/blob"
	"github.com/criticml/critic/projections/readmodel"
)

// cmdAudit is `critic audit model <id>`: it replays the log to show, for each
// training pair of the model's current attempt, the annotations behind it
// (author, time, rating/comment, trace revision), and checks that the stored
// dataset equals one rebuilt from the log now. It exits non-zero on any
// mismatch.
func cmdAudit(ctx context.Context, args []string) error {
	if len(args) != 2 || args[0] != "model" {
		return usageError{"usage: critic audit model <id>"}
	}
	in, err := boot(ctx)
	if err != nil {
		return err
	}
	defer in.Close()
	return auditModel(ctx, in, commands.New(in.store), args[1], os.Stdout)
}

type annotationFact struct {
	// member is the member who made it (an adjudication: who adjudicated);
	// author is the name the annotation was given, when it differs from
	// the member's.
	member, author, at, trace string
	rating                    *int
	comment                   *string
	revision                  int
	labelError                bool
	// criterion and value are a criterion value's (training_config.criterion).
	criterion, value string
	// adjudication is the reason of an admin's final judgment (issue 36),
	// which stands in a pair for the members' ratings of its target.
	adjudication *string
}

func auditModel(ctx context.Context, in *infra, cmds *commands.Commands, modelID string, out io.Writer) error {
	st, err := cmds.Streams.Model(ctx, modelID)
	if err != nil {
		return err
	}
	if st.Dataset == nil {
		if len(st.Extracted) > 0 {
			return auditFindingsOnly(ctx, in, cmds, st, out)
		}
		return fmt.Errorf("model %s (attempt %d, %s) has no dataset yet", modelID, st.Attempt, st.Status)
	}
	// Traces erased since training (issue 37) are gone from the log's
	// rebuild, and the stored dataset that quoted them is deleted: that is
	// what erasure means, not a fault; what remains is audited.
	erased, err := readmodel.NewQueries(in.pool).ErasedTracesOf(ctx, modelID)
	if err != nil {
		return err
	}
	inputs, err := cmds.Streams.DatasetInputs(ctx, st, st.Dataset.AsOfSeq)
	if err != nil {
		return fmt.Errorf("rebuild the dataset from the log: %w", err)
	}
	rebuilt, err := rewardmodels.BuildDatasetFrom(inputs)
	if err != nil {
		return fmt.Errorf("rebuild the dataset from the log: %w", err)
	}
	raw, err := json.Marshal(rebuilt)
	if err != nil {
		return err
	}
	problems := []string{}
	stored, err := in.blobs.Get(ctx, st.Dataset.DatasetKey)
	switch {
	case errors.Is(err, blob.ErrNotFound) && erased > 0:
		stored = raw
	case err != nil:
		return fmt.Errorf("stored dataset: %w", err)
	default:
		sum := sha256.Sum256(stored)
		if hex.EncodeToString(sum[:]) != st.Dataset.DatasetSHA256 {
			problems = append(problems, "the stored dataset does not match the SHA-256 recorded in dataset_built")
		}
		if !bytes.Equal(raw, stored) && erased == 0 {
			problems = append(problems, "the stored dataset differs from the one rebuilt from the log")
		}
	}
	var ds rewardmodels.Dataset
	if err := json.Unmarshal(stored, &ds); err != nil {
		return fmt.Errorf("stored dataset: %w", err)
	}
	facts, comps, err := traceFacts(ctx, in, st.OwnerID, st.Dataset.AsOfSeq)
	if err != nil {
		return err
	}
	team, err := cmds.Streams.Team(ctx, st.OwnerID)
	if err != nil {
		return err
	}
	names := team.Names()
	fmt.Fprintf(out, "model %s %q — attempt %d, status %s, %d pairs from %d traces, dataset built as of event #%d\n\n",
		st.ID, st.Requested.Name, st.Attempt, st.Status, len(ds.Pairs), ds.SourceTraces, ds.AsOfSeq)
	if n := traces.ErasedNotice(erased); n != "" {
		fmt.Fprintf(out, "%s\n\n", n)
	}
	auditReport(out, st)
	if p := auditAgreement(out, st.Dataset.Agreement, rewardmodels.TrainingAgreementOf(inputs), st.Config.ExcludeDisputed); p != "" && erased == 0 {
		problems = append(problems, p)
	}
	if err := auditMemberAgreement(ctx, in, cmds, st, names, out); err != nil {
		return err
	}
	selected, err := cmds.Streams.Selection(ctx, st, st.Dataset.AsOfSeq)
	if err != nil {
		return err
	}
	findings := newFindingIndex(st, selected)
	for i, p := range ds.Pairs {
		at := ""
		if p.ActionType != nil {
			at = " " + *p.ActionType
		}
		src := ""
		if p.Source != "" {
			src = ", from " + p.Source
		}
		fmt.Fprintf(out, "pair %d (%s%s%s) traces %s\n", i+1, p.Granularity, at, src, strings.Join(p.TraceIDs, ", "))
		if p.Source == rewardmodels.SourceReviewedComparison {
			problems = append(problems, auditComparison(out, comps, i+1, p)...)
			continue
		}
		if p.Source == rewardmodels.SourceVerifiedOutcome && p.Verified != nil {
			// Decided by outcomes, not a reviewer: say where each was read.
			fmt.Fprintf(out, "  verified outcome %s: trace %s succeeded (%s), trace %s failed (%s)\n", p.Verified.Comparison,
				p.TraceIDs[0], p.Verified.ChosenOutcomeFrom, p.TraceIDs[1], p.Verified.RejectedOutcomeFrom)
			continue
		}
		problems = append(problems, auditFindings(out, findings, facts, i+1, p)...)
		for _, id := range p.AnnotationIDs {
			f, ok := facts[id]
			if !ok {
				problems = append(problems, fmt.Sprintf("pair %d: annotation %s is not in the log", i+1, id))
				continue
			}
			kind := "annotation"
			if f.adjudication != nil {
				kind = "adjudication"
			}
			line := fmt.Sprintf("  %s %s by %s at %s on trace %s revision %d", kind, id, memberText(names, f), f.at, f.trace, f.revision)
			if f.rating != nil {
				line += fmt.Sprintf(", rating %+d", *f.rating)
			}
			if f.comment != nil {
				line += fmt.Sprintf(", comment %q", *f.comment)
			}
			if f.criterion != "" {
				line += fmt.Sprintf(", criterion %s value %s", f.criterion, f.value)
			}
			if f.adjudication != nil {
				line += fmt.Sprintf(", reason %q (supersedes the members' judgments of this target)", *f.adjudication)
			}
			fmt.Fprintln(out, line)
		}
	}
	fmt.Fprintln(out)
	if len(problems) > 0 {
		sort.Strings(problems)
		for _, p := range problems {
			fmt.Fprintln(out, "MISMATCH:", p)
		}
		return fmt.Errorf("audit failed: %d problem(s)", len(problems))
	}
	if erased > 0 {
		fmt.Fprintln(out, "OK: the pairs the log still gives are audited above; the erased traces' pairs are gone with them")
		return nil
	}
	fmt.Fprintln(out, "OK: the stored dataset equals the one rebuilt from the log")
	return nil
}

// traceFacts replays the owner's trace streams up to asOf and returns
// every annotation's author, time, values and trace revision, and every
// reviewed comparison by id: what the audit shows for a pair a person
// decided (reviewer, what was left and right, the verdict, the finding
// that proposed the alternative).
func traceFacts(ctx context.Context, in *infra, owner string, asOf int64) (map[string]*annotationFact, map[string]events.ComparisonReviewedV1, error) {
	streams, err := in.store.OwnerStreams(ctx, owner, "trace/", asOf)
	if err != nil {
		return nil, nil, err
	}
	loaded, err := in.store.LoadStreamsAsOf(ctx, streams, asOf)
	if err != nil {
		return nil, nil, err
	}
	facts := map[string]*annotationFact{}
	comps := map[string]events.ComparisonReviewedV1{}
	for _, evs := range loaded {
		for _, e := range evs {
			switch e.Type {
			case events.AnnotationAdded:
				var p events.AnnotationAddedV1
				if err := e.Decode(&p); err != nil {
					return nil, nil, err
				}
				facts[p.AnnotationID] = &annotationFact{member: p.AuthorID, author: p.AuthorName, at: e.RecordedAt.UTC().Format("2006-01-02T15:04:05Z"),
					trace: p.TraceID, rating: p.Rating, comment: p.Comment, revision: p.TraceRevision,
					criterion: p.CriterionID, value: string(p.Value)}
			case events.AnnotationEdited:
				var p events.AnnotationEditedV1
				if err := e.Decode(&p); err != nil {
					return nil, nil, err
				}
				if f := facts[p.AnnotationID]; f != nil {
					f.rating, f.comment, f.labelError = p.Rating, p.Comment, p.LabelError
					if p.Value != nil {
						f.value = string(p.Value)
					}
				}
			case events.AnnotationAdjudicated:
				var p events.AnnotationAdjudicatedV1
				if err := e.Decode(&p); err != nil {
					return nil, nil, err
				}
				f := &annotationFact{member: p.By, at: e.RecordedAt.UTC().Format("2006-01-02T15:04:05Z"), trace: p.TraceID,
					revision: p.TraceRevision, criterion: p.CriterionID, value: string(p.Value), adjudication: &p.Reason}
				if p.CriterionID == "" {
					f.rating = &p.Rating
				}
				facts[p.AdjudicationID] = f
			case events.ComparisonReviewed:
				var p events.ComparisonReviewedV1
				if err := e.Decode(&p); err != nil {
					return nil, nil, err
				}
				comps[p.ComparisonID] = p
			}
		}
	}
	return facts, comps, nil
}

// memberText names the member behind an annotation or adjudication (issue
// 36): their display name and id, and the name the annotation was given
// when that differs (an imported author, or a name set before members).
func memberText(names map[string]string, f *annotationFact) string {
	name, ok := names[f.member]
	switch {
	case f.member == "":
		return f.author
	case !ok:
		name = "unknown member"
	}
	out := fmt.Sprintf("%s (member %s)", name, f.member)
	if f.author != "" && f.author != name {
		out += fmt.Sprintf(", author name %q", f.author)
	}
	return out
}

// auditAgreement prints the learning report's agreement (issue 36) as
// dataset_built recorded it, and returns a problem when the log's rebuild
// gives other figures. A dataset built before agreement was recorded shows
// the rebuild's.
func auditAgreement(out io.Writer, recorded, rebuilt *events.DatasetAgreement, excludeDisputed bool) string {
	a := cmp.Or(recorded, rebuilt)
	if a == nil {
		return ""
	}
	excluded := "disputed labels kept"
	if excludeDisputed {
		excluded = fmt.Sprintf("%d excluded as disputed", a.Excluded)
	}
	alpha := "alpha undefined"
	if a.Alpha.Value != nil {
		alpha = fmt.Sprintf("Krippendorff's alpha %.3f", *a.Alpha.Value)
	}
	alpha += fmt.Sprintf(" over %d co-rated target(s)", a.Alpha.N)
	if a.Alpha.TooFew {
		alpha += ", too few to trust"
	}
	fmt.Fprintf(out, "agreement of the training labels: %d labeled target(s), %d rated by two or more members, %d disputed, %d adjudicated, %s; %s",
		a.Judged, a.CoRated, a.Disputed, a.Adjudicated, excluded, alpha)
	if recorded == nil {
		fmt.Fprint(out, " (rebuilt from the log: not recorded when the dataset was built)")
	}
	fmt.Fprint(out, "\n\n")
	if recorded != nil && rebuilt != nil && !reflect.DeepEqual(*recorded, *rebuilt) {
		return "the agreement recorded in dataset_built differs from the one rebuilt from the log"
	}
	return ""
}

// auditMemberAgreement prints each member's agreement with a succeeded
// model's scores, as the model page shows it (usecase.Agreement with the
// model chosen, from the read model), each member named as the pairs name
// them (names: the members stream's); nothing before it succeeded.
func auditMemberAgreement(ctx context.Context, in *infra, cmds *commands.Commands, st rewardmodels.State, names map[string]string, out io.Writer) error {
	if st.Status != rewardmodels.StatusSucceeded {
		return nil
	}
	b := usecase.Backend{Cmds: cmds, Queries: readmodel.NewQueries(in.pool)}
	rep, err := b.Agreement(ctx, &readmodel.Caller{UserID: st.OwnerID}, st.ID)
	if _, ok := errors.AsType[*domain.ConflictError](err); ok {
		return nil // no reward statistics: nothing to compare with
	}
	if err != nil {
		return err
	}
	for _, m := range rep.Members {
		if m.Model == nil || m.Model.N == 0 {
			continue
		}
		name, ok := names[m.Member]
		if !ok {
			name = m.Name
		}
		line := fmt.Sprintf("%s (member %s) agrees with this model on %d of %d target(s)", name, m.Member,
			int(*m.Model.Value*float64(m.Model.N)+0.5), m.Model.N)
		if m.Model.TooFew {
			line += ", too few to trust"
		}
		fmt.Fprintln(out, line)
	}
	fmt.Fprintln(out)
	return nil
}
