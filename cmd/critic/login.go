package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/criticml/critic/cmd/critic/client"
)

// cmdLogin stores the server URL and an API key for the client commands.
// The key is read from CRITIC_API_KEY or stdin, never from an argument, so
// it does not end up in shell history or the process list. The key is
// checked against the server before it is stored.
func cmdLogin(ctx context.Context, args []string) error {
	flags, pos, err := clientArgs(args, []string{"url"}, []string{"no-verify"})
	if err != nil {
		return err
	}
	if len(pos) > 0 || flags["url"] == "" {
		return usageError{"usage: critic login --url URL   (API key on stdin or in CRITIC_API_KEY)"}
	}
	url, err := client.NormalizeURL(flags["url"])
	if err != nil {
		return err
	}
	key := strings.TrimSpace(os.Getenv("CRITIC_API_KEY"))
	if key == "" {
		if client.IsTerminal(os.Stdin) {
			fmt.Fprint(os.Stderr, "API key: ")
		}
		line, err := bufio.NewReader(os.Stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("reading the API key from stdin: %v", err)
		}
		key = strings.TrimSpace(line)
	}
	if key == "" {
		return errors.New("no API key: pipe it on stdin (critic login --url URL < key.txt) or set CRITIC_API_KEY")
	}
	if flags["no-verify"] == "" {
		c := client.New(url, key, 30*time.Second)
		var formats []map[string]any
		if err := c.Get(ctx, "/api/v1/rm/formats", &formats); err != nil {
			return loginError(url, err)
		}
	}
	p, err := client.SaveSettings(client.Settings{URL: url, APIKey: key})
	if err != nil {
		return err
	}
	fmt.Printf("logged in to %s (saved to %s, readable only by you)\n", url, p)
	return nil
}

// loginError says what to do when the check before storing a login fails;
// nothing is stored.
func loginError(url string, err error) error {
	ae, isAPI := errors.AsType[*client.APIError](err)
	switch {
	case client.IsUnreachable(err):
		return fmt.Errorf("nothing stored: %v (check the URL and that the server is running)", err)
	case isAPI && ae.Status == http.StatusUnauthorized:
		return fmt.Errorf("nothing stored: the server at %s did not accept the API key (create one in the web app under API keys, then run `critic login --url %s` again)", url, url)
	case !isAPI || ae.Status == http.StatusNotFound || ae.Status == http.StatusMethodNotAllowed:
		// A 404, or a page that is not the API's JSON (a web server's).
		return fmt.Errorf("nothing stored: %s does not answer as a Critic server (GET %s/api/v1/rm/formats: %v); give the address of the Critic web app, e.g. http://127.0.0.1:8080", url, url, err)
	}
	return fmt.Errorf("nothing stored: the server at %s did not accept this login: %v", url, err)
}
