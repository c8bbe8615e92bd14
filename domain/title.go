package domain

import (
	"strings"
	"unicode/utf8"
)

// maxTitleRunes bounds a derived title so the trace list stays one line.
const maxTitleRunes = 80

// DefaultTitle derives a title when the trace has none and no LLM is
// configured: the first line of the first user message (else the first
// non-system step), whitespace collapsed, cut at a word boundary. It is
// deterministic so a re-import yields the same title.
func DefaultTitle(steps []Step) string {
	pick := ""
	for _, s := range steps {
		if s.Role == RoleUser && strings.TrimSpace(s.Content) != "" {
			pick = s.Content
			break
		}
	}
	if pick == "" {
		for _, s := range steps {
			if s.Role != RoleSystem && strings.TrimSpace(s.Content) != "" {
				pick = s.Content
				break
			}
		}
	}
	pick = strings.Join(strings.Fields(firstNonEmptyLine(pick)), " ")
	if pick == "" {
		return "Untitled trace"
	}
	if utf8.RuneCountInString(pick) <= maxTitleRunes {
		return pick
	}
	r := []rune(pick)[:maxTitleRunes]
	cut := string(r)
	if i := strings.LastIndexByte(cut, ' '); i > maxTitleRunes/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,.;:") + "…"
}

func firstNonEmptyLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}

// SourceID resolves a trace's source: the explicit id when one was given, else
// metadata.source_id, metadata.agent, metadata.source, then the import format
// (spec 001 "Trace sources").
func SourceID(explicit string, metadata map[string]any, format string) string {
	if explicit != "" {
		return explicit
	}
	for _, k := range []string{"source_id", "agent", "source"} {
		if v, ok := metadata[k].(string); ok && strings.TrimSpace(v) != "" {
			return v
		}
	}
	return format
}
