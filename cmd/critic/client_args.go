package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/criticml/critic/cmd/critic/client"
)

// clientArgs parses the flags of a client command wherever they appear
// (`critic import dir --format stash` and `critic import --format stash
// dir` both work), unlike the flag package, which stops at the first path.
// valued names the flags that take a value; the rest are booleans.
func clientArgs(args []string, valued, boolean []string) (map[string]string, []string, error) {
	flags := map[string]string{}
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if a == "-" || !strings.HasPrefix(a, "-") {
			pos = append(pos, a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		switch {
		case slices.Contains(valued, name):
			if !hasVal {
				if i+1 >= len(args) {
					return nil, nil, usageError{fmt.Sprintf("--%s needs a value", name)}
				}
				i++
				val = args[i]
			}
			flags[name] = val
		case slices.Contains(boolean, name):
			if hasVal && val != "true" && val != "false" {
				return nil, nil, usageError{fmt.Sprintf("--%s takes no value", name)}
			}
			if !hasVal || val == "true" {
				flags[name] = "true"
			}
		default:
			return nil, nil, usageError{fmt.Sprintf("unknown flag %s", a)}
		}
	}
	return flags, pos, nil
}

// intFlag reads an integer flag with a default and a lower bound.
func intFlag(flags map[string]string, name string, def, min int) (int, error) {
	v, ok := flags[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min {
		return 0, usageError{fmt.Sprintf("--%s must be an integer ≥ %d, got %q", name, min, v)}
	}
	return n, nil
}

// serverClient returns a client for the configured server (login file,
// then CRITIC_URL / CRITIC_API_KEY), or says how to configure one.
func serverClient() (*client.Client, error) {
	s, err := client.LoadSettings()
	if err != nil {
		return nil, err
	}
	if err := s.Require(); err != nil {
		return nil, err
	}
	return client.New(s.URL, s.APIKey, 10*time.Minute), nil
}
