package formats

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/domain"
)

const otelT0 = int64(1700000000000000000)
const otelS = int64(1000000000)

func TestOTelTestdata(t *testing.T) {
	cases := []struct {
		file     string
		id       string
		steps    []string
		spans    []spanSummary
		metadata map[string]any
	}{
		{
			file: "otel_genai.json",
			id:   "0af7651916cd43dd8448eb211c80319c",
			steps: []string{"system:You are a weather bot.", "user:Weather in Paris?", `call get_weather#call_1{"city":"Paris"}`,
				"tool get_weather#call_1:18C and sunny", "reasoning:The tool answered.", "assistant:It is 18C and sunny in Paris.",
				"user:Thanks! And tomorrow?", "assistant:Tomorrow looks rainy."},
			spans: []spanSummary{
				{ID: "1111111111111111", Kind: "internal", Start: otelT0, End: otelT0 + 10*otelS, Steps: []int{}},
				{ID: "aaaaaaaaaaaaaaa1", Parent: "1111111111111111", Kind: "client", Start: otelT0 + otelS, End: otelT0 + 2*otelS, Steps: []int{0, 1, 2}},
				{ID: "bbbbbbbbbbbbbbb1", Parent: "1111111111111111", Kind: "internal", Start: otelT0 + 2*otelS + 100, End: otelT0 + 2*otelS + 200, Steps: []int{}},
				{ID: "aaaaaaaaaaaaaaa2", Parent: "1111111111111111", Kind: "client", Start: otelT0 + 3*otelS, End: otelT0 + 4*otelS, Steps: []int{3, 4, 5}},
				{ID: "aaaaaaaaaaaaaaa3", Parent: "1111111111111111", Kind: "client", Start: otelT0 + 5*otelS, End: otelT0 + 6*otelS, Steps: []int{6, 7}},
			},
			metadata: map[string]any{"agent": "weather-bot", "model": "gpt-4o", "provider": "openai"},
		},
		{
			// Collector file exporter: base64 ids, enum names, numeric
			// timestamps, a re-sent span, the root span arriving last.
			file: "otel_openinference.jsonl",
			id:   "5b8efff798038103d269b633813fc60c",
			steps: []string{"system:You research.", "user:Find Go generics docs", `call search#call_9{"q":"go generics"}`,
				"tool search#call_9:go.dev/doc/tutorial/generics", "assistant:See go.dev/doc/tutorial/generics."},
			spans: []spanSummary{
				{ID: "0000000000000a00", Kind: "internal", Start: otelT0, End: otelT0 + 5*otelS, Steps: []int{}},
				{ID: "0000000000000a01", Parent: "0000000000000a00", Kind: "internal", Start: otelT0 + otelS, End: otelT0 + 2*otelS, Steps: []int{0, 1, 2}},
				{ID: "0000000000000a02", Parent: "0000000000000a00", Kind: "internal", Start: otelT0 + 2*otelS + 5, End: otelT0 + 2*otelS + 9, Steps: []int{}},
				{ID: "0000000000000a03", Parent: "0000000000000a00", Kind: "internal", Start: otelT0 + 3*otelS, End: otelT0 + 4*otelS, Steps: []int{3, 4}},
			},
			metadata: map[string]any{"agent": "research-agent", "model": "gpt-4.1", "provider": "openai"},
		},
		{
			file: "otel_openllmetry.json",
			id:   "c0ffee00000000000000000000000001",
			steps: []string{"system:You are a calculator.", "user:What is 6*7?", "assistant:Let me compute.",
				`call multiply#toolu_1{"a":6,"b":7}`, "tool multiply#toolu_1:42", "assistant:6*7 = 42."},
			spans: []spanSummary{
				{ID: "00000000000000c1", Start: otelT0, End: otelT0 + 5*otelS, Steps: []int{}},
				{ID: "00000000000000c0", Parent: "00000000000000c1", Kind: "client", Start: otelT0 + otelS, End: otelT0 + 2*otelS, Steps: []int{0, 1, 2, 3}},
				{ID: "00000000000000c2", Parent: "00000000000000c1", Kind: "client", Start: otelT0 + 3*otelS, End: otelT0 + 4*otelS, Steps: []int{4, 5}},
			},
			metadata: map[string]any{"agent": "calc-app", "model": "claude-sonnet-4", "provider": "Anthropic"},
		},
		{
			// Deprecated per-message events as log records on their own line.
			file: "otel_logs.jsonl",
			id:   "d00d0000000000000000000000000004",
			steps: []string{"system:Be brief.", "user:Say hello to Ana.", `call lookup_user#call_h{"name":"Ana"}`,
				"tool lookup_user#call_h:Ana, from Lisbon", "assistant:Olá, Ana!"},
			spans: []spanSummary{
				{ID: "00000000000000d1", Kind: "client", Start: otelT0, End: otelT0 + otelS, Steps: []int{0, 1, 2, 3, 4}},
			},
			metadata: map[string]any{"agent": "greeter", "model": "gpt-4o-mini", "provider": "openai"},
		},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			traces, err := OTel{}.Parse(readFormatTestdata(t, c.file))
			require.NoError(t, err)
			require.Len(t, traces, 1)
			tr := traces[0]
			require.Equal(t, c.id, tr.ExternalID)
			require.Equal(t, c.steps, callSteps(tr.Steps))
			require.Equal(t, c.spans, spanSummaries(tr.Spans))
			require.Equal(t, c.metadata, tr.Metadata)
		})
	}
}

func TestOTelSpanJSONAndTimestamps(t *testing.T) {
	traces, err := OTel{}.Parse(readFormatTestdata(t, "otel_genai.json"))
	require.NoError(t, err)
	tr := traces[0]
	// Output steps carry the span's end, new input steps its start.
	require.Equal(t, "2023-11-14T22:13:21.000000000Z", tr.Steps[1].Metadata["timestamp"])
	require.Equal(t, "2023-11-14T22:13:22.000000000Z", tr.Steps[2].Metadata["timestamp"])
	b, err := json.Marshal(tr.Spans[2])
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"bbbbbbbbbbbbbbb1","parent_id":"1111111111111111","name":"execute_tool get_weather","kind":"internal",
		"start_ns":"1700000002000000100","end_ns":"1700000002000000200","input":{"city":"Paris"},"output":"18C and sunny","step_indices":[]}`, string(b))
	b, err = json.Marshal(tr.Spans[0])
	require.NoError(t, err)
	require.Contains(t, string(b), `"parent_id":null`)
	require.Contains(t, string(b), `"start_ns":"1700000000000000000"`)
}

// otelReq wraps spans in a minimal request.
func otelReq(spans ...string) string {
	return `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"spans":[` +
		strings.Join(spans, ",") + `]}]}]}`
}

func otelChatSpan(id, start, extra string) string {
	return `{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"` + id + `","name":"chat","kind":3,"startTimeUnixNano":"` + start +
		`","endTimeUnixNano":"` + start + `","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}}` + extra + `]}`
}

func TestOTelVariants(t *testing.T) {
	msgs := `,{"key":"gen_ai.input.messages","value":{"stringValue":"[{\"role\":\"user\",\"parts\":[{\"type\":\"text\",\"content\":\"hi\"}]}]"}},` +
		`{"key":"gen_ai.output.messages","value":{"stringValue":"[{\"role\":\"assistant\",\"parts\":[{\"type\":\"text\",\"content\":\"hello\"}]}]"}}`
	cases := []struct {
		name  string
		data  string
		steps []string
		kind  string
		start int64
	}{
		{"hex ids, string int64, numeric kind", otelReq(otelChatSpan("0102030405060708", "5", msgs)), []string{"user:hi", "assistant:hello"}, "client", 5},
		{"base64 ids, number int64, enum name",
			`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"AQIDBAUGBwgJCgsMDQ4PEA==","spanId":"AQIDBAUGBwg=","kind":"SPAN_KIND_CLIENT","startTimeUnixNano":7,"endTimeUnixNano":9,"attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}}` + msgs + `]}]}]}]}`,
			[]string{"user:hi", "assistant:hello"}, "client", 7},
		{"proto field names and short enum",
			`{"resource_spans":[{"scope_spans":[{"spans":[{"trace_id":"0102030405060708090a0b0c0d0e0f10","span_id":"0102030405060708","kind":"CLIENT","start_time_unix_nano":"3","end_time_unix_nano":"4","attributes":[{"key":"gen_ai.operation.name","value":{"string_value":"chat"}}` + strings.ReplaceAll(msgs, "stringValue", "string_value") + `]}]}]}]}`,
			[]string{"user:hi", "assistant:hello"}, "client", 3},
		{"operation details event",
			otelReq(`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"chat","startTimeUnixNano":"1","endTimeUnixNano":"2","events":[{"name":"gen_ai.client.inference.operation.details","timeUnixNano":"2","attributes":[` +
				strings.TrimPrefix(msgs, ",") + `]}]}`),
			[]string{"user:hi", "assistant:hello"}, "", 1},
		{"openinference llm span with only input.value/output.value",
			otelReq(`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"llm","startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{"key":"openinference.span.kind","value":{"stringValue":"LLM"}},{"key":"input.value","value":{"stringValue":"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"}},{"key":"output.value","value":{"stringValue":"{\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"hello\"}}]}"}}]}`),
			[]string{"user:hi", "assistant:hello"}, "", 1},
		{"agent span messages are not read",
			otelReq(otelChatSpan("0102030405060708", "5", msgs),
				`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060709","name":"agent","startTimeUnixNano":"6","endTimeUnixNano":"9","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"invoke_agent"}}`+
					strings.ReplaceAll(msgs, "hello", "agent says")+`]}`),
			[]string{"user:hi", "assistant:hello"}, "client", 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			traces, err := OTel{}.Parse([]byte(c.data))
			require.NoError(t, err)
			require.Len(t, traces, 1)
			require.Equal(t, "0102030405060708090a0b0c0d0e0f10", traces[0].ExternalID)
			require.Equal(t, c.steps, callSteps(traces[0].Steps))
			sp := traces[0].Spans[0]
			require.Equal(t, "0102030405060708", sp.ID)
			require.Equal(t, c.start, sp.StartNs)
			if c.kind == "" {
				require.Nil(t, sp.Kind)
			} else {
				require.Equal(t, c.kind, *sp.Kind)
			}
		})
	}
}

func TestOTelErrors(t *testing.T) {
	cases := []struct {
		name  string
		data  string
		line  int
		field string
	}{
		{"bad trace id", otelReq(`{"traceId":"xyz","spanId":"0102030405060708"}`), 0, "resourceSpans[0].scopeSpans[0].spans[0].traceId"},
		{"bad timestamp", otelReq(`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","startTimeUnixNano":"soon"}`), 0, "resourceSpans[0].scopeSpans[0].spans[0].startTimeUnixNano"},
		{"bad kind", otelReq(`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","kind":"SPAN_KIND_WEIRD"}`), 0, "resourceSpans[0].scopeSpans[0].spans[0].kind"},
		{"bad intValue", otelReq(`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","attributes":[{"key":"n","value":{"intValue":"x"}}]}`), 0, "resourceSpans[0].scopeSpans[0].spans[0].attributes[0]"},
		{"bad JSONL line", otelReq(otelChatSpan("0102030405060708", "1", "")) + "\n{nope\n", 2, ""},
		{"ends before it starts", otelReq(`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","startTimeUnixNano":"9","endTimeUnixNano":"3","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},{"key":"gen_ai.input.messages","value":{"stringValue":"[{\"role\":\"user\",\"content\":\"hi\"}]"}}]}`), 0, "spans[0].end_ns"},
		{"not otlp", `{"resourceSpans":5}` + "\n" + `[1]`, 2, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			traces, err := OTel{}.Parse([]byte(c.data))
			require.Nil(t, traces)
			requireValidationError(t, err, c.line, c.field)
		})
	}
	// No LLM call anywhere: nothing to import.
	_, err := OTel{}.Parse([]byte(otelReq(`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"GET /"}`)))
	requireValidationError(t, err, 0, "")
}

func TestOTelSplitAndRebuild(t *testing.T) {
	data := readFormatTestdata(t, "otel_genai.json")
	raws, err := SplitSpans(data)
	require.NoError(t, err)
	require.Len(t, raws, 5)
	require.Equal(t, "0af7651916cd43dd8448eb211c80319c", raws[0].TraceID)
	require.Equal(t, "1111111111111111", raws[0].SpanID)

	// Only the agent's root span so far: stored, not shown.
	tr, hasLLM, err := RebuildTrace(raws[:1])
	require.NoError(t, err)
	require.False(t, hasLLM)
	require.Empty(t, tr.Steps)

	// Spans arriving in any order, with a retry, rebuild the same trace as
	// the file import.
	want, err := OTel{}.Parse(data)
	require.NoError(t, err)
	shuffled := []RawSpan{raws[4], raws[2], raws[0], raws[3], raws[1], raws[4]}
	tr, hasLLM, err = RebuildTrace(shuffled)
	require.NoError(t, err)
	require.True(t, hasLLM)
	require.Equal(t, want[0], tr)

	// Each raw span is itself a valid otel payload.
	require.True(t, OTel{}.Detect(raws[1].JSON))
	one, err := OTel{}.Parse(raws[1].JSON)
	require.NoError(t, err)
	require.Len(t, one[0].Spans, 1)

	// Base64 ids split to hex.
	b64 := []byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"AQIDBAUGBwgJCgsMDQ4PEA==","spanId":"AQIDBAUGBwg="}]}]}]}`)
	raws, err = SplitSpans(b64)
	require.NoError(t, err)
	require.Equal(t, []string{"0102030405060708090a0b0c0d0e0f10", "0102030405060708"}, []string{raws[0].TraceID, raws[0].SpanID})

	_, err = SplitSpans([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"AQIDBAUGBwg="}]}]}]}`))
	requireValidationError(t, err, 0, "resourceSpans[0]")

	// Spans of two traces cannot be rebuilt as one.
	other := otelReq(otelChatSpan("0102030405060708", "1", ""))
	_, _, err = RebuildTrace([]RawSpan{{JSON: []byte(other)}, shuffled[0]})
	requireValidationError(t, err, 0, "")
}

func TestOTelMultipleTracesAndSkipsNonLLM(t *testing.T) {
	genai := readFormatTestdata(t, "otel_genai.json")
	var compact json.RawMessage
	require.NoError(t, json.Unmarshal(genai, &compact))
	cb, err := json.Marshal(compact)
	require.NoError(t, err)
	plain := otelReq(`{"traceId":"ffffffffffffffffffffffffffffffff","spanId":"0102030405060708","name":"GET /health"}`)
	data := string(cb) + "\n" + plain + "\n" + string(readFormatTestdata(t, "otel_logs.jsonl"))
	traces, err := OTel{}.Parse([]byte(data))
	require.NoError(t, err)
	require.Len(t, traces, 2)
	require.Equal(t, "0af7651916cd43dd8448eb211c80319c", traces[0].ExternalID)
	require.Equal(t, "d00d0000000000000000000000000004", traces[1].ExternalID)
}

func FuzzOTel(f *testing.F) {
	seedTestdata(f, "otel")
	f.Add([]byte(otelReq(otelChatSpan("0102030405060708", "5", ""))))
	f.Add([]byte(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"traceId":"0102030405060708090a0b0c0d0e0f10","eventName":"gen_ai.user.message","body":{"stringValue":"hi"}}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzParse(t, OTel{}, data)
		if raws, err := SplitSpans(data); err == nil {
			_, _, err := RebuildTrace(raws)
			if err != nil {
				var ve *domain.ValidationError
				require.ErrorAs(t, err, &ve)
			}
		}
	})
}
