package hub

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/criticml/critic/domain/rewardmodels"
	"github.com/stretchr/testify/require"
)

// writeCheckpoint writes config.json and a one-tensor model.safetensors
// (shape 4×8: 32 parameters) into dir.
func writeCheckpoint(t *testing.T, dir string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{}`), 0o644))
	hdr := []byte(`{"w":{"dtype":"F32","shape":[4,8],"data_offsets":[0,128]},"__metadata__":{"format":"pt"}}`)
	buf := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	buf = append(append(buf, hdr...), make([]byte, 128)...)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors"), buf, 0o644))
}

// A hub that cannot be reached (no such host, refused connection) fails the
// download with what to change — HF_ENDPOINT, HF_TOKEN, and the bases this
// machine has locally, by name — instead of the raw network error and URL.
func TestUnreachableHubNamesSettingsAndLocalBases(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cache := filepath.Join(data, "models")
	writeCheckpoint(t, filepath.Join(cache, rewardmodels.DemoBaseName))
	for _, endpoint := range []string{"http://hub.invalid", "http://127.0.0.1:1"} {
		c := &Client{Endpoint: endpoint, CacheDir: cache}
		var err error
		c.Roots, err = ModelRoots(cache, func(string) string { return "" })
		require.NoError(t, err)
		_, err = c.Resolve(context.Background(), rewardmodels.DefaultBaseModel, "main")
		require.Error(t, err)
		var hu *rewardmodels.HubUnreachableError
		require.ErrorAs(t, err, &hu, endpoint)
		msg := err.Error()
		require.Contains(t, msg, rewardmodels.HubUnreachablePhrase+" at "+endpoint+" to download Qwen/Qwen3-0.6B")
		require.Contains(t, msg, "HF_ENDPOINT")
		require.Contains(t, msg, "HF_TOKEN")
		require.Contains(t, msg, "choose a base model this server has locally: "+rewardmodels.DemoBaseName+".")
		require.NotContains(t, msg, "resolve/main", "the raw URL is not the message")
		require.NotContains(t, msg, data, "no server path")
		require.Error(t, c.Probe(context.Background()))
	}
	// Without a local base the advice says how to add one.
	c := &Client{Endpoint: "http://127.0.0.1:1", CacheDir: t.TempDir()}
	_, err := c.Resolve(context.Background(), rewardmodels.DefaultBaseModel, "main")
	require.ErrorContains(t, err, "put a checkpoint directory under a model root (CRITIC_MODEL_ROOTS)")
}

// LocalBases finds the demo base, a hub download in the cache (by its hub
// id) and a checkpoint under CRITIC_MODEL_ROOTS, with parameter counts from
// the safetensors headers; Bases adds the hub default, reachable as the
// probe says.
func TestLocalBasesAndTheHubDefault(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	cache := filepath.Join(data, "models")
	extra := t.TempDir()
	writeCheckpoint(t, filepath.Join(cache, rewardmodels.DemoBaseName))
	writeCheckpoint(t, filepath.Join(cache, "org", "small", "main"))
	writeCheckpoint(t, filepath.Join(extra, "mine"))
	require.NoError(t, os.MkdirAll(filepath.Join(cache, ".download-main-1"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(extra, "empty"), 0o755))
	c := &Client{Endpoint: "http://127.0.0.1:1", CacheDir: cache}
	var err error
	c.Roots, err = ModelRoots(cache, func(string) string { return extra })
	require.NoError(t, err)

	got := c.Bases(c.Probe(context.Background()))
	type row struct {
		ID, Name, Source string
		Reachable        bool
		Params           int64
	}
	var rows []row
	for _, b := range got {
		r := row{b.ID, b.Name, b.Source, b.Reachable, -1}
		if b.Params != nil {
			r.Params = *b.Params
			st, err := os.Stat(filepath.Join(c.dirOf(t, b), "model.safetensors"))
			require.NoError(t, err)
			require.Equal(t, st.Size(), *b.SizeBytes)
		}
		rows = append(rows, r)
	}
	require.Equal(t, []row{
		{filepath.Join(cache, rewardmodels.DemoBaseName), rewardmodels.DemoBaseName, "demo", true, 32},
		{filepath.Join(extra, "mine"), "mine", "local", true, 32},
		{"org/small", "org/small", "cache", true, 32},
		{rewardmodels.DefaultBaseModel, rewardmodels.DefaultBaseModel, "hub", false, -1},
	}, rows)

	// The hub default already downloaded is a cached base, not a hub one.
	writeCheckpoint(t, filepath.Join(cache, "Qwen", "Qwen3-0.6B", "main"))
	var sources []string
	for _, b := range c.Bases(nil) {
		if b.ID == rewardmodels.DefaultBaseModel {
			sources = append(sources, b.Source)
		}
	}
	require.Equal(t, []string{"cache"}, sources)
}

// dirOf is where a listed base's files are: its id, or the cached download.
func (c *Client) dirOf(t *testing.T, b rewardmodels.BaseChoice) string {
	t.Helper()
	if b.Source == rewardmodels.BaseSourceCache {
		return filepath.Join(c.CacheDir, filepath.FromSlash(b.ID), "main")
	}
	return b.ID
}
