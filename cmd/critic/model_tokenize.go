package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/criticml/critic/gpuworker/tokenizer"
)

// modelTokenize implements `critic model tokenize --tokenizer DIR < texts.jsonl`.
//
// It exists so that token ids can be checked from the shell against any
// other implementation (Python transformers, tokenizers.js) on the same
// input: each stdin line is a JSON string or {"text": ...}; each stdout line
// is the JSON array of its ids, with no special tokens added (special tokens
// written in the text are still recognised, as in HF's
// encode(text, add_special_tokens=False)).
func modelTokenize(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("model tokenize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("tokenizer", "", "model directory holding tokenizer.json (and tokenizer_config.json)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: critic model tokenize --tokenizer DIR < texts.jsonl")
		fmt.Fprintln(stderr, "Each input line is a JSON string or {\"text\": ...}; prints one JSON array of ids per line.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		fs.Usage()
		return errors.New("model tokenize: --tokenizer DIR is required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("model tokenize: unexpected arguments %q (texts are read from stdin)", fs.Args())
	}
	tok, err := tokenizer.Load(*dir)
	if err != nil {
		return fmt.Errorf("model tokenize: %w", err)
	}

	in := bufio.NewReader(stdin)
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	var buf []byte
	for lineNo := 1; ; lineNo++ {
		// ReadBytes, not Scanner: a single text (a whole trace) may exceed
		// any fixed line-length limit.
		line, readErr := in.ReadBytes('\n')
		if len(trimSpace(line)) > 0 {
			text, err := parseTokenizeLine(line)
			if err != nil {
				return fmt.Errorf("model tokenize: stdin line %d: %w", lineNo, err)
			}
			buf = append(buf[:0], '[')
			for i, id := range tok.Encode(text) {
				if i > 0 {
					buf = append(buf, ',')
				}
				buf = strconv.AppendInt(buf, int64(id), 10)
			}
			buf = append(buf, ']', '\n')
			if _, err := out.Write(buf); err != nil {
				return fmt.Errorf("model tokenize: writing output: %w", err)
			}
		}
		if readErr == io.EOF {
			return out.Flush()
		}
		if readErr != nil {
			return fmt.Errorf("model tokenize: reading stdin line %d: %w", lineNo, readErr)
		}
	}
}

// parseTokenizeLine accepts a JSON string or an object with a string "text".
func parseTokenizeLine(line []byte) (string, error) {
	line = trimSpace(line)
	if line[0] == '"' {
		var s string
		if err := json.Unmarshal(line, &s); err != nil {
			return "", fmt.Errorf("invalid JSON string: %w", err)
		}
		return s, nil
	}
	var obj struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(line, &obj); err != nil {
		return "", fmt.Errorf("want a JSON string or {\"text\": ...}: %w", err)
	}
	if obj.Text == nil {
		return "", errors.New(`object has no string "text" field`)
	}
	return *obj.Text, nil
}

// trimSpace trims JSON's white space only (bytes.TrimSpace would also
// take Unicode spaces).
func trimSpace(b []byte) []byte { return bytes.Trim(b, " \t\r\n") }
