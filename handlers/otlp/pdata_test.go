package otlp

import (
	"testing"

	"os"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
	"github.com/criticml/critic/domain/formats"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func TestOTelPDataBridge(t *testing.T) {
	data, err := os.ReadFile("../../domain/formats/testdata/otel_genai.json")
	require.NoError(t, err)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces(data)
	require.NoError(t, err)
	// Through protobuf, as the receiver gets it from Python SDKs.
	pb, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	require.NoError(t, err)
	td, err = (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(pb)
	require.NoError(t, err)

	want, err := formats.OTel{}.Parse(data)
	require.NoError(t, err)
	got, err := TracesFromOTLP(td, plog.NewLogs())
	require.NoError(t, err)
	require.Equal(t, want, got)

	raws, err := SplitPData(td)
	require.NoError(t, err)
	tr, hasLLM, err := formats.RebuildTrace(raws)
	require.NoError(t, err)
	require.True(t, hasLLM)
	require.Equal(t, want[0], tr)
}

// TracesFromOTLP builds the canonical traces of decoded traces and logs
// (either may be empty), exactly as the `otel` import would.
func TracesFromOTLP(td ptrace.Traces, ld plog.Logs) ([]domain.Trace, error) {
	var payload []byte
	if td.SpanCount() > 0 {
		b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		if err != nil {
			return nil, domain.Invalid("re-encoding spans: %v", err)
		}
		payload = append(payload, b...)
		payload = append(payload, '\n')
	}
	if ld.LogRecordCount() > 0 {
		b, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
		if err != nil {
			return nil, domain.Invalid("re-encoding logs: %v", err)
		}
		payload = append(payload, b...)
		payload = append(payload, '\n')
	}
	return formats.OTel{}.Parse(payload)
}
