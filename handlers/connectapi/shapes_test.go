package connectapi

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/criticml/critic/domain/events"
	"github.com/criticml/critic/handlers/usecase"
	"github.com/criticml/critic/projections/readmodel"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

// Every Connect message the services read from a REST view gets each of
// its fields from that view: with every field of the view set, no field of
// the message is left unset. A field added to a message (or renamed in a
// view) without its twin on the other side fails here instead of answering
// Connect clients a zero where REST has the value.
func TestShapesFillEveryField(t *testing.T) {
	t.Parallel()
	cases := []struct {
		view any
		conv func(any) (proto.Message, error)
		// unset are the message's fields a view does not fill, each
		// with the reason.
		unset []string
	}{
		{&readmodel.TraceSummary{}, conv[*criticv1.TraceSummary], nil},
		{&readmodel.TraceDetail{}, func(v any) (proto.Message, error) { return detailToProto(v.(*readmodel.TraceDetail)) }, quote("annotations[0].")},
		{&readmodel.Annotation{}, conv[*criticv1.Annotation], quote("")},
		{&readmodel.RewardModel{}, conv[*criticv1.RewardModel], nil},
		{detailWithFeedback(), conv[*criticv1.GetRewardModelResponse], []string{
			"reward_model",      // flattened in REST; filled from the same view
			"feedback_recorded", // REST says it with feedback null or not
		}},
		{&readmodel.BackgroundScoring{}, conv[*criticv1.BackgroundScoring], nil},
		{&readmodel.Criterion{}, conv[*criticv1.Criterion], nil},
		{&readmodel.Guidelines{}, conv[*criticv1.GetGuidelinesResponse], nil},
		{&readmodel.GepaRun{}, conv[*criticv1.GepaRun], nil},
		{&usecase.AgreementReport{}, conv[*criticv1.GetAgreementResponse], nil},
		{&usecase.Disputed{}, conv[*criticv1.ListDisputedResponse], nil},
		{&readmodel.Adjudication{}, conv[*criticv1.Adjudication], nil},
		{&readmodel.Member{}, conv[*criticv1.Member], nil},
		{&usecase.MembersProgress{}, conv[*criticv1.GetMembersProgressResponse], []string{
			"members[0].member", // flattened in REST; filled from the same row
		}},
		{&usecase.ComparisonQueue{}, conv[*criticv1.ComparisonQueueResponse], nil},
		{&events.ComparisonReviewedV1{}, conv[*criticv1.ReviewComparisonResponse], nil},
		{&readmodel.TraceEvaluator{}, conv[*criticv1.TraceEvaluator], nil},
		{&usecase.EvaluatorStatus{}, func(v any) (proto.Message, error) { return evaluatorToProto(*v.(*usecase.EvaluatorStatus)) }, nil},
	}
	for _, c := range cases {
		if d, ok := c.view.(*readmodel.RewardModelDetail); !ok || d.Feedback == nil {
			fill(reflect.ValueOf(c.view).Elem(), 0)
		}
		m, err := c.conv(c.view)
		require.NoError(t, err, "%T", c.view)
		var missing []string
		unsetFields(m.ProtoReflect(), "", &missing)
		require.ElementsMatch(t, c.unset, missing, "%T → %T: fields of the message that the view leaves unset", c.view, m)
	}
}

// detailWithFeedback is a filled model detail whose learning report (JSON
// as stored) holds one filled finding.
func detailWithFeedback() *readmodel.RewardModelDetail {
	var d readmodel.RewardModelDetail
	var f readmodel.FeedbackEntry
	fill(reflect.ValueOf(&d).Elem(), 0)
	fill(reflect.ValueOf(&f).Elem(), 0)
	d.Feedback, _ = json.Marshal([]readmodel.FeedbackEntry{f})
	return &d
}

// quote is an annotation's quote fields: the view keeps the quote as the
// JSON it was stored as, which fill cannot shape (TestAnnotationService
// reads a quote back over Connect).
func quote(prefix string) []string {
	return []string{prefix + "quote.text", prefix + "quote.prefix", prefix + "quote.suffix"}
}

func conv[M proto.Message](v any) (proto.Message, error) { return shape[M](v) }

// fill sets every exported field of v to a non-zero value (one element in
// each list and map; free-form JSON an object).
func fill(v reflect.Value, depth int) {
	if depth > 12 {
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Int, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes([]byte(`{"k":1}`))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), depth+1)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	}
}

// unsetFields lists the fields of m (and of its messages, and of the first
// element of its lists) that are unset, by path; a message type within
// itself (a section's children) is looked at once.
func unsetFields(m protoreflect.Message, prefix string, out *[]string, within ...protoreflect.FullName) {
	if slices.Contains(within, m.Descriptor().FullName()) {
		return
	}
	within = append(within, m.Descriptor().FullName())
	fs := m.Descriptor().Fields()
	for i := range fs.Len() {
		fd := fs.Get(i)
		name := prefix + string(fd.Name())
		if !m.Has(fd) {
			*out = append(*out, name)
			continue
		}
		if fd.Kind() != protoreflect.MessageKind || fd.IsMap() || fd.Message().FullName().Parent() == "google.protobuf" {
			continue
		}
		if fd.IsList() {
			unsetFields(m.Get(fd).List().Get(0).Message(), name+"[0].", out, within...)
		} else {
			unsetFields(m.Get(fd).Message(), name+".", out, within...)
		}
	}
}
