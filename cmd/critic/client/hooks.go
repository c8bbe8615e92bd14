package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// ClaudeHookEvents are the Claude Code hook events the recorder listens
// to: Stop fires each time the agent finishes answering (a paused session
// uploads its growing snapshot), SessionEnd when the session ends.
var ClaudeHookEvents = []string{"SessionEnd", "Stop"}

// hookMarker is how an installed Critic hook is recognised.
func isCriticClaudeHook(command string) bool {
	return strings.Contains(command, "hooks run claude-code")
}

// field is one key of a JSON object, kept in its original order with its
// value's original bytes.
type field struct {
	Key string
	Val json.RawMessage
}

func decodeObject(raw []byte) ([]field, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	var out []field
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, field{Key: k.(string), Val: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("unexpected data after the object")
	}
	return out, nil
}

func encodeObject(fs []field) json.RawMessage {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.Key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(f.Val)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func getField(fs []field, key string) (json.RawMessage, int) {
	for i, f := range fs {
		if f.Key == key {
			return f.Val, i
		}
	}
	return nil, -1
}

func setField(fs []field, key string, v json.RawMessage) []field {
	if _, i := getField(fs, key); i >= 0 {
		fs[i].Val = v
		return fs
	}
	return append(fs, field{Key: key, Val: v})
}

func delField(fs []field, key string) []field {
	if _, i := getField(fs, key); i >= 0 {
		return append(fs[:i], fs[i+1:]...)
	}
	return fs
}

// EditClaudeSettings adds (command != "") or removes (command == "") the
// Critic hook in a Claude Code settings.json, leaving every other key,
// event and hook as it was. It returns the new file.
func EditClaudeSettings(raw []byte, command string) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	top, err := decodeObject(raw)
	if err != nil {
		return nil, fmt.Errorf("not a valid settings.json: %v", err)
	}
	hooksRaw, _ := getField(top, "hooks")
	var hooks []field
	if len(hooksRaw) > 0 && string(hooksRaw) != "null" {
		if hooks, err = decodeObject(hooksRaw); err != nil {
			return nil, fmt.Errorf("settings.json: \"hooks\" is not an object: %v", err)
		}
	}
	for _, ev := range ClaudeHookEvents {
		groupsRaw, _ := getField(hooks, ev)
		var groups []json.RawMessage
		if len(groupsRaw) > 0 && string(groupsRaw) != "null" {
			if err := json.Unmarshal(groupsRaw, &groups); err != nil {
				return nil, fmt.Errorf("settings.json: hooks.%s is not an array: %v", ev, err)
			}
		}
		kept := groups[:0]
		for _, g := range groups {
			ng, drop, err := withoutCriticHook(g)
			if err != nil {
				return nil, fmt.Errorf("settings.json: hooks.%s: %v", ev, err)
			}
			if !drop {
				kept = append(kept, ng)
			}
		}
		groups = kept
		if command != "" {
			ours, _ := json.Marshal(map[string]any{"hooks": []any{map[string]any{"type": "command", "command": command, "timeout": 30}}})
			groups = append(groups, ours)
		}
		if len(groups) == 0 {
			hooks = delField(hooks, ev)
			continue
		}
		arr, _ := json.Marshal(groups)
		hooks = setField(hooks, ev, arr)
	}
	if len(hooks) == 0 {
		top = delField(top, "hooks")
	} else {
		top = setField(top, "hooks", encodeObject(hooks))
	}
	var out bytes.Buffer
	if err := json.Indent(&out, encodeObject(top), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// withoutCriticHook removes Critic's command from one matcher group; drop
// says the group held nothing else. Groups without it come back unchanged.
func withoutCriticHook(g json.RawMessage) (json.RawMessage, bool, error) {
	fs, err := decodeObject(g)
	if err != nil {
		return g, false, nil // not ours to judge
	}
	hr, _ := getField(fs, "hooks")
	var entries []json.RawMessage
	if json.Unmarshal(hr, &entries) != nil {
		return g, false, nil
	}
	kept := entries[:0]
	found := false
	for _, e := range entries {
		var h struct {
			Command string `json:"command"`
		}
		if json.Unmarshal(e, &h) == nil && isCriticClaudeHook(h.Command) {
			found = true
			continue
		}
		kept = append(kept, e)
	}
	if !found {
		return g, false, nil
	}
	if len(kept) == 0 {
		return nil, true, nil
	}
	arr, _ := json.Marshal(kept)
	return encodeObject(setField(fs, "hooks", arr)), false, nil
}

// ClaudeHookInstalled lists the events whose hooks run Critic.
func ClaudeHookInstalled(raw []byte) []string {
	var s struct {
		Hooks map[string][]struct {
			Hooks []struct {
				Command string `json:"command"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return nil
	}
	var out []string
	for _, ev := range ClaudeHookEvents {
		for _, g := range s.Hooks[ev] {
			for _, h := range g.Hooks {
				if isCriticClaudeHook(h.Command) {
					out = append(out, ev)
				}
			}
		}
	}
	return out
}

// The Codex block in config.toml. Codex has one top-level `notify`
// program, run after each agent turn with a JSON argument; a notify the
// user already had is kept in the block's comment, called after Critic's
// (chained), and restored on uninstall.
const (
	codexBegin    = "# >>> critic hook: uploads each Codex turn to Critic (`critic hooks uninstall codex` removes it)"
	codexEnd      = "# <<< critic hook"
	codexPrevious = "# critic-previous-notify = "
)

// EditCodexConfig installs (argv != nil) or removes the Critic notify
// program in a Codex config.toml, keeping everything else.
func EditCodexConfig(raw []byte, argv []string) ([]byte, error) {
	lines := strings.SplitAfter(string(raw), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	// Take out an existing Critic block (remembering what it replaced).
	previous := ""
	if b, e := findBlock(lines); b >= 0 {
		for _, l := range lines[b:e] {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), codexPrevious); ok {
				previous = v
			}
		}
		lines = append(lines[:b:b], lines[e:]...)
		if previous != "" {
			lines = insertLines(lines, b, []string{"notify = " + previous + "\n"})
		}
	}
	if argv == nil {
		return []byte(strings.Join(lines, "")), nil
	}
	// The user's own notify, if any (top level only: before any [table]).
	previous = ""
	at := 0
	top := len(lines)
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "[") {
			top = i
			break
		}
	}
	for i := 0; i < top; i++ {
		t := strings.TrimSpace(lines[i])
		if k, _, ok := strings.Cut(t, "="); ok && strings.TrimSpace(k) == "notify" {
			end := tomlValueEnd(lines, i)
			var parts []string
			for _, l := range lines[i:end] {
				parts = append(parts, stripTOMLComment(l))
			}
			val := strings.TrimSpace(strings.SplitN(strings.Join(parts, " "), "=", 2)[1])
			previous = strings.Join(strings.Fields(val), " ")
			lines = append(lines[:i:i], lines[end:]...)
			at = i
			break
		}
	}
	q, _ := json.Marshal(argv) // a JSON string array is a TOML array of basic strings
	block := []string{codexBegin + "\n"}
	if previous != "" {
		block = append(block, codexPrevious+previous+"\n")
	}
	block = append(block, "notify = "+string(q)+"\n", codexEnd+"\n")
	return []byte(strings.Join(insertLines(lines, at, block), "")), nil
}

// CodexPreviousNotify returns the notify program the Critic hook replaced
// (nil if none or unreadable), to chain to it.
func CodexPreviousNotify(raw []byte) []string {
	lines := strings.SplitAfter(string(raw), "\n")
	b, e := findBlock(lines)
	if b < 0 {
		return nil
	}
	for _, l := range lines[b:e] {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), codexPrevious); ok {
			var argv []string
			v = trailingComma.ReplaceAllString(v, "]")
			if json.Unmarshal([]byte(v), &argv) == nil {
				return argv
			}
			// TOML literal strings ('…') have no escapes.
			if json.Unmarshal([]byte(strings.ReplaceAll(v, "'", `"`)), &argv) == nil {
				return argv
			}
		}
	}
	return nil
}

// CodexHookInstalled reports whether config.toml has the Critic block.
func CodexHookInstalled(raw []byte) bool {
	b, _ := findBlock(strings.SplitAfter(string(raw), "\n"))
	return b >= 0
}

func findBlock(lines []string) (int, int) {
	for i, l := range lines {
		if strings.TrimSpace(l) == codexBegin {
			for j := i + 1; j < len(lines); j++ {
				if strings.TrimSpace(lines[j]) == codexEnd {
					return i, j + 1
				}
			}
			return i, len(lines)
		}
	}
	return -1, -1
}

var trailingComma = regexp.MustCompile(`,\s*]`)

// stripTOMLComment drops a # comment that is outside any string.
func stripTOMLComment(l string) string {
	var quote byte
	for k := 0; k < len(l); k++ {
		c := l[k]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				k++
			} else if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '#':
			return l[:k]
		}
	}
	return l
}

// tomlValueEnd returns the index after the last line of the value that
// starts on line i (arrays may span lines).
func tomlValueEnd(lines []string, i int) int {
	depth := 0
	for j := i; j < len(lines); j++ {
		l := lines[j]
		if j == i {
			_, l, _ = strings.Cut(l, "=")
		}
		var quote byte
		for k := 0; k < len(l); k++ {
			c := l[k]
			switch {
			case quote != 0:
				if c == '\\' && quote == '"' {
					k++
				} else if c == quote {
					quote = 0
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '#':
				k = len(l)
			case c == '[':
				depth++
			case c == ']':
				depth--
			}
		}
		if depth <= 0 {
			return j + 1
		}
	}
	return len(lines)
}

func insertLines(lines []string, at int, ins []string) []string {
	out := make([]string, 0, len(lines)+len(ins))
	out = append(out, lines[:at]...)
	out = append(out, ins...)
	return append(out, lines[at:]...)
}

// ShellQuote quotes an argument for the shell Claude Code runs hook
// commands with.
func ShellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ':' || r == '@' || r == '=' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ReadFileOrEmpty reads a config file that may not exist yet.
func ReadFileOrEmpty(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// WriteConfig replaces an agent's config file, keeping its mode (0600 for
// a new file) and creating its folder.
func WriteConfig(path string, data []byte) error {
	mode := os.FileMode(0o600)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return WriteFileAtomic(path, data, mode)
}
