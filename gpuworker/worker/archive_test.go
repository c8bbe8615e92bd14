package worker

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/criticml/critic/gpuworker/model"
	"github.com/criticml/critic/gpuworker/train"
)

// trainTiny trains a tiny model on testDataset and returns the job directory.
func trainTiny(t *testing.T) string {
	t.Helper()
	o := DatasetOptions(testDataset("m1"))
	o.BaseDir, o.OutDir = writeTinyBase(t), filepath.Join(t.TempDir(), "job")
	require.NoError(t, os.MkdirAll(o.OutDir, 0o755))
	_, err := train.Train(context.Background(), o)
	require.NoError(t, err)
	return o.OutDir
}

func tarEntries(t *testing.T, path string) map[string]*tar.Header {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	gz, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	out := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out[h.Name] = h
	}
}

// The archive holds reward-model/ with the checkpoint files, and the extracted
// checkpoint scores exactly like the directory it was made from.
func TestArchiveLayoutAndRoundTrip(t *testing.T) {
	job := trainTiny(t)
	dir := filepath.Join(job, "model")
	archive := filepath.Join(t.TempDir(), "reward-model.tar.gz")
	require.NoError(t, WriteArchive(dir, archive))

	entries := tarEntries(t, archive)
	require.Equal(t, byte(tar.TypeDir), entries["reward-model/"].Typeflag)
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
		"chat_template.jinja", "reward_stats.json", "action_reward_stats.json"} {
		h, ok := entries["reward-model/"+f]
		require.True(t, ok, "missing %s in %v", f, entries)
		require.Equal(t, byte(tar.TypeReg), h.Typeflag)
	}
	for name := range entries {
		require.Regexp(t, `^reward-model/[^/]*$`, name)
	}

	extracted, err := ExtractArchive(archive, t.TempDir())
	require.NoError(t, err)
	require.Equal(t, ArchiveRoot, filepath.Base(extracted))
	texts := []string{"user: hi\nassistant: the answer is right", "assistant: lookup(1)", "no"}
	orig, err := model.LoadRewardModel(dir)
	require.NoError(t, err)
	defer orig.Model.Finalize()
	again, err := model.LoadRewardModel(extracted)
	require.NoError(t, err)
	defer again.Model.Finalize()
	want, err := orig.Score(texts)
	require.NoError(t, err)
	got, err := again.Score(texts)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, *orig.Stats, *again.Stats)
	require.NotNil(t, again.ActionStats)
	require.Equal(t, *orig.ActionStats, *again.ActionStats)

	// A directory without weights is not archived.
	require.NoError(t, os.Remove(filepath.Join(dir, "model.safetensors")))
	require.ErrorContains(t, WriteArchive(dir, filepath.Join(t.TempDir(), "x.tar.gz")), "model.safetensors")
}

func writeTar(t *testing.T, hdrs ...*tar.Header) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "a.tar.gz")
	f, err := os.Create(path)
	require.NoError(t, err)
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	for _, h := range hdrs {
		if h.Typeflag == tar.TypeReg {
			h.Size = 2
		}
		require.NoError(t, tw.WriteHeader(h))
		if h.Typeflag == tar.TypeReg {
			tw.Write([]byte("{}"))
		}
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	require.NoError(t, f.Close())
	return path
}

func TestExtractArchiveRejectsForeignEntries(t *testing.T) {
	for name, h := range map[string]*tar.Header{
		"escape":    {Typeflag: tar.TypeReg, Name: "reward-model/../../evil", Mode: 0o644},
		"other top": {Typeflag: tar.TypeReg, Name: "model/config.json", Mode: 0o644},
		"nested":    {Typeflag: tar.TypeReg, Name: "reward-model/sub/config.json", Mode: 0o644},
		"symlink":   {Typeflag: tar.TypeSymlink, Name: "reward-model/config.json", Linkname: "/etc/passwd"},
		"absolute":  {Typeflag: tar.TypeReg, Name: "/reward-model/config.json", Mode: 0o644},
	} {
		t.Run(name, func(t *testing.T) {
			dst := t.TempDir()
			_, err := ExtractArchive(writeTar(t, h), dst)
			require.Error(t, err)
			require.False(t, fileExists(filepath.Join(filepath.Dir(dst), "evil")))
		})
	}
	ok, err := ExtractArchive(writeTar(t, &tar.Header{Typeflag: tar.TypeReg, Name: "./reward-model/config.json", Mode: 0o644}), t.TempDir())
	require.NoError(t, err)
	require.FileExists(t, filepath.Join(ok, "config.json"))
	_, err = ExtractArchive(writeTar(t, &tar.Header{Typeflag: tar.TypeDir, Name: "reward-model/", Mode: 0o755}), t.TempDir())
	require.ErrorContains(t, err, "holds no")
}
