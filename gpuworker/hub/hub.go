// Package hub fetches base models from the Hugging Face hub into a local cache
// (<CRITIC_DATA_DIR>/models/<id>/<revision>), or passes a local directory through
// unchanged. Machines without hub access use local directories; the download code is
// exercised against an httptest server that mimics the hub's file layout.
package hub

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/criticml/critic/domain/rewardmodels"
)

// DefaultEndpoint is the public hub; HF_ENDPOINT overrides it (mirrors, tests).
const DefaultEndpoint = "https://huggingface.co"

// Client downloads model files.
type Client struct {
	Endpoint string // e.g. https://huggingface.co
	Token    string // HF_TOKEN, sent as a bearer token when set
	CacheDir string // models are cached under CacheDir/<id>/<revision>
	HTTP     *http.Client
	// Roots, when non-nil, confine a local base model to directories inside
	// them: a worker sets its CacheDir and CRITIC_MODEL_ROOTS, because the
	// path came from a tenant's request (defence in depth behind the API's
	// check). Nil — the operator's own CLI — reads any directory.
	Roots []string
	// TokenModels, with Roots set, are the hub ids (org/name) and org
	// prefixes (org/) that may be downloaded with Token besides
	// rewardmodels.DefaultBaseModel; any other id a tenant names is fetched
	// anonymously. Otherwise a tenant could name the operator's private
	// model, train on it, and download it back as its checkpoint.
	TokenModels []string
}

// EnvTokenModels is the comma-separated list behind Client.TokenModels.
const EnvTokenModels = "CRITIC_HF_TOKEN_MODELS"

// ParseTokenModels reads CRITIC_HF_TOKEN_MODELS: hub ids (org/name) and
// org prefixes (org/), separated by commas; empty entries are skipped.
func ParseTokenModels(s string) ([]string, error) {
	var out []string
	for e := range strings.SplitSeq(s, ",") {
		if e = strings.TrimSpace(e); e == "" {
			continue
		}
		org, rest, hasSlash := strings.Cut(e, "/")
		ok := hasSlash && orgPattern.MatchString(org) && (rest == "" || (idPattern.MatchString(e) && !strings.Contains(e, "..")))
		if !ok {
			return nil, fmt.Errorf("%s: %q is neither a hub model id (org/name) nor an org prefix (org/)", EnvTokenModels, e)
		}
		out = append(out, e)
	}
	return out, nil
}

// ForTenants confines c to what a tenant's base_model may use: local
// directories under its cache and CRITIC_MODEL_ROOTS, and the operator's
// HF_TOKEN only for the default base model and CRITIC_HF_TOKEN_MODELS.
func (c *Client) ForTenants(getenv func(string) string) error {
	roots, err := ModelRoots(c.CacheDir, getenv)
	if err != nil {
		return err
	}
	models, err := ParseTokenModels(getenv(EnvTokenModels))
	if err != nil {
		return err
	}
	c.Roots, c.TokenModels = roots, models
	return nil
}

// tokenFor is the token to send for id: Token for the operator's own CLI
// (no Roots), else only for the default base model and TokenModels.
func (c *Client) tokenFor(id string) string {
	if c.Roots == nil || id == rewardmodels.DefaultBaseModel {
		return c.Token
	}
	for _, m := range c.TokenModels {
		if id == m || (strings.HasSuffix(m, "/") && strings.HasPrefix(id, m)) {
			return c.Token
		}
	}
	return ""
}

// ModelRoots is where a worker lets a tenant's local base model lie: its
// base-model cache and the directories of CRITIC_MODEL_ROOTS, absolute.
// Checkpoints of other owners (DataDir/worker/…) are never under them.
func ModelRoots(cacheDir string, getenv func(string) string) ([]string, error) {
	extra, err := rewardmodels.ParseModelRoots(getenv(rewardmodels.EnvModelRoots))
	if err != nil {
		return nil, err
	}
	cache, err := filepath.Abs(cacheDir)
	if err != nil {
		return nil, err
	}
	return append([]string{cache}, extra...), nil
}

// NewFromEnv reads HF_ENDPOINT, HF_TOKEN and CRITIC_DATA_DIR (default ".data").
func NewFromEnv() *Client {
	return &Client{
		Endpoint: cmp.Or(os.Getenv("HF_ENDPOINT"), DefaultEndpoint),
		Token:    os.Getenv("HF_TOKEN"),
		CacheDir: filepath.Join(cmp.Or(os.Getenv("CRITIC_DATA_DIR"), ".data"), "models"),
		HTTP:     http.DefaultClient,
	}
}

// Required files fail the download when missing; optional ones are skipped on 404.
var (
	RequiredFiles = []string{"config.json", "tokenizer.json"}
	OptionalFiles = []string{"tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json", "generation_config.json"}
)

var (
	idPattern  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$`)
	orgPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
)

// Resolve returns a local directory for base: base itself when it is an existing
// directory (a local path is used as is), else the cached download of the hub model
// id at rev (default "main").
//
// With Roots set, a local path outside them is refused before it is
// touched, and errors name no server path (whether /etc or another
// owner's cache exists is not the tenant's to learn).
func (c *Client) Resolve(ctx context.Context, base, rev string) (string, error) {
	if c.Roots != nil && rewardmodels.IsLocalBase(base) {
		abs, err := filepath.Abs(base)
		if err != nil || !rewardmodels.UnderRoot(abs, c.Roots) {
			return "", errors.New(rewardmodels.ErrBaseModel.Message)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return "", errors.New("the local base model directory does not exist on this worker")
		}
		return abs, nil
	}
	if st, err := os.Stat(base); err == nil && st.IsDir() {
		return base, nil
	}
	if rewardmodels.IsLocalBase(base) {
		return "", fmt.Errorf("base model directory %s does not exist", base)
	}
	return c.Download(ctx, base, rev)
}

// Download fetches id@rev unless it is already cached. Files go to a temporary
// directory that is renamed into place only when complete, so a crash or a concurrent
// download never leaves a half-written model in the cache.
func (c *Client) Download(ctx context.Context, id, rev string) (string, error) {
	rev = cmp.Or(rev, "main")
	if !idPattern.MatchString(id) || strings.Contains(id, "..") {
		return "", fmt.Errorf("invalid hub model id %q", id)
	}
	if strings.ContainsAny(rev, `/\`) || rev == ".." {
		return "", fmt.Errorf("invalid revision %q", rev)
	}
	final := filepath.Join(c.CacheDir, filepath.FromSlash(id), rev)
	if _, err := os.Stat(filepath.Join(final, "config.json")); err == nil {
		return final, nil
	}
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(final), ".download-"+rev+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp) // no-op after a successful rename

	for _, f := range RequiredFiles {
		if err := c.fetch(ctx, id, rev, f, tmp, true); err != nil {
			return "", err
		}
	}
	for _, f := range OptionalFiles {
		if err := c.fetch(ctx, id, rev, f, tmp, false); err != nil {
			return "", err
		}
	}
	if err := c.fetchWeights(ctx, id, rev, tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		// Another process finished the same download first: use its copy.
		if _, serr := os.Stat(filepath.Join(final, "config.json")); serr == nil {
			return final, nil
		}
		return "", err
	}
	return final, nil
}

func (c *Client) fetchWeights(ctx context.Context, id, rev, dir string) error {
	err := c.fetch(ctx, id, rev, "model.safetensors", dir, true)
	if !errors.Is(err, errNotFound) {
		return err
	}
	if err := c.fetch(ctx, id, rev, "model.safetensors.index.json", dir, true); err != nil {
		if errors.Is(err, errNotFound) {
			return fmt.Errorf("hub model %s@%s has neither model.safetensors nor model.safetensors.index.json", id, rev)
		}
		return err
	}
	data, err := os.ReadFile(filepath.Join(dir, "model.safetensors.index.json"))
	if err != nil {
		return err
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(data, &index); err != nil {
		return fmt.Errorf("model.safetensors.index.json: %w", err)
	}
	for _, f := range index.WeightMap {
		if strings.ContainsAny(f, `/\`) || f == ".." {
			return fmt.Errorf("model.safetensors.index.json: invalid shard name %q", f)
		}
	}
	for _, f := range slices.Compact(slices.Sorted(maps.Values(index.WeightMap))) {
		if err := c.fetch(ctx, id, rev, f, dir, true); err != nil {
			return err
		}
	}
	return nil
}

var errNotFound = errors.New("not found")

// fetch downloads one file; a 404 is errNotFound (wrapped), or nil when optional.
func (c *Client) fetch(ctx context.Context, id, rev, file, dir string, required bool) error {
	u := strings.TrimRight(c.Endpoint, "/") + "/" + id + "/resolve/" + url.PathEscape(rev) + "/" + file
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	token := c.tokenFor(id)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return c.unreachable(ctx, id, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		if !required {
			return nil
		}
		return fmt.Errorf("hub: %s@%s has no %s: %w", id, rev, file, errNotFound)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		if token == "" && c.Token != "" {
			return fmt.Errorf("hub: %s@%s/%s needs authentication (HTTP %d): a base model named in a request is fetched without the server's HF_TOKEN unless the operator lists it in %s",
				id, rev, file, resp.StatusCode, EnvTokenModels)
		}
		if token == "" {
			return fmt.Errorf("hub: %s@%s/%s needs authentication (HTTP %d): set HF_TOKEN", id, rev, file, resp.StatusCode)
		}
		return fmt.Errorf("hub: HF_TOKEN was refused for %s@%s/%s (HTTP %d)", id, rev, file, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return fmt.Errorf("hub: GET %s: HTTP %d", u, resp.StatusCode)
	}
	f, err := os.Create(filepath.Join(dir, file))
	if err != nil {
		return err
	}
	n, err := io.Copy(f, resp.Body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("hub: downloading %s: %w", file, err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return fmt.Errorf("hub: %s truncated: %d of %d bytes", file, n, resp.ContentLength)
	}
	return nil
}
