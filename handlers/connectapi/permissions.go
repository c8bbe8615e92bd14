package connectapi

import (
	"strings"

	"github.com/criticml/critic/domain/members"
)

// methodPermissions is the Connect side of the one role check (issue 36):
// what each critic.v1 method needs, as REST routes declare theirs in
// handlers/rest/routes.go. The boundary interceptor asks edge.Permit before
// the method runs; a method missing here is refused (and
// TestEveryConnectMethodDeclaresAPermission fails).
var methodPermissions = map[string]members.Permission{
	"AnnotationService/AddAnnotation":     members.Annotate,
	"AnnotationService/EditAnnotation":    members.Annotate,
	"AnnotationService/RemoveAnnotation":  members.Annotate,
	"AnnotationService/ExportAnnotations": members.Read,
	"AnnotationService/ExportPairs":       members.Read,
	"AnnotationService/RenameTraceSource": members.Manage,

	"BaseModelService/ListBaseModels": members.Read,

	"CriteriaService/ListCriteria":     members.Read,
	"CriteriaService/DefineCriterion":  members.Manage,
	"CriteriaService/ChangeCriterion":  members.Manage,
	"CriteriaService/ArchiveCriterion": members.Manage,
	"CriteriaService/GetGuidelines":    members.Read,
	"CriteriaService/SetGuidelines":    members.Manage,

	"EvaluatorService/SetTraceContribution": members.Manage,
	"EvaluatorService/ComparisonQueue":      members.Read,
	"EvaluatorService/ReviewComparison":     members.Annotate,
	"EvaluatorService/GetEvaluator":         members.Read,
	"EvaluatorService/RescoreTrace":         members.Train,

	"GepaService/CreateGepaRun": members.Train,
	"GepaService/ListGepaRuns":  members.Read,
	"GepaService/GetGepaRun":    members.Read,
	"GepaService/GetGepaSkill":  members.Read,

	"QueryService/Query": members.Query,

	"RewardModelService/CreateRewardModel":    members.Train,
	"RewardModelService/ListRewardModels":     members.Read,
	"RewardModelService/GetRewardModel":       members.Read,
	"RewardModelService/RetryRewardModel":     members.Train,
	"RewardModelService/GetWeights":           members.Read,
	"RewardModelService/ScoreTrace":           members.Train,
	"RewardModelService/ReviewQueue":          members.Read,
	"RewardModelService/SetBackgroundScoring": members.Train,

	"TeamService/ListMembers":        members.Read,
	"TeamService/AddMember":          members.Manage,
	"TeamService/ChangeMemberRole":   members.Manage,
	"TeamService/RemoveMember":       members.Manage,
	"TeamService/GetReviewOverlap":   members.Read,
	"TeamService/SetReviewOverlap":   members.Manage,
	"TeamService/GetAgreement":       members.Read,
	"TeamService/ListDisputed":       members.Read,
	"TeamService/GetMembersProgress": members.Read,
	"TeamService/Adjudicate":         members.Manage,

	"TraceService/ListFormats":        members.Read,
	"TraceService/ImportTraces":       members.Ingest,
	"TraceService/ListTraces":         members.Read,
	"TraceService/GetTrace":           members.Read,
	"TraceService/DeleteTrace":        members.Delete,
	"TraceService/ExportTraces":       members.Read,
	"TraceService/SummarizeSections":  members.Annotate,
	"TraceService/EstimateCompletion": members.Annotate,
	"TraceService/RetryLabeling":      members.Train,
	"TraceService/RescoreLabels":      members.Train,
}

// MethodPermission is the permission a procedure ("/critic.v1.Service/Method")
// needs; ok is false for a method nobody declared.
func MethodPermission(procedure string) (members.Permission, bool) {
	svc, method, _ := strings.Cut(strings.TrimPrefix(procedure, "/critic.v1."), "/")
	p, ok := methodPermissions[svc+"/"+method]
	return p, ok
}
