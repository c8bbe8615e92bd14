package tokenizer

import (
	"unicode/utf8"
)

// byteToRune is GPT-2's byte-to-unicode table: every byte maps to a printable
// rune so that byte-level BPE vocabularies can be stored as JSON text. Bytes
// that are already printable Latin-1 map to themselves; the rest are shifted
// to U+0100 and up, in byte order.
var byteToRune [256]rune

// runeToByte is the inverse of byteToRune; runes outside the table are absent.
var runeToByte = map[rune]byte{}

func init() {
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
	}
	for b, r := range byteToRune {
		runeToByte[r] = byte(b)
	}
}

// byteLevelToBytes turns a vocabulary token (byte-level alphabet) back into
// the raw bytes it stands for. Like HF's ByteLevel decoder, a token holding
// any rune outside the byte-level alphabet (an added token such as
// "<think> " with a plain space) is passed through as its own UTF-8 bytes.
func byteLevelToBytes(tok string) ([]byte, bool) {
	out := make([]byte, 0, len(tok))
	for _, r := range tok {
		b, ok := runeToByte[r]
		if !ok {
			return []byte(tok), false
		}
		out = append(out, b)
	}
	return out, true
}

// lossyUTF8 converts bytes to a string the way Rust's String::from_utf8_lossy
// and the WHATWG TextDecoder do: every maximal invalid subsequence becomes
// ONE U+FFFD. Go's own conversions differ (strings.ToValidUTF8 collapses whole
// runs, range loops emit one U+FFFD per byte), and decoded text must match HF
// byte for byte, e.g. when a sequence is cut in the middle of a character.
func lossyUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	out := make([]byte, 0, len(b)+8)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			out = append(out, b[i:i+size]...)
			i += size
			continue
		}
		// Invalid: skip the maximal prefix of a well-formed sequence (Unicode
		// §3.9 "maximal subpart"), then emit a single replacement character.
		i += maximalSubpart(b[i:])
		out = utf8.AppendRune(out, utf8.RuneError)
	}
	return string(out)
}

// maximalSubpart returns how many bytes at the start of b form the longest
// prefix of some well-formed UTF-8 sequence (at least 1), which is what gets
// replaced by one U+FFFD.
func maximalSubpart(b []byte) int {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 1
	}
	n := 1
	for k := 0; k < need && n < len(b); k++ {
		x := b[n]
		if x < lo || x > hi {
			break
		}
		lo, hi = 0x80, 0xBF
		n++
	}
	return n
}
