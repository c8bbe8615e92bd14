package main

import (
	"context"
	"os"

	"github.com/criticml/critic/gpuworker/train"
)

// modelCommand implements `critic model init|train|score|tokenize`. The work lives in
// gpuworker/train.CLI (tested there); tokenize belongs to the tokenizer
// (model_tokenize.go).
func modelCommand(args []string) error {
	if len(args) > 0 && args[0] == "tokenize" {
		return modelTokenize(args[1:])
	}
	return train.CLI(context.Background(), args, os.Stdin, os.Stdout, os.Stderr)
}
