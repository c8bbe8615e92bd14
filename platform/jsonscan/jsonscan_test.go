package jsonscan

import (
	"encoding/json"
	"testing"
)

// TestScalarsMatchEncodingJSON: whatever a Scanner accepts, encoding/json
// decodes to the same value.
func TestScalarsMatchEncodingJSON(t *testing.T) {
	for _, raw := range []string{
		`"plain"`, `"esc\"aped\\ \/ \b\f\n\r\t"`, `"\u00e9 \ud83d\ude00"`, `"é"`, `"\ud83d"`, `"\udc00\ud83d"`, "\"\xff\"", `"\u12G4"`,
		"\"\x01\"", `"unterminated`, `null`, `12`, `-0`, `01`, `1.5`, `1e3`, `-`, `9223372036854775808`, `"\q"`,
	} {
		checkStr(t, []byte(raw))
		checkInt(t, []byte(raw))
	}
}

func checkStr(t *testing.T, raw []byte) {
	t.Helper()
	fast, slow := "keep", "keep"
	s := New(raw)
	ok := s.Str(&fast) && s.End()
	err := json.Unmarshal(raw, &slow)
	if ok && (err != nil || fast != slow) {
		t.Fatalf("Str(%q) = %q, encoding/json %q (%v)", raw, fast, slow, err)
	}
}

func checkInt(t *testing.T, raw []byte) {
	t.Helper()
	var fast, slow int64 = 7, 7
	s := New(raw)
	ok := s.Int64(&fast) && s.End()
	err := json.Unmarshal(raw, &slow)
	if ok && (err != nil || fast != slow) {
		t.Fatalf("Int64(%q) = %d, encoding/json %d (%v)", raw, fast, slow, err)
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"plain", `q"uote`, "é", "\x01", `back\slash`, "<&>"} {
		var back string
		got := AppendString(nil, s)
		if err := json.Unmarshal(got, &back); err != nil || back != s {
			t.Fatalf("AppendString(%q) = %s, which reads back as %q (%v)", s, got, back, err)
		}
	}
}

func FuzzScalars(f *testing.F) {
	f.Add([]byte(`"a\u00e9\n"`))
	f.Add([]byte(`-12`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkStr(t, raw)
		checkInt(t, raw)
	})
}
