package connectapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/handlers/edge"
	"github.com/criticml/critic/projections/readmodel"
	criticv1 "github.com/criticml/critic/schema/gen/critic/v1"
)

// boundary is what REST's auth middleware, edge.Require and WriteError are
// for the REST routes: every call is authenticated and its role checked
// before the method runs (the caller is in the context, as for REST), and
// every error a method returns leaves
// through edge.ConnectError. Doing both in an interceptor keeps the
// methods free of either and covers streaming calls too.
type boundary struct{ auth *edge.Authenticator }

var _ connect.Interceptor = (*boundary)(nil)

func (b *boundary) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		c, err := b.authorize(ctx, req.Header(), req.Spec().Procedure)
		if err != nil {
			return nil, connectError(ctx, err)
		}
		if m, ok := req.Any().(proto.Message); ok {
			if err := checkMessageText("", m.ProtoReflect()); err != nil {
				return nil, connectError(ctx, err)
			}
		}
		res, err := next(edge.WithCaller(ctx, c), req)
		if err != nil {
			return nil, connectError(ctx, err)
		}
		return res, nil
	}
}

func (b *boundary) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (b *boundary) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		c, err := b.authorize(ctx, conn.RequestHeader(), conn.Spec().Procedure)
		if err != nil {
			return connectError(ctx, err)
		}
		return connectError(ctx, next(edge.WithCaller(ctx, c), checkedConn{conn}))
	}
}

// authorize authenticates a call and checks its role before the request is
// looked at: the method's declared permission (methodPermissions) through
// edge.Permit; an undeclared method is refused rather than let through.
func (b *boundary) authorize(ctx context.Context, h http.Header, procedure string) (*readmodel.Caller, error) {
	c, err := b.auth.Authenticate(ctx, h)
	if err != nil {
		return nil, err
	}
	p, ok := MethodPermission(procedure)
	if !ok {
		return nil, &domain.ForbiddenError{Message: "method " + procedure + " declares no permission"}
	}
	return c, edge.Permit(c, p)
}

// checkedConn applies checkMessageText to every message a streaming call
// receives, as WrapUnary does to a unary request.
type checkedConn struct{ connect.StreamingHandlerConn }

func (c checkedConn) Receive(msg any) error {
	if err := c.StreamingHandlerConn.Receive(msg); err != nil {
		return err
	}
	if m, ok := msg.(proto.Message); ok {
		return checkMessageText("", m.ProtoReflect())
	}
	return nil
}

// checkMessageText is the Connect edge's text rule (domain.CheckText, as
// REST applies it to bodies, path ids and query parameters): every string
// of a request, nested and repeated ones and map keys included, named by
// its proto field path. The decoders already refuse invalid UTF-8 in
// string fields; U+0000 is valid UTF-8 and only this refuses it.
func checkMessageText(prefix string, m protoreflect.Message) error {
	var err error
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		name := string(fd.Name())
		if prefix != "" {
			name = prefix + "." + name
		}
		switch {
		case fd.IsList():
			l := v.List()
			for i := 0; i < l.Len() && err == nil; i++ {
				err = checkProtoValue(fmt.Sprintf("%s[%d]", name, i), fd, l.Get(i))
			}
		case fd.IsMap():
			v.Map().Range(func(k protoreflect.MapKey, mv protoreflect.Value) bool {
				if s, ok := k.Interface().(string); ok {
					err = domain.CheckText(name, s, 0)
				}
				if err == nil {
					err = checkProtoValue(name+"."+k.String(), fd.MapValue(), mv)
				}
				return err == nil
			})
		default:
			err = checkProtoValue(name, fd, v)
		}
		return err == nil
	})
	return err
}

func checkProtoValue(field string, fd protoreflect.FieldDescriptor, v protoreflect.Value) error {
	switch fd.Kind() {
	case protoreflect.StringKind:
		return domain.CheckText(field, v.String(), 0)
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return checkMessageText(field, v.Message())
	}
	return nil
}

// connectError maps err with edge.ConnectErrorContext (an internal error is
// logged with the call's request id), and adds what a program
// needs to point at a rejected payload: a critic.v1.ErrorDetail with REST's
// error code and the JSONL line and field. Errors connect already produced
// (undecodable messages, oversized ones, a client gone mid-stream) pass
// unchanged, and a cancelled or expired call keeps its own code instead of
// counting as an internal error.
func connectError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return err
	}
	switch {
	case errors.Is(err, context.Canceled):
		return connect.NewError(connect.CodeCanceled, err)
	case errors.Is(err, context.DeadlineExceeded):
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	}
	out := edge.ConnectErrorContext(ctx, err)
	var v *domain.ValidationError
	if errors.As(out, &ce) && errors.As(err, &v) {
		info := &criticv1.ErrorDetail{Code: v.Code, Line: int32(v.Line), Field: v.Field}
		if d, derr := connect.NewErrorDetail(info); derr == nil {
			ce.AddDetail(d)
		}
	}
	return out
}

// jsonCodec is Connect's JSON codec with REST's habits: responses use the
// fields' declared snake_case names and list every field (null when unset),
// so the Connect JSON encoding of a trace reads like the REST body; requests
// with unknown fields are refused (INVALID_ARGUMENT) as REST refuses them
// (422), so a misspelt field is an error rather than silently ignored.
type jsonCodec struct{ name string }

var (
	jsonMarshal   = protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true}
	jsonUnmarshal = protojson.UnmarshalOptions{}
)

func (c jsonCodec) Name() string { return c.name }

func (c jsonCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, errors.New("connectapi: JSON codec got a non-protobuf value")
	}
	return jsonMarshal.Marshal(m)
}

func (c jsonCodec) Unmarshal(b []byte, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return errors.New("connectapi: JSON codec got a non-protobuf value")
	}
	if len(b) == 0 {
		return errors.New("empty request body: send a JSON object ({} for no fields)")
	}
	return jsonUnmarshal.Unmarshal(b, m)
}

// IsBinary tells connect the codec's output is text (used for GET requests).
func (c jsonCodec) IsBinary() bool { return false }
