//go:build cgo

package model

import (
	"github.com/gomlx/compute"
	"github.com/gomlx/go-xla/compute/xla"
)

// xlaLinked reports whether this build can load PJRT plugins (it needs cgo for dlopen).
const xlaLinked = true

// newXLABackend loads a PJRT plugin through go-xla. The plugin is dlopen'ed at run time,
// so building needs only cgo (go-xla ships the PJRT C API header); no XLA library is
// linked. Auto-install is off: a plugin name never triggers a download from GitHub or
// PyPI — it is looked up in PJRT_PLUGIN_LIBRARY_PATH and the standard directories.
func newXLABackend(config string) (compute.Backend, error) {
	xla.EnableAutoInstall(false)
	return xla.New(config)
}
