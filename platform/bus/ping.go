package bus

import (
	"context"
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"
)

// Ping asks the brokers for cluster metadata and returns nil as soon as one
// answers: the readiness probe's "the broker answers". It opens and closes
// its own connection, so it never disturbs a publisher or consumer.
func Ping(ctx context.Context, brokers []string) error {
	if len(brokers) == 0 {
		return errors.New("no Kafka brokers configured")
	}
	var errs []error
	for _, addr := range brokers {
		conn, err := (&kafka.Dialer{ClientID: "critic-readyz"}).DialContext(ctx, "tcp", addr)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		if dl, ok := ctx.Deadline(); ok {
			_ = conn.SetDeadline(dl)
		}
		_, err = conn.Brokers()
		_ = conn.Close()
		if err == nil {
			return nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
	}
	return errors.Join(errs...)
}
