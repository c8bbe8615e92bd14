package tokenizer

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/criticml/critic/gpuworker/tokenizer/tokenizertest"
	"github.com/stretchr/testify/require"
)

// TestQwen3ParityStress compares many more random texts than the committed
// corpus against the reference; it is opt-in because it takes a while:
//
//	CRITIC_TOKENIZER_STRESS=20000 go test ./gpuworker/tokenizer -run Stress
func TestQwen3ParityStress(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CRITIC_TOKENIZER_STRESS"))
	if n <= 0 {
		t.Skip("set CRITIC_TOKENIZER_STRESS=N to compare N random texts with the reference")
	}
	parity := tokenizertest.ParityDir(t)
	qdir := tokenizertest.Qwen3Dir(t)
	texts := stressTexts(n, 7)

	var in bytes.Buffer
	for _, s := range texts {
		b, err := json.Marshal(s)
		require.NoError(t, err)
		in.Write(b)
		in.WriteByte('\n')
	}
	cmd := exec.Command("node", filepath.Join(parity, "reference.mjs"), qdir)
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	require.Len(t, lines, len(texts))

	tok := loadQwen3(t)
	bad := 0
	for i, s := range texts {
		var want []int
		require.NoError(t, json.Unmarshal([]byte(lines[i]), &want))
		got := tok.Encode(s)
		if !equalInts(got, want) {
			bad++
			if bad <= 5 {
				t.Errorf("text %d %q:\n got  %v %q\n want %v %q", i, s, got, tok.pieces(got), want, tok.pieces(want))
			}
		}
	}
	require.Zero(t, bad, "%d of %d random texts differ", bad, len(texts))
	t.Logf("%d random texts identical", len(texts))
}

// stressTexts draws texts mixing characters of every class the
// pre-tokenizer distinguishes, with class boundaries far more frequent than
// in natural text.
func stressTexts(n int, seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 1))
	pools := [][]rune{
		[]rune(" \t\n\r\v\f\u0085\u00a0\u1680\u2000\u2028\u2029\u202f\u205f\u3000\u200b\ufeff"),
		[]rune("'sStTrReEvVmMlLdD"),
		[]rune("abcXYZéßİıǅΩжא ب中あア한ーᄀ"),
		[]rune("0123456789٣१①Ⅻ½²"),
		[]rune("!?.,;:-_\"'`~@#$%^&*()[]{}<>/\\|+=…—“”¡¿"),
		[]rune("\u0300\u0301\u0308\u0327\u034f\u0654\u093c\u200d\ufe0f"),
		[]rune("😀👍🏽🇯🇵🏳🌈🧑💻"),
	}
	specials := []string{"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>"}
	assigned := func(r rune) bool {
		return !(r >= 0xd800 && r <= 0xdfff) && unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.Cc, unicode.Cf, unicode.Co)
	}
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		k := 1 + rng.IntN(60)
		for range k {
			switch x := rng.IntN(100); {
			case x < 3:
				b.WriteString(specials[rng.IntN(len(specials))])
			case x < 10:
				for {
					r := rune(rng.IntN(0x30000))
					if assigned(r) {
						b.WriteRune(r)
						break
					}
				}
			default:
				p := pools[rng.IntN(len(pools))]
				b.WriteRune(p[rng.IntN(len(p))])
			}
		}
		out[i] = b.String()
	}
	return out
}
