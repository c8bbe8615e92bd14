package worker

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// ArchiveRoot is the top-level folder of a checkpoint archive (spec 002
// "Downloading the weights": `tar xzf reward-model.tar.gz` gives reward-model/).
const ArchiveRoot = "reward-model"

// RequiredCheckpointFiles must be in a checkpoint directory for it to be archived;
// every other regular file of the directory (tokenizer_config.json,
// chat_template.jinja, action_reward_stats.json, …) goes along when present.
var RequiredCheckpointFiles = []string{"config.json", "model.safetensors", "tokenizer.json", "reward_stats.json"}

// WriteArchive writes the checkpoint directory dir as a gzipped tar at dst whose
// entries are reward-model/ and reward-model/<file> for each regular file of dir,
// in name order. Subdirectories and other file types are skipped.
func WriteArchive(dir, dst string) (err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("archiving checkpoint: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	for _, req := range RequiredCheckpointFiles {
		if !slices.Contains(names, req) {
			return fmt.Errorf("archiving checkpoint: %s has no %s", dir, req)
		}
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(dst)
		}
	}()
	gz := gzip.NewWriter(f)
	tw := tar.NewWriter(gz)
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: ArchiveRoot + "/", Mode: 0o755,
		ModTime: st.ModTime(), Format: tar.FormatPAX}); err != nil {
		return err
	}
	for _, name := range names {
		if err := addFile(tw, filepath.Join(dir, name), ArchiveRoot+"/"+name); err != nil {
			return fmt.Errorf("archiving %s: %w", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

func addFile(tw *tar.Writer, src, name string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: st.Size(),
		ModTime: st.ModTime(), Format: tar.FormatPAX}); err != nil {
		return err
	}
	n, err := io.Copy(tw, f)
	if err == nil && n != st.Size() {
		err = fmt.Errorf("file changed while archiving (%d of %d bytes)", n, st.Size())
	}
	return err
}

// ExtractArchive unpacks a checkpoint archive written by WriteArchive into dst
// (created if missing) and returns dst/reward-model. Only the reward-model/ folder's
// regular files are accepted: any other entry (another top folder, a nested path, a
// link, "..") fails the extraction, so an archive cannot write outside dst.
func ExtractArchive(src, dst string) (string, error) {
	f, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return "", fmt.Errorf("checkpoint archive %s: %w", src, err)
	}
	defer gz.Close()
	root := filepath.Join(dst, ArchiveRoot)
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	tr := tar.NewReader(gz)
	files := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("checkpoint archive %s: %w", src, err)
		}
		name := path.Clean(strings.TrimPrefix(h.Name, "./"))
		if h.Typeflag == tar.TypeDir && name == ArchiveRoot {
			continue
		}
		dir, base := path.Split(name)
		if dir != ArchiveRoot+"/" || base == "" || base == "." || base == ".." || strings.ContainsAny(base, `\`) {
			return "", fmt.Errorf("checkpoint archive %s: unexpected entry %q (want %s/<file>)", src, h.Name, ArchiveRoot)
		}
		if h.Typeflag != tar.TypeReg {
			return "", fmt.Errorf("checkpoint archive %s: entry %q is not a regular file", src, h.Name)
		}
		out, err := os.OpenFile(filepath.Join(root, base), os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		_, err = io.Copy(out, tr)
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", fmt.Errorf("checkpoint archive %s: %s: %w", src, h.Name, err)
		}
		files++
	}
	if files == 0 {
		return "", fmt.Errorf("checkpoint archive %s holds no %s/ files", src, ArchiveRoot)
	}
	return root, nil
}
