package main

import (
	"context"
	"fmt"
)

// cmdMigrate applies pending migrations (every other command does too, on
// start; this exists for deployments that migrate as a separate step).
func cmdMigrate(ctx context.Context, _ []string) error {
	in, err := boot(ctx)
	if err != nil {
		return err
	}
	defer in.Close()
	fmt.Println("migrations applied")
	return nil
}
