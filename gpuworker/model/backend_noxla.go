//go:build !cgo

package model

import (
	"errors"

	"github.com/gomlx/compute"
)

const xlaLinked = false

func newXLABackend(string) (compute.Backend, error) {
	return nil, errors.New("this binary was built without XLA support (go-xla needs cgo to dlopen PJRT plugins); " +
		"rebuild with CGO_ENABLED=1")
}
