package rewardmodels

import (
	"errors"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/criticml/critic/domain"
)

// EnvModelRoots names the operator's extra local model roots
// (comma-separated absolute directories).
const EnvModelRoots = "CRITIC_MODEL_ROOTS"

// hubID is a Hugging Face hub id in org/name form.
var hubID = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$`)

// ErrBaseModel is the one answer to a base model that is neither a hub id
// nor a directory under an allowed root. It names no path: the message
// goes to the tenant, and a server path (or whether one exists) is not the
// tenant's to learn.
var ErrBaseModel = &domain.ValidationError{Code: "invalid_request", Field: "base_model",
	Message: "base_model must be a Hugging Face hub id such as Qwen/Qwen3-0.6B, or a local directory under a model root " +
		"this deployment allows (its data directory's models folder, or one named in " + EnvModelRoots + ")"}

// IsLocalBase reports whether base names a directory rather than a hub id.
func IsLocalBase(base string) bool {
	return strings.HasPrefix(base, "/") || strings.HasPrefix(base, ".") || strings.Contains(base, `\`) || filepath.IsAbs(base)
}

// CheckBaseModel is the rule for a base model a tenant names (issue 31): a
// hub id in org/name form, or an absolute path that, once cleaned, lies
// strictly inside one of roots (absolute, cleaned directories). Anything
// else — /etc, a relative path, ../ escapes, another owner's checkpoint
// cache (which is never a root) — is ErrBaseModel. Pure: whether the
// directory exists is the worker's to find out.
func CheckBaseModel(base string, roots []string) error {
	if !IsLocalBase(base) {
		if hubID.MatchString(base) && !strings.Contains(base, "..") {
			return nil
		}
		return ErrBaseModel
	}
	if !filepath.IsAbs(base) {
		return ErrBaseModel
	}
	if UnderRoot(base, roots) {
		return nil
	}
	return ErrBaseModel
}

// UnderRoot reports whether the absolute path p lies strictly inside one
// of roots, compared on cleaned paths (so /models/../etc is /etc).
func UnderRoot(p string, roots []string) bool {
	p = filepath.Clean(p)
	for _, r := range roots {
		if r == "" || !filepath.IsAbs(r) {
			continue
		}
		rel, err := filepath.Rel(filepath.Clean(r), p)
		if err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel) {
			return true
		}
	}
	return false
}

// ParseModelRoots reads CRITIC_MODEL_ROOTS: comma-separated absolute
// directories; a relative one is an error naming the variable.
func ParseModelRoots(s string) ([]string, error) {
	var out []string
	for _, r := range strings.Split(s, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		if !filepath.IsAbs(r) {
			return nil, errors.New(EnvModelRoots + ": " + r + " is not an absolute directory")
		}
		out = append(out, filepath.Clean(r))
	}
	return out, nil
}
