// Package docs holds the documentation pages; its test keeps them honest:
// every environment variable the code reads is documented, every link
// between pages lands on a heading that exists, and the README stays short
// enough to read.
package docs

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	envRead = regexp.MustCompile(`(?:Getenv|LookupEnv|envOr|envInt|envBool|envDuration|envSize)\("([A-Z][A-Z0-9_]+)"`)
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
)

// TestEveryVariableIsDocumented: a variable the code reads is named in
// README.md (the index) and explained in a page under docs/.
func TestEveryVariableIsDocumented(t *testing.T) {
	files, err := exec.Command("git", "-C", "..", "ls-files", "*.go").Output()
	if err != nil {
		t.Skip("not a git checkout:", err)
	}
	readme := read(t, "../README.md")
	var pages strings.Builder
	for _, p := range glob(t, "*.md") {
		pages.WriteString(read(t, p))
	}
	for f := range strings.FieldsSeq(string(files)) {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		for _, m := range envRead.FindAllStringSubmatch(read(t, filepath.Join("..", f)), -1) {
			if !strings.Contains(readme, m[1]) {
				t.Errorf("%s reads %s: name it in README.md's variable index", f, m[1])
			}
			if !strings.Contains(pages.String(), m[1]) {
				t.Errorf("%s reads %s: document it in docs/configuration.md (or the page it belongs to)", f, m[1])
			}
		}
	}
}

// TestLinksLand: relative links in README.md and docs/*.md point at files
// that exist and, with a #fragment, at a heading of that file.
func TestLinksLand(t *testing.T) {
	for _, page := range append([]string{"../README.md"}, glob(t, "*.md")...) {
		for _, m := range mdLink.FindAllStringSubmatch(read(t, page), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			if strings.HasPrefix(filepath.Clean(path), "../../") {
				continue // outside the repository (../shared)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s: no such file", page, target)
				continue
			}
			if frag != "" && strings.HasSuffix(path, ".md") && !anchors(read(t, path))[frag] {
				t.Errorf("%s links to %s: %s has no heading #%s", page, target, path, frag)
			}
		}
	}
}

// TestReadmeFitsAScreen: the README says what Critic is, the two commands
// and where to go next; everything else is a page here.
func TestReadmeFitsAScreen(t *testing.T) {
	readme := read(t, "../README.md")
	if n := strings.Count(readme, "\n"); n >= 200 {
		t.Errorf("README.md has %d lines; keep it under 200 and move the rest to docs/", n)
	}
	for _, want := range []string{"make run", "make test"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README.md does not show %q", want)
		}
	}
}

// anchors are the fragment ids GitHub gives a page's headings.
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(md, -1) {
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(m[1])) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		out[b.String()] = true
	}
	return out
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func glob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
