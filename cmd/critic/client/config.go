package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Settings is what `critic login` stores: the server and the key that
// every client command uses unless CRITIC_URL / CRITIC_API_KEY override
// them.
type Settings struct {
	URL    string `json:"url"`
	APIKey string `json:"api_key"`
}

// Dir is the client's own directory: the stored login, the sync state, the
// hook's upload queue and its log. It is $CRITIC_CONFIG_DIR when set, else
// <user config dir>/critic (~/.config/critic on Linux, ~/Library/Application
// Support/critic on macOS).
func Dir() (string, error) {
	if d := os.Getenv("CRITIC_CONFIG_DIR"); d != "" {
		return filepath.Abs(d)
	}
	base, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("cannot find the user config directory (set HOME or CRITIC_CONFIG_DIR): %v", err)
	}
	return filepath.Join(base, "critic"), nil
}

// SettingsPath is where the login lives.
func SettingsPath() (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "config.json"), nil
}

// SaveSettings writes the login readable by the user only (0600 in a 0700
// directory): it holds an API key.
func SaveSettings(s Settings) (string, error) {
	u, err := NormalizeURL(s.URL)
	if err != nil {
		return "", err
	}
	s.URL = u
	p, err := SettingsPath()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", err
	}
	_ = os.Chmod(filepath.Dir(p), 0o700)
	raw, _ := json.MarshalIndent(s, "", "  ")
	if err := WriteFileAtomic(p, append(raw, '\n'), 0o600); err != nil {
		return "", err
	}
	return p, nil
}

// LoadSettings reads the stored login (empty when there is none) and
// applies the CRITIC_URL and CRITIC_API_KEY overrides.
func LoadSettings() (Settings, error) {
	var s Settings
	p, err := SettingsPath()
	if err != nil {
		return s, err
	}
	raw, err := ReadFileOrEmpty(p)
	if err != nil {
		return s, err
	}
	if raw != nil {
		if err := json.Unmarshal(raw, &s); err != nil {
			return s, fmt.Errorf("%s is not valid JSON (run `critic login` again): %v", p, err)
		}
	}
	if v := strings.TrimSpace(os.Getenv("CRITIC_URL")); v != "" {
		s.URL = v
	}
	if v := strings.TrimSpace(os.Getenv("CRITIC_API_KEY")); v != "" {
		s.APIKey = v
	}
	if u, err := NormalizeURL(s.URL); err == nil {
		s.URL = u
	}
	return s, nil
}

// Require fails with what to do when the server or the key is missing.
func (s Settings) Require() error {
	if s.URL == "" {
		return errors.New("no Critic server configured: run `critic login --url URL` or set CRITIC_URL")
	}
	if _, err := NormalizeURL(s.URL); err != nil {
		return err
	}
	if s.APIKey == "" {
		return errors.New("no API key configured: run `critic login --url URL` (key on stdin) or set CRITIC_API_KEY")
	}
	return nil
}

// NormalizeURL turns any address of a Critic server the product shows a
// user into the server's base URL, which the client puts API paths after:
// the web app's address (http://host:8080, with or without a trailing
// slash or a page path after #), the API's (…/api/v1, as the "Connect an
// agent" dialog shows it) or the REST API's (…/api/v1/rm). A path before
// /api (a server behind a path prefix) is kept; query and fragment (a
// sign-in link's key) are dropped. Only absolute http(s) URLs are accepted.
func NormalizeURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("server URL %q is not an absolute http(s) URL: give the address of the Critic web app, e.g. http://127.0.0.1:8080", raw)
	}
	p := strings.TrimRight(u.Path, "/")
	if i := strings.Index(p+"/", "/api/"); i >= 0 {
		p = p[:i]
	}
	u.Path, u.RawPath, u.RawQuery, u.Fragment, u.RawFragment = p, "", "", "", ""
	return u.String(), nil
}

// WriteFileAtomic replaces path with data via a temporary file and a
// rename, so a crash or a concurrent reader never sees half a file.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return err
	}
	return os.Rename(name, path)
}
