package events

import "github.com/criticml/critic/domain/sections"

// Section summaries and completion estimates (spec 001 "Trace sections"):
// a request records what to generate; a worker's answer — a model's answer
// is a fact — or its failure is recorded against the same cache key
// (evidence hash + exact ranges + version), so replay and every reader see
// the same assessment and an unchanged trace never asks a model again.
const (
	TraceAssessmentRequested = "trace.assessment_requested.v1"
	TraceAssessmentRecorded  = "trace.assessment_recorded.v1"
	TraceAssessmentFailed    = "trace.assessment_failed.v1"
)

// Assessment kinds.
const (
	AssessmentSections   = "sections"
	AssessmentCompletion = "completion"
)

// AssessmentItem is one thing to generate: a section range, or (kind
// completion) the tasks of a completion estimate.
type AssessmentItem struct {
	Key          string           `json:"key"`
	EvidenceHash string           `json:"evidence_hash"`
	Range        *sections.Range  `json:"range,omitempty"`
	Tasks        []sections.Range `json:"tasks,omitempty"`
}

// TraceAssessmentRequestedV1 asks the worker tier for assessments of the
// trace as it is at Revision. LeaseSeconds is how long the request holds
// its keys against duplicate generation.
type TraceAssessmentRequestedV1 struct {
	TraceID      string           `json:"trace_id"`
	Revision     int              `json:"revision"`
	Kind         string           `json:"kind"`
	Version      string           `json:"version"`
	Items        []AssessmentItem `json:"items"`
	LeaseSeconds int              `json:"lease_seconds"`
}

// TraceAssessmentRecordedV1 is a generated assessment for one key.
type TraceAssessmentRecordedV1 struct {
	TraceID       string                    `json:"trace_id"`
	Kind          string                    `json:"kind"`
	Version       string                    `json:"version"`
	Key           string                    `json:"key"`
	EvidenceHash  string                    `json:"evidence_hash"`
	Section       *sections.Summary         `json:"section,omitempty"`
	Tasks         []sections.CompletionTask `json:"tasks,omitempty"`
	Model         string                    `json:"model"`
	PromptVersion string                    `json:"prompt_version"`
	Usage         LLMUsage                  `json:"usage"`
}

// TraceAssessmentFailedV1 is a generation that failed for one key.
type TraceAssessmentFailedV1 struct {
	TraceID string `json:"trace_id"`
	Kind    string `json:"kind"`
	Version string `json:"version"`
	Key     string `json:"key"`
	Model   string `json:"model"`
	Error   string `json:"error"`
}

// CompletionTask is the completion shape on the wire (domain/sections).
type CompletionTask = sections.CompletionTask

// Checkpoint is a completion checkpoint on the wire (domain/sections).
type Checkpoint = sections.Checkpoint
