package formats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// collectOrderedJSONPerLevel is collectOrderedJSON as it was written
// first — every container decoded, re-marshaled and compacted at its own
// level — kept as the reference the one-pass walk must agree with.
func collectOrderedJSONPerLevel(raw []byte, into map[string]string, depth int) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || depth > 32 {
		return
	}
	switch raw[0] {
	case '{', '[':
		var v any
		if decodeJSON(raw, &v) != nil {
			return
		}
		sorted, err := json.Marshal(v)
		if err != nil {
			return
		}
		var compact bytes.Buffer
		if json.Compact(&compact, raw) == nil && compact.String() != string(sorted) {
			into[string(sorted)] = compact.String()
		}
		if raw[0] == '{' {
			var m map[string]json.RawMessage
			if json.Unmarshal(raw, &m) == nil {
				for _, c := range m {
					collectOrderedJSONPerLevel(c, into, depth+1)
				}
			}
		} else {
			var l []json.RawMessage
			if json.Unmarshal(raw, &l) == nil {
				for _, c := range l {
					collectOrderedJSONPerLevel(c, into, depth+1)
				}
			}
		}
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil && jsonContainer(s) {
			collectOrderedJSONPerLevel([]byte(s), into, depth+1)
		}
	}
}

// The one-pass walk records exactly what decoding every level on its own
// recorded: nested objects and arrays, JSON held in strings, repeated keys,
// escapes json.Marshal writes differently (HTML characters, \u escapes,
// U+2028), numbers as written, nesting past the depth limit, and nothing
// for malformed JSON or data after the value.
func TestOrderedJSONWalkAgreesWithDecodingEachLevel(t *testing.T) {
	deep := strings.Repeat(`{"z":1,"a":[`, 40) + `{"y":2,"b":3}` + strings.Repeat(`]}`, 40)
	inner := `{"temp_c":21,"sky":"clear","nested":{"z":1,"a":[2,{"q":1,"p":"<b>&"}]}}`
	quoted, _ := json.Marshal(inner)
	cases := []string{
		`{}`, `[]`, `{"b":1,"a":2}`, `{"a":2,"b":1}`, `[{"b":1,"a":2},[3,{"d":{"c":1,"b":2}}]]`,
		inner,
		`[{"role":"tool","content":[{"type":"tool-result","output":{"type":"json","value":` + inner + `}}]}]`,
		`{"args":` + string(quoted) + `,"k":"v"}`,
		`"` + strings.ReplaceAll(inner, `"`, `\"`) + `"`,
		`{"b":1,"a":2,"b":3}`,
		`{"html":"<a href=\"x\">&amp;</a>","u":"\u00e9\u2028","e":"tab\tnew\nline","z":"\/"}`,
		`{"n":[1.0,1e5,-0,0.10,12345678901234567890,-1.5E-3],"t":true,"f":false,"x":null}`,
		"{ \"b\" : [ 1 , 2 ] ,\n \"a\" :\t{ \"d\":1, \"c\" :2 } }",
		deep,
		`{"b":1,"a":2`, `{"b":1,"a":2} {"c":3}`, `{"b":1,,"a":2}`, `[1,2,]`, `nope`, ``, `"just text"`,
		`{"k":"{\"y\":1,\"x\":2}","l":"[{\"b\":1,\"a\":2}]"}`,
		"{\"bad\":\"\xff\xfe\",\"a\":1}",
	}
	for i, c := range cases {
		want, got := map[string]string{}, map[string]string{}
		collectOrderedJSONPerLevel([]byte(c), want, 0)
		collectOrderedJSON([]byte(c), got, 0)
		require.Equal(t, want, got, "case %d: %s", i, c)
	}
	// And on the bench's own GenAI message histories.
	for i := range 50 {
		var b bytes.Buffer
		fmt.Fprintf(&b, `[{"role":"user","content":"order %d?"}`, i)
		for j := range i % 7 {
			fmt.Fprintf(&b, `,{"role":"assistant","tool_calls":[{"id":"c%d","function":{"name":"lookup","arguments":"{\"order_id\":\"%d\",\"verbose\":true}"}}]}`, j, i)
			fmt.Fprintf(&b, `,{"role":"tool","tool_call_id":"c%d","content":"{\"status\":\"shipped\",\"eta\":\"Friday\",\"carrier\":{\"name\":\"DHL\",\"id\":%d}}"}`, j, j)
		}
		b.WriteString(`]`)
		want, got := map[string]string{}, map[string]string{}
		collectOrderedJSONPerLevel(b.Bytes(), want, 0)
		collectOrderedJSON(b.Bytes(), got, 0)
		require.Equal(t, want, got, "history %d", i)
	}
}

// FuzzOrderedJSONWalk: on any input the one-pass walk and the per-level
// reference record the same. `go test` runs the seeds; `go test -fuzz
// FuzzOrderedJSONWalk ./domain/formats/` searches further.
func FuzzOrderedJSONWalk(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[2,{"d":1,"c":"<&>"}]}`, `[{"k":"{\"y\":1,\"x\":2}"}]`, `{"a":1,"a":2}`, `"[1,{\"b\":1,\"a\":2}]"`, `{"e":"\u00e9\u2028"}`, `[1.50,-0,1e3]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		want, got := map[string]string{}, map[string]string{}
		collectOrderedJSONPerLevel(raw, want, 0)
		collectOrderedJSON(raw, got, 0)
		require.Equal(t, want, got, "%q", raw)
	})
}
