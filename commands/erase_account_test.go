package commands

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBlobKeysIn: the blob keys an erased account's events name are found
// wherever they sit in a payload, and nothing else is taken for one.
func TestBlobKeysIn(t *testing.T) {
	const acct = "0196a0b4-0000-7000-8000-000000000001"
	payload := `{"dataset_key":"datasets/` + acct + `/m1/attempt-1.json","nested":{"items":["scoring/` + acct + `/r1.json", 3]},
		"other":"datasets/0196a0b4-0000-7000-8000-000000000002/m2/attempt-1.json","url":"s3://bucket/x/` + acct + `/y",
		"abs":"/tmp/` + acct + `/z","text":"a comment about /` + acct + `/ here","id":"` + acct + `"}`
	require.ElementsMatch(t, []string{"datasets/" + acct + "/m1/attempt-1.json", "scoring/" + acct + "/r1.json"}, blobKeysIn([]byte(payload), acct))
	require.Empty(t, blobKeysIn([]byte(`not json`), acct))
}
