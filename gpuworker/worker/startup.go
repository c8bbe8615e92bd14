package worker

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// AwaitAPI checks, before the worker takes any job, that the API answers and
// accepts the worker token (jobs.RouteHello). A refused token ends the
// worker with an error saying which variable to fix: retrying cannot help,
// and a worker that cannot report must not hold work. An unreachable API is
// retried until it answers or ctx ends, with one log line when it is first
// found unreachable and one when it answers; no job is taken meanwhile.
func (w *Worker) AwaitAPI(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		hello, err := w.client.Hello(ctx)
		switch {
		case err == nil:
			if attempt > 1 {
				w.log.Info("the API answers: starting to take jobs", "api", w.client.Current(), "worker_id", w.client.WorkerID)
			} else {
				w.log.Info("API reached, worker token accepted", "api", w.client.Current(), "worker_id", w.client.WorkerID,
					"lease_seconds", hello.LeaseSeconds)
			}
			return nil
		case errors.Is(err, ErrTokenRefused):
			return err
		case ctx.Err() != nil:
			return nil
		case !Transient(err):
			return fmt.Errorf("the start-up check of the API at %s failed: %w; is CRITIC_API_URL the address of a Critic API?", w.client.Current(), err)
		}
		wait := backoff(attempt, 15*time.Second)
		if attempt == 1 {
			w.log.Warn("the API cannot be reached; retrying, and taking no job until it answers",
				"api", w.client.BaseURL, "error", err, "retry_in", wait.String())
		}
		if !sleep(ctx, wait) {
			return nil
		}
	}
}
