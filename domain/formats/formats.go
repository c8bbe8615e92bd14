// Package formats turns every supported input format into the canonical trace.
// Each adapter is pure (bytes in, traces out), parses the whole payload before
// returning, and reports the first problem as a domain.ValidationError naming
// the line and field, so an import stores every trace or none.
package formats

import (
	"github.com/criticml/critic/domain"
)

// Adapter converts one input format into canonical traces.
type Adapter interface {
	// Name is the value of `format` on import.
	Name() string
	// Description is shown by GET /formats.
	Description() string
	// Detect reports, cheaply and without a full parse, whether data has this
	// format's shape. `auto` asks every adapter in registry order.
	Detect(data []byte) bool
	// Parse converts the whole payload. Every returned trace has passed
	// domain.ValidateTrace.
	Parse(data []byte) ([]domain.Trace, error)
}
