package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
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

// EditClaudeSettings adds (command != "") or removes (command == "") the
// Critic hook in a Claude Code settings.json. It edits the file's text in
// place: only Critic's own hook entries (and the "hooks" object, event
// arrays and groups it added to hold them) are inserted or cut out, so every
// other byte (the user's commands with their && and >, unicode, indentation
// and key order) stays as it was, and uninstall after install gives back the
// same bytes. It returns the new file.
func EditClaudeSettings(raw []byte, command string) ([]byte, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{\n}\n")
	}
	if err := json.Unmarshal(raw, new(any)); err != nil {
		return nil, fmt.Errorf("not a valid settings.json: %v", err)
	}
	out, err := removeCriticHooks(raw)
	if err != nil || command == "" {
		return out, err
	}
	return addCriticHooks(out, command)
}

// jsonItem is one member of an object (from its key) or one element of an
// array, as byte offsets into the document; val is the value's span.
type jsonItem struct {
	start    int
	key      string
	valStart int
	valEnd   int
}

// jsonContainer is an object or array value: open is the offset of its
// bracket, close that of its closing one.
type jsonContainer struct {
	open, close int
	items       []jsonItem
}

// skipSpace returns the offset of the first non-space byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the offset just after the JSON value starting at i (the
// document is known to be valid JSON).
func valueEnd(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch c := b[i]; c {
		case '"':
			for i++; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		default:
			if depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r') {
				return i
			}
		}
	}
	return i
}

// container reads the object or array whose opening bracket is at open.
func container(b []byte, open int) jsonContainer {
	c := jsonContainer{open: open}
	isObj := b[open] == '{'
	i := skipSpace(b, open+1)
	for b[i] != '}' && b[i] != ']' {
		it := jsonItem{start: i}
		if isObj {
			ke := valueEnd(b, i)
			_ = json.Unmarshal(b[i:ke], &it.key)
			i = skipSpace(b, ke) + 1 // the colon
			i = skipSpace(b, i)
		}
		it.valStart, it.valEnd = i, valueEnd(b, i)
		c.items = append(c.items, it)
		i = skipSpace(b, it.valEnd)
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
	}
	c.close = i
	return c
}

func (c jsonContainer) member(key string) (jsonItem, bool) {
	for _, it := range c.items {
		if it.key == key {
			return it, true
		}
	}
	return jsonItem{}, false
}

// edit replaces b[start:end] with s.
type edit struct {
	start, end int
	s          string
}

func applyEdits(b []byte, es []edit) []byte {
	sort.Slice(es, func(i, j int) bool { return es[i].start > es[j].start })
	out := slices.Clone(b)
	for _, e := range es {
		out = slices.Replace(out, e.start, e.end, []byte(e.s)...)
	}
	return out
}

// removals cuts the items of c whose index is in drop, with the comma and
// space that joined each to its neighbour, the inverse of appendItem.
func removals(c jsonContainer, drop map[int]bool) []edit {
	var es []edit
	n := len(c.items)
	for i := 0; i < n; {
		if !drop[i] {
			i++
			continue
		}
		j := i
		for j+1 < n && drop[j+1] {
			j++
		}
		switch {
		case i > 0:
			es = append(es, edit{c.items[i-1].valEnd, c.items[j].valEnd, ""})
		case j < n-1:
			es = append(es, edit{c.items[0].start, c.items[j+1].start, ""})
		default:
			es = append(es, edit{c.open + 1, c.close, ""})
		}
		i = j + 1
	}
	return es
}

// removeCriticHooks cuts every Critic hook entry out of hooks.<event>, and
// the groups, event arrays and "hooks" object left empty by it.
func removeCriticHooks(b []byte) ([]byte, error) {
	i := skipSpace(b, 0)
	if b[i] != '{' {
		return nil, errors.New("not a valid settings.json: not a JSON object")
	}
	top := container(b, i)
	hm, ok := top.member("hooks")
	if !ok || string(b[hm.valStart:hm.valEnd]) == "null" {
		return b, nil
	}
	if b[hm.valStart] != '{' {
		return nil, errors.New(`settings.json: "hooks" is not an object`)
	}
	hooks := container(b, hm.valStart)
	var es []edit
	dropEvents := map[int]bool{}
	for k, ev := range hooks.items {
		if !slices.Contains(ClaudeHookEvents, ev.key) || string(b[ev.valStart:ev.valEnd]) == "null" {
			continue
		}
		if b[ev.valStart] != '[' {
			return nil, fmt.Errorf("settings.json: hooks.%s is not an array", ev.key)
		}
		groups := container(b, ev.valStart)
		dropGroups := map[int]bool{}
		var inner []edit
		for g, grp := range groups.items {
			if b[grp.valStart] != '{' {
				continue // not ours to judge
			}
			gc := container(b, grp.valStart)
			hl, ok := gc.member("hooks")
			if !ok || b[hl.valStart] != '[' {
				continue
			}
			entries := container(b, hl.valStart)
			drop := map[int]bool{}
			for e, it := range entries.items {
				var h struct {
					Command string `json:"command"`
				}
				if json.Unmarshal(b[it.valStart:it.valEnd], &h) == nil && isCriticClaudeHook(h.Command) {
					drop[e] = true
				}
			}
			switch {
			case len(drop) == 0:
			case len(drop) == len(entries.items):
				dropGroups[g] = true
			default:
				inner = append(inner, removals(entries, drop)...)
			}
		}
		if len(dropGroups) > 0 && len(dropGroups) == len(groups.items) {
			dropEvents[k] = true
			continue
		}
		es = append(es, inner...)
		es = append(es, removals(groups, dropGroups)...)
	}
	if len(dropEvents) > 0 && len(dropEvents) == len(hooks.items) {
		idx := slices.IndexFunc(top.items, func(it jsonItem) bool { return it.key == "hooks" })
		es = append(es, removals(top, map[int]bool{idx: true})...)
	} else {
		es = append(es, removals(hooks, dropEvents)...)
	}
	return applyEdits(b, es), nil
}

// addCriticHooks appends a Critic group to hooks.Stop and hooks.SessionEnd,
// creating the arrays and the "hooks" object where missing, in the style
// (indentation, one line or many) of the items around them.
func addCriticHooks(b []byte, command string) ([]byte, error) {
	type entry struct {
		Type    string `json:"type"`
		Command string `json:"command"`
		Timeout int    `json:"timeout"`
	}
	type group struct {
		Hooks []entry `json:"hooks"`
	}
	ours := group{Hooks: []entry{{Type: "command", Command: command, Timeout: 30}}}
	unit := indentUnit(b)
	top := container(b, skipSpace(b, 0))
	hm, ok := top.member("hooks")
	if !ok || string(b[hm.valStart:hm.valEnd]) == "null" {
		var evs []jsonField
		for _, ev := range ClaudeHookEvents {
			evs = append(evs, jsonField{ev, []group{ours}})
		}
		if ok {
			return applyEdits(b, []edit{{hm.valStart, hm.valEnd, formatJSON(orderedObject(evs), lineIndent(b, hm.start), unit)}}), nil
		}
		return applyEdits(b, []edit{appendItem(b, top, `"hooks": `, orderedObject(evs), unit)}), nil
	}
	hooks := container(b, hm.valStart)
	var es []edit
	for _, ev := range ClaudeHookEvents {
		em, ok := hooks.member(ev)
		switch {
		case !ok:
			key, _ := json.Marshal(ev)
			es = append(es, appendItem(b, hooks, string(key)+": ", []group{ours}, unit))
		case string(b[em.valStart:em.valEnd]) == "null":
			es = append(es, edit{em.valStart, em.valEnd, formatJSON([]group{ours}, lineIndent(b, em.start), unit)})
		default:
			es = append(es, appendItem(b, container(b, em.valStart), "", ours, unit))
		}
	}
	// Two new events in one object go in as one edit, in order.
	if len(es) == 2 && es[0].start == es[1].start {
		es = []edit{{es[0].start, es[0].end, es[0].s + es[1].s}}
	}
	return applyEdits(b, es), nil
}

// jsonField and orderedObject marshal an object with its keys in order.
type jsonField struct {
	key string
	val any
}

type orderedObject []jsonField

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		b.Write(k)
		b.WriteByte(':')
		v, err := marshalNoEscape(f.val)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// formatJSON writes v unescaped, indented by unit below a line indented by
// prefix (one line when unit is empty).
func formatJSON(v any, prefix, unit string) string {
	raw, _ := marshalNoEscape(v)
	if unit == "" {
		return string(raw)
	}
	var out bytes.Buffer
	_ = json.Indent(&out, raw, prefix, unit)
	return out.String()
}

// appendItem inserts key+v as the last item of c, joined the way the last
// item is joined to the one before it (or, in an empty container, on its
// own line one unit deeper than the container's line).
func appendItem(b []byte, c jsonContainer, key string, v any, unit string) edit {
	if len(c.items) == 0 {
		ind := lineIndent(b, c.open)
		if unit == "" {
			return edit{c.open + 1, c.open + 1, key + formatJSON(v, "", "")}
		}
		return edit{c.open + 1, c.close, "\n" + ind + unit + key + formatJSON(v, ind+unit, unit) + "\n" + ind}
	}
	last := c.items[len(c.items)-1]
	from := c.open + 1
	if len(c.items) > 1 {
		prev := c.items[len(c.items)-2]
		from = skipSpace(b, prev.valEnd) + 1 // after its comma
	}
	sep := string(b[from:last.start])
	ind := ""
	if k := strings.LastIndexByte(sep, '\n'); k >= 0 {
		ind = sep[k+1:]
	} else {
		unit = ""
	}
	return edit{last.valEnd, last.valEnd, "," + sep + key + formatJSON(v, ind, unit)}
}

// lineIndent is the leading white space of the line holding offset i.
func lineIndent(b []byte, i int) string {
	s := bytes.LastIndexByte(b[:i], '\n') + 1
	e := s
	for e < len(b) && (b[e] == ' ' || b[e] == '\t') {
		e++
	}
	return string(b[s:e])
}

// indentUnit guesses the file's indentation step from its first indented
// line ("" for a file on one line).
func indentUnit(b []byte) string {
	for _, l := range bytes.Split(b, []byte("\n"))[1:] {
		if ind := lineIndent(l, 0); ind != "" && len(bytes.TrimSpace(l)) > 0 {
			return ind
		}
	}
	if bytes.Contains(bytes.TrimSpace(b), []byte("\n")) {
		return "  "
	}
	return ""
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
			lines = slices.Insert(lines, b, "notify = "+previous+"\n")
		}
	}
	if argv == nil {
		return []byte(strings.Join(lines, "")), nil
	}
	// The user's own notify, if any (top level only: before any [table]).
	previous = ""
	at := 0
	top := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(strings.TrimSpace(l), "[") })
	if top < 0 {
		top = len(lines)
	}
	for i := 0; i < top; i++ {
		if k, _, ok := strings.Cut(lines[i], "="); ok && strings.TrimSpace(k) == "notify" {
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
	return []byte(strings.Join(slices.Insert(lines, at, block...), "")), nil
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
	end := len(l)
	tomlUnquoted(l, func(k int, c byte) bool {
		if c == '#' {
			end = k
		}
		return c != '#'
	})
	return l[:end]
}

// tomlUnquoted calls fn with each byte of l that is outside a TOML string,
// and its index, until fn returns false.
func tomlUnquoted(l string, fn func(k int, c byte) bool) {
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
		case !fn(k, c):
			return
		}
	}
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
		tomlUnquoted(l, func(_ int, c byte) bool {
			switch c {
			case '[':
				depth++
			case ']':
				depth--
			}
			return c != '#'
		})
		if depth <= 0 {
			return j + 1
		}
	}
	return len(lines)
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
