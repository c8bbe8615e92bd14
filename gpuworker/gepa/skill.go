package gepa

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Identity is the skill's fixed frontmatter: chosen once by the reflection
// model, validated, and kept for the whole run (spec 004).
type Identity struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

var nameRE = regexp.MustCompile(`^[a-z0-9-]{1,64}$`)

// Validate enforces spec 001: name is lowercase letters, digits and hyphens
// (1–64), description is 1–1024 characters on one line (it is a YAML
// scalar in the frontmatter, so a newline would break the file).
func (id Identity) Validate() error {
	if !nameRE.MatchString(id.Name) {
		return fmt.Errorf("skill name %q must be 1–64 lowercase letters, digits or hyphens", id.Name)
	}
	n := utf8.RuneCountInString(id.Description)
	if n < 1 || n > 1024 {
		return fmt.Errorf("skill description must be 1–1024 characters, got %d", n)
	}
	if strings.ContainsAny(id.Description, "\r\n") {
		return errors.New("skill description must be one line")
	}
	return nil
}

// Render is the full SKILL.md of a body (spec 001 "Candidate"). The
// description is written as a double-quoted YAML scalar when plain style
// would change its meaning (a colon-space, a leading indicator, a '#'), so
// the frontmatter always parses back to the same strings.
func Render(id Identity, body string) string {
	return "---\nname: " + id.Name + "\ndescription: " + yamlScalar(id.Description) + "\n---\n\n" + body
}

func yamlScalar(s string) string {
	plain := s != "" && !strings.ContainsAny(s[:1], "-?:,[]{}#&*!|>'\"%@` ") &&
		!strings.Contains(s, ": ") && !strings.Contains(s, " #") && !strings.HasSuffix(s, ":") && strings.TrimSpace(s) == s
	if plain {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

// ParseFrontmatter reads back a rendered SKILL.md's name and description:
// the inverse of Render, which the tests check what GEPA wrote with.
func ParseFrontmatter(skill string) (Identity, string, error) {
	rest, ok := strings.CutPrefix(skill, "---\n")
	if !ok {
		return Identity{}, "", errors.New("SKILL.md does not start with a --- frontmatter line")
	}
	fm, body, ok := strings.Cut(rest, "\n---\n")
	if !ok {
		return Identity{}, "", errors.New("SKILL.md frontmatter is not closed by ---")
	}
	var id Identity
	for line := range strings.SplitSeq(fm, "\n") {
		k, v, ok := strings.Cut(line, ": ")
		if !ok {
			return Identity{}, "", fmt.Errorf("frontmatter line %q is not key: value", line)
		}
		if strings.HasPrefix(v, `"`) {
			if len(v) < 2 || !strings.HasSuffix(v, `"`) {
				return Identity{}, "", fmt.Errorf("frontmatter %s: unterminated quoted string", k)
			}
			v = strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(v[1 : len(v)-1])
		}
		switch k {
		case "name":
			id.Name = v
		case "description":
			id.Description = v
		default:
			return Identity{}, "", fmt.Errorf("frontmatter has an unexpected key %q", k)
		}
	}
	return id, strings.TrimPrefix(body, "\n"), id.Validate()
}

// Delimiters of the reflection model's answers. Tags rather than ``` fences:
// a skill body has its own code fences, which a fence-delimited answer
// cannot contain (the reference's first-to-last-fence extraction keeps
// trailing prose and snippets, and adopts an unfenced reply verbatim).
const (
	openBody  = "<new_skill_body>"
	closeBody = "</new_skill_body>"
)

// errNoBody is a reflection answer without a complete body block: rejected,
// never adopted (a truncated or chatty answer is not a skill).
var errNoBody = errors.New("the answer has no complete " + openBody + "…" + closeBody + " block")

// extractBody returns the text between the first opening tag and the last
// closing tag, trimmed.
func extractBody(reply string) (string, error) {
	i := strings.Index(reply, openBody)
	j := strings.LastIndex(reply, closeBody)
	if i < 0 || j < i+len(openBody) {
		return "", errNoBody
	}
	return strings.TrimSpace(reply[i+len(openBody) : j]), nil
}

// extractTag returns the trimmed content of the first <tag>…</tag>.
func extractTag(reply, tag string) (string, bool) {
	_, rest, opened := strings.Cut(reply, "<"+tag+">")
	inner, _, closed := strings.Cut(rest, "</"+tag+">")
	if !opened || !closed {
		return "", false
	}
	return strings.TrimSpace(inner), true
}
