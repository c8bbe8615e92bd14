package connectapi

import (
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/criticml/critic/projections/readmodel"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

// The read model's views are the REST shapes, and their JSON is what the
// Connect messages are read from: the view's JSON names are the proto's
// field names (snake_case), its times RFC 3339 and its free-form JSON
// objects and values what protojson reads as Struct and Value. So the API
// has one definition of each shape — the view — and REST and Connect answer
// the same data; TestShapesFillEveryField fails when a message gains a field
// its view does not fill.

// fromRESTJSON reads the REST JSON of a view into its message. Fields the
// message does not have (REST-only ones, or a detail's summary fields,
// which the message nests) are skipped.
var fromRESTJSON = protojson.UnmarshalOptions{DiscardUnknown: true}

// shape is view as its Connect message M.
func shape[M proto.Message](view any) (M, error) {
	var zero M
	m := zero.ProtoReflect().Type().New().Interface().(M)
	return m, viaRESTJSON(view, m)
}

// shapes is a list of views as their messages (a nil or empty list: none).
func shapes[M proto.Message](list any) ([]M, error) {
	b, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		return nil, err
	}
	out := make([]M, len(items))
	for i, it := range items {
		if out[i], err = shape[M](it); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// shaped is shape of what a call returned: the call's error, if any, is
// the answer, so an RPC reads shaped[M](call(...)).
func shaped[M proto.Message](view any, err error) (M, error) {
	if err != nil {
		var zero M
		return zero, err
	}
	return shape[M](view)
}

// shapedList is shapes of what a call returned (see shaped).
func shapedList[M proto.Message](list any, err error) ([]M, error) {
	if err != nil {
		return nil, err
	}
	return shapes[M](list)
}

// viaRESTJSON reads view's REST JSON into m (view may be JSON already).
func viaRESTJSON(view any, m proto.Message) error {
	b, ok := view.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(view); err != nil {
			return err
		}
	}
	if err := fromRESTJSON.Unmarshal(b, m); err != nil {
		return fmt.Errorf("convert %T: %w", m, err)
	}
	unsetNulls(m.ProtoReflect())
	return nil
}

// flatten reads into m the fields of a part of its view that REST nests
// and the message has flat (GET /evaluator's policy and benchmark figures).
func flatten(m proto.Message, part any) error {
	f := m.ProtoReflect().New().Interface()
	if err := viaRESTJSON(part, f); err != nil {
		return err
	}
	proto.Merge(m, f)
	return nil
}

// unsetNulls leaves a free-form value that REST has as null unset (protojson
// reads it as a set google.protobuf.Value holding null): proto3's absent
// field is how Connect says null.
func unsetNulls(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Kind() != protoreflect.MessageKind || fd.IsMap():
		case fd.Message().FullName() == "google.protobuf.Value":
			if !fd.IsList() {
				if _, null := v.Message().Interface().(*structpb.Value).GetKind().(*structpb.Value_NullValue); null {
					m.Clear(fd)
				}
			}
		case fd.Message().FullName().Parent() == "google.protobuf":
		case fd.IsList():
			for i := range v.List().Len() {
				unsetNulls(v.List().Get(i).Message())
			}
		default:
			unsetNulls(v.Message())
		}
		return true
	})
}

// detailToProto is a trace's detail: REST flattens the summary into the
// detail, the message nests it. Steps are converted field by field: they
// are most of a large trace's bytes, and protojson reading their text took
// a 2,500-step trace from ~20 to ~55 ms (TestShapesFillEveryField holds
// them to the view as well).
func detailToProto(d *readmodel.TraceDetail) (*criticv1.TraceDetail, error) {
	rest := *d
	rest.Steps = nil
	out, err := shape[*criticv1.TraceDetail](&rest)
	if err != nil {
		return nil, err
	}
	if out.Summary, err = shape[*criticv1.TraceSummary](&d.TraceSummary); err != nil {
		return nil, err
	}
	out.Steps = make([]*criticv1.Step, len(d.Steps))
	for i, s := range d.Steps {
		p := &criticv1.Step{Id: s.ID, Index: int32(s.Index), Role: s.Role, Content: s.Content, ToolName: s.ToolName, ToolCallId: s.ToolCallID}
		if p.ToolInput, err = jsonObject(s.ToolInput); err != nil {
			return nil, err
		}
		if p.Metadata, err = jsonObject(s.Metadata); err != nil {
			return nil, err
		}
		out.Steps[i] = p
	}
	return out, nil
}

// jsonObject is a stored JSON object as a Struct (null: unset).
func jsonObject(raw json.RawMessage) (*structpb.Struct, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	s := &structpb.Struct{}
	if err := protojson.Unmarshal(raw, s); err != nil {
		return nil, fmt.Errorf("stored step JSON is not an object: %w", err)
	}
	return s, nil
}
