package hub

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/criticml/critic/domain/rewardmodels"
)

// ProbeTimeout bounds the hub check: a hub that does not answer in this
// long is reported unreachable, so the dialog never waits on it.
const ProbeTimeout = 3 * time.Second

// Probe checks cheaply whether the hub answers for the default base model
// (one HEAD of its config.json): nil when it does, else why not. A 401 or
// 403 is a hub that answers but refuses the token (or needs one).
func (c *Client) Probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	id := rewardmodels.DefaultBaseModel
	u := strings.TrimRight(c.Endpoint, "/") + "/" + id + "/resolve/main/config.json"
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u, nil)
	if err != nil {
		return err
	}
	if t := c.tokenFor(id); t != "" {
		req.Header.Set("Authorization", "Bearer "+t)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return errors.New(shortCause(err))
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return fmt.Errorf("the hub refused %s (HTTP %d): check HF_TOKEN", id, resp.StatusCode)
	case resp.StatusCode >= 400:
		return fmt.Errorf("the hub answered HTTP %d for %s", resp.StatusCode, id)
	}
	return nil
}

func (c *Client) httpClient() *http.Client { return cmp.Or(c.HTTP, http.DefaultClient) }

// shortCause is a transport error without the URL *url.Error repeats
// ("lookup huggingface.co: no such host", "connection refused").
func shortCause(err error) string {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	return err.Error()
}

// unreachable rewrites a request that never reached the hub into the
// domain's HubUnreachableError, naming HF_ENDPOINT, HF_TOKEN and the bases
// this machine has locally; an ended ctx stays what it is.
func (c *Client) unreachable(ctx context.Context, id string, err error) error {
	if ctx.Err() != nil {
		return err
	}
	// The local bases' names, not paths: a model's error is its owner's to
	// read (GET /base-models gives the full ids).
	var local []string
	for _, b := range c.LocalBases() {
		local = append(local, b.Name)
	}
	return &rewardmodels.HubUnreachableError{Endpoint: c.Endpoint, Model: id, Cause: shortCause(err), Local: local}
}

// LocalBases are the base models this machine can load without the hub:
// the demo base and other checkpoint directories in the cache
// (CacheDir/<name>), hub downloads in the cache (CacheDir/<org>/<name>/main,
// listed by their hub id), and checkpoint directories one or two levels
// under Roots (CRITIC_MODEL_ROOTS). A directory counts when it holds a
// config.json and weights (model.safetensors or its index).
func (c *Client) LocalBases() []rewardmodels.BaseChoice {
	var out []rewardmodels.BaseChoice
	seen := map[string]bool{}
	add := func(b rewardmodels.BaseChoice, dir string) {
		if seen[b.ID] {
			return
		}
		seen[b.ID] = true
		b.Reachable = true
		b.Params, b.SizeBytes = weightsSize(dir)
		out = append(out, b)
	}
	cache, err := filepath.Abs(c.CacheDir)
	if err == nil && c.CacheDir != "" {
		for _, d := range subdirs(cache) {
			name := filepath.Base(d)
			if isCheckpoint(d) {
				src := rewardmodels.BaseSourceLocal
				if name == rewardmodels.DemoBaseName {
					src = rewardmodels.BaseSourceDemo
				}
				add(rewardmodels.BaseChoice{ID: d, Name: name, Source: src}, d)
				continue
			}
			for _, m := range subdirs(d) {
				if isCheckpoint(m) { // a checkpoint one level down
					add(rewardmodels.BaseChoice{ID: m, Name: name + "/" + filepath.Base(m), Source: rewardmodels.BaseSourceLocal}, m)
					continue
				}
				if main := filepath.Join(m, "main"); isCheckpoint(main) { // a hub download
					id := name + "/" + filepath.Base(m)
					add(rewardmodels.BaseChoice{ID: id, Name: id, Source: rewardmodels.BaseSourceCache}, main)
				}
			}
		}
	}
	for _, r := range c.Roots {
		if r == cache {
			continue
		}
		for _, d := range subdirs(r) {
			if isCheckpoint(d) {
				add(rewardmodels.BaseChoice{ID: d, Name: filepath.Base(d), Source: rewardmodels.BaseSourceLocal}, d)
				continue
			}
			for _, m := range subdirs(d) {
				if isCheckpoint(m) {
					add(rewardmodels.BaseChoice{ID: m, Name: filepath.Base(d) + "/" + filepath.Base(m), Source: rewardmodels.BaseSourceLocal}, m)
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b rewardmodels.BaseChoice) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Bases is what this machine can train from now: LocalBases, and the
// default hub model — reachable when probe (the last Probe's result) is
// nil — unless it is already in the cache.
func (c *Client) Bases(probe error) []rewardmodels.BaseChoice {
	out := c.LocalBases()
	if slices.ContainsFunc(out, func(b rewardmodels.BaseChoice) bool { return b.ID == rewardmodels.DefaultBaseModel }) {
		return out
	}
	return append(out, rewardmodels.BaseChoice{ID: rewardmodels.DefaultBaseModel, Name: rewardmodels.DefaultBaseModel,
		Source: rewardmodels.BaseSourceHub, Reachable: probe == nil})
}

func subdirs(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

func isCheckpoint(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		return false
	}
	for _, f := range []string{"model.safetensors", "model.safetensors.index.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

// weightsSize reads the parameter count from the safetensors headers
// (never the tensors) and sums the weight files' sizes; nil when a file
// cannot be read.
func weightsSize(dir string) (params, size *int64) {
	files := []string{"model.safetensors"}
	if data, err := os.ReadFile(filepath.Join(dir, "model.safetensors.index.json")); err == nil {
		var index struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if json.Unmarshal(data, &index) != nil {
			return nil, nil
		}
		files = slices.DeleteFunc(slices.Compact(slices.Sorted(maps.Values(index.WeightMap))), func(f string) bool {
			return strings.ContainsAny(f, `/\`)
		})
	}
	var p, s int64
	for _, f := range files {
		n, sz, err := safetensorsParams(filepath.Join(dir, f))
		if err != nil {
			return nil, nil
		}
		p, s = p+n, s+sz
	}
	return &p, &s
}

// safetensorsParams sums the element counts in one safetensors header.
func safetensorsParams(path string) (params, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	var n uint64
	if err := binary.Read(f, binary.LittleEndian, &n); err != nil {
		return 0, 0, err
	}
	if n > 100<<20 || int64(n) > st.Size() {
		return 0, 0, fmt.Errorf("%s: implausible header length %d", path, n)
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return 0, 0, err
	}
	var tensors map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &tensors); err != nil {
		return 0, 0, err
	}
	for name, raw := range tensors {
		if name == "__metadata__" {
			continue
		}
		var t struct {
			Shape []int64 `json:"shape"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return 0, 0, err
		}
		e := int64(1)
		for _, d := range t.Shape {
			e *= d
		}
		params += e
	}
	return params, st.Size(), nil
}
