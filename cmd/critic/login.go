package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
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
	url := strings.TrimRight(strings.TrimSpace(flags["url"]), "/")
	if err := client.CheckURL(url); err != nil {
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
			return fmt.Errorf("the server did not accept this login: %v (pass --no-verify to store it anyway)", err)
		}
	}
	p, err := client.SaveSettings(client.Settings{URL: url, APIKey: key})
	if err != nil {
		return err
	}
	fmt.Printf("logged in to %s (saved to %s, readable only by you)\n", url, p)
	return nil
}
