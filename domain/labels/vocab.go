// Package labels defines step labels (spec 001 "Step labels"): what a step of
// a trace *is*, without judging it. A label describes one chunk of a trace (a
// user message, an agent message, or a tool call with its result, see
// Chunks); the step scores (domain/stepscores) turn labels into numbers by
// fixed rules. This file is the one place every enumerated field's
// vocabulary is defined: the validator, the JSON schema the labeler's output
// is checked against, the README table and the scoring rules all read it, so
// a value cannot mean one thing to the model and another to the scorer.
package labels

import "slices"

// Actor says who produced a chunk.
type Actor string

// The two actors. System messages are context and get no label.
const (
	ActorUser  Actor = "user"
	ActorAgent Actor = "agent"
)

// Value is one allowed value of an enumerated field with what it means; the
// meaning is what the labeler is told and what the README publishes.
type Value struct {
	Name    string
	Meaning string
}

// Field is an enumerated label field: its JSON name, which actor it belongs
// to and its values, in the order they are documented.
type Field struct {
	Name   string
	Actor  Actor
	Doc    string
	Values []Value
}

// The value names the scoring rules refer to. Every one also appears in
// Vocabulary below; TestVocabularyNamesConstants keeps the two in step.
const (
	IntentRequest  = "request"
	IntentFollowUp = "follow_up"
	IntentAnswer   = "answer"
	IntentFeedback = "feedback"
	IntentOther    = "other"

	VerdictConfirmed          = "confirmed"
	VerdictAccepted           = "accepted"
	VerdictAcceptedWithCaveat = "accepted_with_caveats"
	VerdictUnclear            = "unclear"
	VerdictPartlyRejected     = "partly_rejected"
	VerdictRejected           = "rejected"
	VerdictRejectedConfident  = "rejected_confident"
	VerdictNone               = "none"

	SentimentPositive = "positive"
	SentimentNeutral  = "neutral"
	SentimentNegative = "negative"
	SentimentMixed    = "mixed"

	TypeToolCall = "tool_call"
	TypeQuestion = "question"
	TypeAnswer   = "answer"
	TypeProgress = "progress"

	EffectLookup = "lookup"
	EffectChange = "change"
	EffectNone   = "none"

	ResultOK    = "ok"
	ResultError = "error"
	ResultEmpty = "empty"
	ResultNone  = "none"

	OutcomeSolved   = "solved"
	OutcomePartial  = "partial"
	OutcomeNotFound = "not_found"
	OutcomeFailed   = "failed"
	OutcomeNone     = "none"

	StanceConfident = "confident"
	StanceHedged    = "hedged"
	StanceUncertain = "uncertain"
	StanceNone      = "none"

	CoverageFull    = "full"
	CoveragePartial = "partial"
	CoverageNone    = "none"
)

// Vocabulary is every enumerated field of a label and its values.
var Vocabulary = []Field{
	{Name: "intent", Actor: ActorUser, Doc: "what the user is doing with the message", Values: []Value{
		{IntentRequest, "asks for new work: starts a task or replaces the current one"},
		{IntentFollowUp, "adds to, narrows or redirects the current request"},
		{IntentAnswer, "answers a question the agent asked"},
		{IntentFeedback, "reacts to an answer the agent gave (approval, complaint, correction)"},
		{IntentOther, "anything else (greeting, aside, pasted context)"},
	}},
	{Name: "verdict", Actor: ActorUser, Doc: "how the user reacted to the answer named by verdict_target", Values: []Value{
		{VerdictConfirmed, "confirms the answer is right or worked, without caveats"},
		{VerdictAccepted, "accepts it and moves on (thanks, next request)"},
		{VerdictAcceptedWithCaveat, "accepts it with reservations or small fixes"},
		{VerdictUnclear, "reacts, but neither acceptance nor rejection can be told"},
		{VerdictPartlyRejected, "says part of it is wrong or missing"},
		{VerdictRejected, "rejects it, tentatively (\"I don't think that's right\")"},
		{VerdictRejectedConfident, "rejects it, stated with confidence (\"that's wrong\", shows the error)"},
		{VerdictNone, "the message is not a reaction to an answer"},
	}},
	{Name: "sentiment", Actor: ActorUser, Doc: "the user's tone", Values: []Value{
		{SentimentPositive, "pleased, thankful"},
		{SentimentNeutral, "matter-of-fact"},
		{SentimentNegative, "annoyed, disappointed"},
		{SentimentMixed, "both"},
	}},
	{Name: "type", Actor: ActorAgent, Doc: "what the agent's chunk is", Values: []Value{
		{TypeToolCall, "a tool call (with its result when recorded)"},
		{TypeQuestion, "a question to the user"},
		{TypeAnswer, "an answer or deliverable handed to the user"},
		{TypeProgress, "a status, plan or progress message that neither asks nor answers"},
	}},
	{Name: "effect", Actor: ActorAgent, Doc: "what a tool call did to the world", Values: []Value{
		{EffectLookup, "read something without changing it (search, read, list, fetch)"},
		{EffectChange, "changed something (write, edit, send, run a mutation)"},
		{EffectNone, "not a tool call"},
	}},
	{Name: "result", Actor: ActorAgent, Doc: "what the tool returned", Values: []Value{
		{ResultOK, "a usable result"},
		{ResultError, "an error, a failure or a refusal"},
		{ResultEmpty, "nothing (no match, empty output)"},
		{ResultNone, "no result recorded, or not a tool call"},
	}},
	{Name: "outcome", Actor: ActorAgent, Doc: "what an output says it achieved", Values: []Value{
		{OutcomeSolved, "says the request is done or answered"},
		{OutcomePartial, "says part of it is done"},
		{OutcomeNotFound, "says what was asked for could not be found"},
		{OutcomeFailed, "says it failed or cannot do it"},
		{OutcomeNone, "not an output"},
	}},
	{Name: "stance", Actor: ActorAgent, Doc: "how sure the output sounds", Values: []Value{
		{StanceConfident, "states it as fact"},
		{StanceHedged, "qualifies it (\"should\", \"I think\")"},
		{StanceUncertain, "says it does not know"},
		{StanceNone, "not an output"},
	}},
	{Name: "coverage", Actor: ActorAgent, Doc: "how much of the request the output addresses", Values: []Value{
		{CoverageFull, "all of it"},
		{CoveragePartial, "some of it"},
		{CoverageNone, "none of it, or not an output"},
	}},
}

// field returns the vocabulary of one field by its JSON name.
func field(name string) Field {
	if i := slices.IndexFunc(Vocabulary, func(f Field) bool { return f.Name == name }); i >= 0 {
		return Vocabulary[i]
	}
	panic("labels: no field " + name)
}

// Allowed reports whether v is a value of the enumerated field name.
func Allowed(name, v string) bool {
	return slices.Contains(names(name), v)
}

// names lists the value names of a field, in documented order.
func names(name string) []string {
	f := field(name)
	out := make([]string, len(f.Values))
	for i, v := range f.Values {
		out[i] = v.Name
	}
	return out
}
