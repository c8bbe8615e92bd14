package main

import (
	"context"
	"os"

	"github.com/criticml/critic/gpuworker/gepa"
	"github.com/criticml/critic/gpuworker/train"
)

// modelCommand implements `critic model init|train|score|tokenize|gepa`. The work lives in
// gpuworker/train.CLI (tested there); tokenize belongs to the tokenizer
// (model_tokenize.go); gepa is gpuworker/gepa.CLI.
func modelCommand(args []string) error {
	if len(args) > 0 && args[0] == "tokenize" {
		return modelTokenize(args[1:], os.Stdin, os.Stdout, os.Stderr)
	}
	if len(args) > 0 && args[0] == "gepa" {
		return gepa.CLI(context.Background(), args[1:], os.Getenv, os.Stdout, os.Stderr)
	}
	return train.CLI(context.Background(), args, os.Stdin, os.Stdout, os.Stderr)
}
