package labels

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
)

func userLabel() Label {
	return Label{ChunkID: "u2", TaskID: "t1", Actor: ActorUser, Intent: IntentFeedback, Verdict: VerdictConfirmed,
		VerdictTarget: new("a1"), Sentiment: SentimentPositive, Evidence: "works now", Note: ""}
}

func agentLabel() Label {
	return Label{ChunkID: "a1", TaskID: "t1", Actor: ActorAgent, Type: TypeAnswer, Effect: EffectNone, Result: ResultNone,
		IsOutput: new(true), Outcome: OutcomeSolved, Stance: StanceConfident, Coverage: CoverageFull, Evidence: "done"}
}

func toolLabel() Label {
	return Label{ChunkID: "a0", TaskID: "t1", Actor: ActorAgent, Type: TypeToolCall, Effect: EffectLookup, Result: ResultOK,
		IsOutput: new(false), Outcome: OutcomeNone, Stance: StanceNone, Coverage: CoverageNone}
}

var known = map[string]Actor{"u0": ActorUser, "a0": ActorAgent, "a1": ActorAgent, "u2": ActorUser}

// TestVocabularyNamesConstants keeps the constants the scoring rules use and
// the published vocabulary the same set.
func TestVocabularyNamesConstants(t *testing.T) {
	t.Parallel()
	for _, c := range [][2]string{{"intent", IntentRequest}, {"intent", IntentFollowUp}, {"intent", IntentAnswer}, {"intent", IntentFeedback}, {"intent", IntentOther},
		{"verdict", VerdictConfirmed}, {"verdict", VerdictAccepted}, {"verdict", VerdictAcceptedWithCaveat}, {"verdict", VerdictUnclear},
		{"verdict", VerdictPartlyRejected}, {"verdict", VerdictRejected}, {"verdict", VerdictRejectedConfident}, {"verdict", VerdictNone},
		{"sentiment", SentimentPositive}, {"sentiment", SentimentNeutral}, {"sentiment", SentimentNegative}, {"sentiment", SentimentMixed},
		{"type", TypeToolCall}, {"type", TypeQuestion}, {"type", TypeAnswer}, {"type", TypeProgress},
		{"effect", EffectLookup}, {"effect", EffectChange}, {"effect", EffectNone},
		{"result", ResultOK}, {"result", ResultError}, {"result", ResultEmpty}, {"result", ResultNone},
		{"outcome", OutcomeSolved}, {"outcome", OutcomePartial}, {"outcome", OutcomeNotFound}, {"outcome", OutcomeFailed}, {"outcome", OutcomeNone},
		{"stance", StanceConfident}, {"stance", StanceHedged}, {"stance", StanceUncertain}, {"stance", StanceNone},
		{"coverage", CoverageFull}, {"coverage", CoveragePartial}, {"coverage", CoverageNone}} {
		require.True(t, Allowed(c[0], c[1]), "%s=%s", c[0], c[1])
	}
	total := 0
	for _, f := range Vocabulary {
		total += len(f.Values)
		for _, v := range f.Values {
			require.NotEmpty(t, v.Meaning, "%s=%s has no meaning", f.Name, v.Name)
		}
	}
	require.Equal(t, 40, total, "a vocabulary value without a constant (or the reverse)")
	require.False(t, Allowed("verdict", "great"))
}

func compile(t *testing.T, a Actor) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON(a)))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	url := "mem://" + string(a) + ".json"
	require.NoError(t, c.AddResource(url, doc))
	s, err := c.Compile(url)
	require.NoError(t, err, "the label schema must be a valid JSON schema")
	return s
}

func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	return doc
}

// strictJSON is a label as a strict structured-output provider writes it:
// every property of the actor's schema present, references null when none.
func strictJSON(l Label) map[string]any {
	m := map[string]any{"chunk_id": l.ChunkID, "task_id": l.TaskID, "actor": string(l.Actor), "evidence": l.Evidence, "note": l.Note}
	ref := func(p *string) any {
		if p == nil {
			return nil
		}
		return *p
	}
	if l.Actor == ActorUser {
		m["intent"], m["verdict"], m["sentiment"], m["verdict_target"] = l.Intent, l.Verdict, l.Sentiment, ref(l.VerdictTarget)
	} else {
		m["type"], m["effect"], m["result"], m["outcome"], m["stance"], m["coverage"] = l.Type, l.Effect, l.Result, l.Outcome, l.Stance, l.Coverage
		m["duplicate_of"] = ref(l.DuplicateOf)
		if l.IsOutput != nil {
			m["is_output"] = *l.IsOutput
		}
	}
	return m
}

// TestSchemaAndValidatorAgree runs the same labels through the published
// JSON schema (a real JSON-schema implementation) and through Validate: a
// labeler's answer the schema admits must parse and validate, and what the
// schema rejects Validate rejects too.
func TestSchemaAndValidatorAgree(t *testing.T) {
	t.Parallel()
	user, agent := compile(t, ActorUser), compile(t, ActorAgent)
	cases := []struct {
		name  string
		label Label
		edit  func(m map[string]any)
		ok    bool
	}{
		{"user", userLabel(), nil, true},
		{"answer", agentLabel(), nil, true},
		{"tool call", toolLabel(), nil, true},
		{"unknown verdict", userLabel(), func(m map[string]any) { m["verdict"] = "great" }, false},
		{"unknown type", agentLabel(), func(m map[string]any) { m["type"] = "thought" }, false},
		{"missing is_output", agentLabel(), func(m map[string]any) { delete(m, "is_output") }, false},
		{"missing intent", userLabel(), func(m map[string]any) { delete(m, "intent") }, false},
		{"extra field", userLabel(), func(m map[string]any) { m["score"] = 1 }, false},
		{"agent field on user", userLabel(), func(m map[string]any) { m["type"] = "answer" }, false},
		{"empty chunk id", agentLabel(), func(m map[string]any) { m["chunk_id"] = "" }, false},
		{"is_output not bool", agentLabel(), func(m map[string]any) { m["is_output"] = "yes" }, false},
		{"long evidence", agentLabel(), func(m map[string]any) { m["evidence"] = strings.Repeat("x", MaxEvidence+1) }, false},
	}
	for _, c := range cases {
		m := strictJSON(c.label)
		if c.edit != nil {
			c.edit(m)
		}
		s := user
		if c.label.Actor == ActorAgent {
			s = agent
		}
		schemaErr := s.Validate(asJSON(t, m))
		require.Equal(t, c.ok, schemaErr == nil, "%s: schema says %v", c.name, schemaErr)
		b, _ := json.Marshal(m)
		l, err := Parse(b)
		if err == nil {
			err = Validate(l, known, map[string]bool{"u0": true, "a0": true, "a1": true})
		}
		require.Equal(t, c.ok, err == nil, "%s: validator says %v", c.name, err)
	}
}

// TestValidateRules covers the rules a schema cannot say: references,
// actor consistency and the agent field combinations.
func TestValidateRules(t *testing.T) {
	t.Parallel()
	earlier := map[string]bool{"u0": true, "a0": true}
	cases := []struct {
		name  string
		edit  func(*Label)
		base  func() Label
		field string
	}{
		{"target not in trace", func(l *Label) { l.VerdictTarget = new("nope") }, userLabel, "verdict_target"},
		{"target is a user chunk", func(l *Label) { l.VerdictTarget = new("u0") }, userLabel, "verdict_target"},
		{"target itself", func(l *Label) { l.VerdictTarget = new("u2") }, userLabel, "verdict_target"},
		{"target without verdict", func(l *Label) { l.Verdict = VerdictNone }, userLabel, "verdict_target"},
		{"empty target", func(l *Label) { l.VerdictTarget = new("") }, userLabel, "verdict_target"},
		{"no actor", func(l *Label) { l.Actor = "" }, userLabel, "actor"},
		{"bad actor", func(l *Label) { l.Actor = "system" }, userLabel, "actor"},
		{"no task", func(l *Label) { l.TaskID = "" }, userLabel, "task_id"},
		{"tool call without effect", func(l *Label) { l.Effect = EffectNone }, toolLabel, "effect"},
		{"message with effect", func(l *Label) { l.Effect = EffectChange }, agentLabel, "effect"},
		{"message with result", func(l *Label) { l.Result = ResultError }, agentLabel, "result"},
		{"answer not output", func(l *Label) { l.IsOutput = new(false) }, agentLabel, "is_output"},
		{"duplicate on message", func(l *Label) { l.DuplicateOf = new("a0") }, agentLabel, "duplicate_of"},
		{"duplicate of later", func(l *Label) { l.ChunkID = "a0"; l.DuplicateOf = new("a1") }, toolLabel, "duplicate_of"},
		{"duplicate of user", func(l *Label) { l.ChunkID = "a1"; l.DuplicateOf = new("u0") }, toolLabel, "duplicate_of"},
		{"user field on agent", func(l *Label) { l.Sentiment = SentimentMixed }, agentLabel, "sentiment"},
		{"agent field on user", func(l *Label) { l.IsOutput = new(true) }, userLabel, "is_output"},
	}
	for _, c := range cases {
		l := c.base()
		c.edit(&l)
		err := Validate(l, known, earlier)
		var v *domain.ValidationError
		require.ErrorAs(t, err, &v, c.name)
		require.Equal(t, c.field, v.Field, "%s: %v", c.name, err)
		require.Equal(t, "invalid_label", v.Code)
	}
	dup := toolLabel()
	dup.ChunkID, dup.DuplicateOf, dup.Result = "a1", new("a0"), ResultError
	require.NoError(t, Validate(dup, known, earlier))
	require.NoError(t, Validate(userLabel(), nil, nil), "nil maps skip reference checks")
}

func TestParseIsStrict(t *testing.T) {
	t.Parallel()
	_, err := Parse([]byte(`{"chunk_id":"a","task_id":"t","actor":"agent","bogus":1}`))
	require.ErrorContains(t, err, "bogus")
	_, err = Parse([]byte(`{"chunk_id":"a","task_id":"t","actor":"agent"} {}`))
	require.ErrorContains(t, err, "after the object")
	_, err = Parse([]byte(`{"chunk_id":1}`))
	require.Error(t, err)
}

func trace() []domain.Step {
	return []domain.Step{
		{Role: domain.RoleSystem, Content: "You are a support agent"},
		{Role: domain.RoleUser, Content: "refund order 1182"},
		{Role: domain.RoleAssistant, ToolName: "lookup_order", ToolInput: map[string]any{"id": "1182"}, ToolCallID: "c1"},
		{Role: domain.RoleAssistant, ToolName: "lookup_policy", ToolInput: map[string]any{"kind": "refund"}, ToolCallID: "c2"},
		{Role: domain.RoleTool, Content: `{"policy":"30 days"}`, ToolName: "lookup_policy", ToolCallID: "c2"},
		{Role: domain.RoleTool, Content: `{"status":"delivered"}`, ToolName: "lookup_order", ToolCallID: "c1"},
		{Role: domain.RoleAssistant, Content: "Refunded."},
		{Role: domain.RoleUser, Content: "thanks"},
	}
}

func TestChunks(t *testing.T) {
	t.Parallel()
	cs := Chunks(trace())
	require.Len(t, cs, 5, "system steps belong to no chunk; each call joins its result")
	kinds := []ChunkKind{KindUserMessage, KindToolCall, KindToolCall, KindAgentMessage, KindUserMessage}
	steps := [][]int{{1}, {2, 5}, {3, 4}, {6}, {7}}
	for i, c := range cs {
		require.Equal(t, kinds[i], c.Kind)
		require.Equal(t, steps[i], c.Steps, "chunk %d", i)
		require.True(t, c.Complete)
		require.True(t, strings.HasPrefix(c.ID, "ck_"))
	}
	require.Equal(t, ActorUser, cs[0].Actor)
	require.Equal(t, ActorAgent, cs[1].Actor)

	// Without ids a result joins the call right before it; an orphan
	// result stands alone; a call awaiting its result is incomplete.
	cs = Chunks([]domain.Step{
		{Role: domain.RoleAssistant, ToolName: "ls"},
		{Role: domain.RoleTool, Content: "a.go"},
		{Role: domain.RoleTool, Content: "stray"},
		{Role: domain.RoleAssistant, ToolName: "cat", ToolCallID: "x"},
	})
	require.Len(t, cs, 3)
	require.Equal(t, []int{0, 1}, cs[0].Steps)
	require.Equal(t, []int{2}, cs[1].Steps)
	require.True(t, cs[1].Complete)
	require.False(t, cs[2].Complete)
	require.Empty(t, ToLabel(cs[2:], nil), "an incomplete call waits for its result")
}

// TestChunkIDsStableWhenTraceGrows: a grown trace keeps the ids of the
// chunks it had, identical messages get distinct ids, and only the new (or
// completed) chunks need a label.
func TestChunkIDsStableWhenTraceGrows(t *testing.T) {
	t.Parallel()
	base := trace()
	before := Chunks(base)
	grown := append(append([]domain.Step{}, base...),
		domain.Step{Role: domain.RoleAssistant, Content: "Anything else?"},
		domain.Step{Role: domain.RoleUser, Content: "thanks"})
	after := Chunks(grown)
	require.Len(t, after, len(before)+2)
	have := map[string]bool{}
	for i, c := range before {
		require.Equal(t, c.ID, after[i].ID)
		have[c.ID] = true
	}
	require.NotEqual(t, after[4].ID, after[6].ID, "two identical 'thanks' are two chunks")
	require.Equal(t, after[4].ID+"_2", after[6].ID)
	todo := ToLabel(after, have)
	require.Len(t, todo, 2)
	require.Equal(t, after[5].ID, todo[0].ID)

	// A changed message is a new chunk; the others keep their ids.
	edited := append([]domain.Step{}, base...)
	edited[6] = domain.Step{Role: domain.RoleAssistant, Content: "Refund issued."}
	ch := Chunks(edited)
	require.NotEqual(t, before[3].ID, ch[3].ID)
	require.Equal(t, before[1].ID, ch[1].ID)
	// A tool call's id changes once its result arrives.
	pending := Chunks(base[:3])
	require.NotEqual(t, pending[1].ID, before[1].ID)
	require.False(t, AgentResponded(base[:2]))
	require.True(t, AgentResponded(base[:3]))
}

func withLabel(s domain.Step, l any) domain.Step {
	s.Metadata = map[string]any{MetadataKey: l}
	return s
}

func TestFromSteps(t *testing.T) {
	t.Parallel()
	steps := trace()
	require.False(t, FromSteps(steps, nil).Present)
	steps[1] = withLabel(steps[1], map[string]any{"chunk_id": "u0", "task_id": "t1", "actor": "user", "intent": "request", "verdict": "none", "sentiment": "neutral", "evidence": "", "note": ""})
	steps[2] = withLabel(steps[2], strictJSON(toolLabel()))
	// The result step of a labeled call may repeat the label: the first wins.
	steps[5] = withLabel(steps[5], map[string]any{"garbage": true})
	steps[3] = withLabel(steps[3], map[string]any{"chunk_id": "a9", "task_id": "t1", "actor": "agent", "type": "telepathy"})
	steps[6] = withLabel(steps[6], strictJSON(agentLabel()))
	steps[7] = withLabel(steps[7], strictJSON(userLabel()))
	l := FromSteps(steps, nil)
	require.True(t, l.Present)
	require.Len(t, l.Labels, 5)
	require.NotNil(t, l.Labels[0])
	require.Equal(t, "a0", l.Labels[1].ChunkID, "imported labels keep their chunk ids")
	require.Nil(t, l.Labels[2], "an invalid label leaves its chunk unlabeled")
	require.Equal(t, "a1", l.Labels[3].ChunkID)
	require.Equal(t, "a1", *l.Labels[4].VerdictTarget)
	require.Len(t, l.Problems, 1)
	require.Equal(t, 3, l.Problems[0].StepIndex)
	require.Contains(t, l.Problems[0].Message, "telepathy")

	// A label whose actor contradicts its step is refused.
	steps[7] = withLabel(steps[7], strictJSON(agentLabel()))
	l = FromSteps(steps, nil)
	require.Nil(t, l.Labels[4])
	require.Len(t, l.Problems, 2)
	require.Equal(t, 7, l.Problems[1].StepIndex)
	require.Contains(t, l.Problems[1].Message, "actor")
}

// TestFromStepsWithStoredLabels: model-made labels (by computed chunk id)
// label the chunks that carry none; a label in the step metadata wins, and
// a stored label for another chunk or actor is not used.
func TestFromStepsWithStoredLabels(t *testing.T) {
	t.Parallel()
	steps := trace()
	cs := Chunks(steps)
	agent := agentLabel()
	agent.ChunkID = cs[3].ID
	user := userLabel()
	user.ChunkID, user.VerdictTarget = cs[4].ID, new(cs[3].ID)
	wrongActor := agentLabel()
	wrongActor.ChunkID = cs[0].ID
	stored := map[string]Label{cs[3].ID: agent, cs[4].ID: user, cs[0].ID: wrongActor, "ck_gone": agentLabel()}
	l := FromSteps(steps, stored)
	require.True(t, l.Present)
	require.Nil(t, l.Labels[0], "a stored label of the wrong actor is not used")
	require.Equal(t, cs[3].ID, l.Labels[3].ChunkID)
	require.Equal(t, cs[3].ID, *l.Labels[4].VerdictTarget, "references resolve against the trace's chunk ids")
	require.Empty(t, l.Problems)

	steps[6] = withLabel(steps[6], strictJSON(agentLabel())) // imported "a1" wins over the stored label
	l = FromSteps(steps, stored)
	require.Equal(t, "a1", l.Labels[3].ChunkID)
	require.False(t, FromSteps(trace(), nil).Present)
}

// SchemaJSON is Schema(a) encoded, as a labeler sends it to a provider.
func SchemaJSON(a Actor) []byte {
	b, err := json.Marshal(Schema(a))
	if err != nil {
		panic(err) // only maps, strings and numbers: cannot fail
	}
	return b
}
