package rest

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/criticml/critic/domain"
)

// TestDecodeImportRequestMatchesStrict: whatever the fast path accepts, the
// strict decoder decodes to the same request (among the bodies the edge's
// text rule admits: the handler refuses the others before either decoder).
func TestDecodeImportRequestMatchesStrict(t *testing.T) {
	data, _ := json.Marshal(map[string]any{"format": "stash", "data": "{\"id\":1,\"steps\":[{\"role\":\"user\",\"content\":\"a\\nb <é> \\\" \\\\ \\t\"}]}\n{\"x\":\"/\"}", "source_id": "s"})
	cases := []string{
		string(data),
		`{}`, ` { "format" : "auto" , "data" : "x\/y\b\f\r" } `, `{"format":null,"data":"a"}`, `{"data":"a","data":"b"}`,
		`{"format":"stash","data":"\u00e9"}`, `{"Format":"stash"}`, `{"format":5}`, `{"extra":"x"}`, `{"format":"a"} x`,
		`{"format":"a"} {}`, `{"format":"a",}`, `{"data":"` + "\x01" + `"}`, `{"data":"` + "\xff" + `"}`, `{"data":"é"}`,
		`{"data":"a\q"}`, `{"data":"\ud83d\ude00 \u003c\u00E9"}`, `{"data":"\ud83d"}`, `{"data":"\ud83dx"}`, `{"data":"\udc00\ud83d"}`, `{"data":"\u12"}`, `{"data":"\u12G4"}`, `{"data":"\u0000"}`, `{"data":"unterminated}`, `[]`, `{"format":"a"`, `{"for\u006dat":"a"}`,
	}
	for _, c := range cases {
		if domain.CheckJSON("", []byte(c)) != nil {
			continue
		}
		var fast, strict importRequest
		ok := decodeImportRequest([]byte(c), &fast)
		err := decodeBodyBytes([]byte(c), &strict)
		if ok {
			if err != nil {
				t.Fatalf("%s: fast path accepted what the strict decoder rejects: %v", c, err)
			}
			if !reflect.DeepEqual(fast, strict) {
				t.Fatalf("%s: fast %+v strict %+v", c, fast, strict)
			}
		}
	}
	var req importRequest
	if !decodeImportRequest(data, &req) || *req.Format != "stash" || *req.SourceID != "s" {
		t.Fatalf("fast path refused a plain import body")
	}
}

func FuzzDecodeImportRequest(f *testing.F) {
	f.Add([]byte(`{"format":"stash","data":"{\"a\":\"\\u003c\\ud83d\\ude00\"}\n","source_id":null}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		var fast, strict importRequest
		if domain.CheckJSON("", raw) != nil || !decodeImportRequest(raw, &fast) {
			return
		}
		if err := decodeBodyBytes(raw, &strict); err != nil || !reflect.DeepEqual(fast, strict) {
			t.Fatalf("%q: fast %+v strict %+v (%v)", raw, fast, strict, err)
		}
	})
}
