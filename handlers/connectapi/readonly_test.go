package connectapi_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/criticml/critic/handlers/rest"
)

// readsByPost are the REST writes-by-method that only read: a query runs one
// read-only SELECT. Everything else a read-only key sends with POST, PUT,
// PATCH or DELETE must be refused before it has any effect.
var readsByPost = map[string]bool{
	"POST /api/v1/rm/query": true,
}

// otlpPath marks the OTLP receivers' paths: they check keys themselves
// and are not mounted in this test server.
const otlpPath = "/otel/"

// public says whether an OpenAPI operation needs no credentials
// (`security: []`, e.g. accepting a one-time sign-in link): no key's role
// applies to it.
func public(op json.RawMessage) bool {
	var o struct {
		Security *[]json.RawMessage `json:"security"`
	}
	return json.Unmarshal(op, &o) == nil && o.Security != nil && len(*o.Security) == 0
}

// TestReadOnlyKeyCannotWriteAnyRoute audits every mutating operation in the
// OpenAPI document: a read-only key gets 403 forbidden, whatever the body
// (the role is checked before the body is read), on an existing trace.
func TestReadOnlyKeyCannotWriteAnyRoute(t *testing.T) {
	e := start(t)
	refund, _ := e.importTwo(t, e.alice)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(rest.OpenAPI, &doc))
	param := regexp.MustCompile(`\{[a-z_]+\}`)
	checked := 0
	for path, ops := range doc.Paths {
		for method := range ops {
			m := strings.ToUpper(method)
			if m != http.MethodPost && m != http.MethodPut && m != http.MethodPatch && m != http.MethodDelete {
				continue
			}
			if readsByPost[m+" "+path] || strings.Contains(path, otlpPath) || public(ops[method]) {
				continue
			}
			concrete := param.ReplaceAllStringFunc(path, func(p string) string {
				if p == "{trace_id}" {
					return refund.Summary.Id
				}
				return "x"
			})
			rel, ok := strings.CutPrefix(concrete, "/api/v1/rm")
			require.True(t, ok || strings.HasPrefix(concrete, "/api/v1/"), concrete)
			var status int
			var body []byte
			if ok {
				status, body = e.rest(t, m, rel, e.aliceRO, map[string]any{})
			} else {
				req, err := http.NewRequest(m, e.url+concrete, strings.NewReader("{}"))
				require.NoError(t, err)
				req.Header.Set("Authorization", "Bearer "+e.aliceRO)
				res, err := http.DefaultClient.Do(req)
				require.NoError(t, err)
				_ = res.Body.Close()
				status = res.StatusCode
			}
			require.Equal(t, http.StatusForbidden, status, "%s %s: %s", m, path, body)
			checked++
		}
	}
	require.GreaterOrEqual(t, checked, 15)
}

// connectReads are the Connect methods a read-only key may call: they
// read. Every other method of the critic.v1 services must refuse it.
var connectReads = map[string]bool{
	"AnnotationService/ExportAnnotations": true, "AnnotationService/ExportPairs": true,
	"BaseModelService/ListBaseModels": true,
	"CriteriaService/ListCriteria":    true, "CriteriaService/GetGuidelines": true,
	"EvaluatorService/ComparisonQueue": true, "EvaluatorService/GetEvaluator": true,
	"GepaService/GetGepaRun": true, "GepaService/GetGepaSkill": true, "GepaService/ListGepaRuns": true,
	"QueryService/Query":                true,
	"RewardModelService/GetRewardModel": true, "RewardModelService/GetWeights": true,
	"RewardModelService/ListRewardModels": true, "RewardModelService/ReviewQueue": true,
	"TraceService/ExportTraces": true, "TraceService/GetTrace": true, "TraceService/ListFormats": true,
	"TraceService/ListTraces": true,
	"TeamService/ListMembers": true, "TeamService/GetReviewOverlap": true, "TeamService/GetAgreement": true,
	"TeamService/ListDisputed": true, "TeamService/GetMembersProgress": true,
}

// TestReadOnlyKeyCannotCallAnyConnectWrite audits every method of every
// critic.v1 service in the generated descriptors (a new method is audited
// without being listed): unless it is a read, a read-only key gets
// permission_denied before any check of the request.
func TestReadOnlyKeyCannotCallAnyConnectWrite(t *testing.T) {
	e := start(t)
	checked := 0
	protoregistry.GlobalFiles.RangeFilesByPackage("critic.v1", func(fd protoreflect.FileDescriptor) bool {
		for i := 0; i < fd.Services().Len(); i++ {
			svc := fd.Services().Get(i)
			for j := 0; j < svc.Methods().Len(); j++ {
				m := svc.Methods().Get(j)
				name := string(svc.Name()) + "/" + string(m.Name())
				if connectReads[name] {
					continue
				}
				status, body := e.postJSON(t, "/"+string(svc.FullName())+"/"+string(m.Name()), e.aliceRO, "{}")
				require.Equal(t, http.StatusForbidden, status, "%s: %s", name, body)
				require.Contains(t, body, "permission_denied", name)
				checked++
			}
		}
		return true
	})
	require.GreaterOrEqual(t, checked, 15)
}
