package model

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/gobackend"
)

// BackendEnv names the environment variable that selects the compute backend.
const BackendEnv = "GOMLX_BACKEND"

// backendForms lists the accepted GOMLX_BACKEND values, for error messages.
const backendForms = `"go", "go:<options>" (e.g. go:ops_sequential, go:parallelism=8), ` +
	`or "xla:<path to a PJRT plugin .so or plugin name>[,<xla options>]" (e.g. xla:/opt/pjrt/xla_cuda_plugin.so)`

// BackendSpec is a parsed GOMLX_BACKEND value.
type BackendSpec struct {
	Kind string // "go" or "xla"
	// Config is what the backend's constructor receives: the pure-Go backend's options
	// ("ops_sequential" by default), or for XLA the plugin — an absolute path, or a
	// plugin name looked up in PJRT_PLUGIN_LIBRARY_PATH and the standard library
	// directories — followed by go-xla's ",option" list (tf32, preallocate, ...).
	Config string
	// Plugin is the XLA plugin part of Config (no options); empty for "go".
	Plugin string
}

// defaultGoOptions are the pure-Go backend's options when GOMLX_BACKEND gives none
// ("", "go", "go:"), for scoring and training alike: independent ops run in parallel
// on an unlimited pool.
//
// Training: the tiny train step at 2 cores took 0.053–0.063 s instead of 0.081–0.099 s
// with ops one at a time, the same at 1 core, and stays deterministic
// (TestTrainEndToEnd). Scoring: once the attention runs in causal query blocks
// (selfAttention), the blocks' softmaxes and masks — single-threaded ops in compute
// v0.1.2 — run side by side; Qwen3-0.6B shape, 4 layers, 8 × 1024 tokens, 2 cores:
// 10.3–12.1 s against 13.7–15.8 s one op at a time, peak RSS 2.85–2.95 against
// 2.60–2.74 GiB (BENCH_TRAIN.md, sixth pass). Before the blocks it measured the same
// speed as sequential scoring.
//
// The pool must be unlimited: with a bounded one compute v0.1.2 deadlocks (see
// NewBackend); with parallelism=-1 each matmul's Saturate waits only for the
// GOMAXPROCS tasks it started itself, never for a global slot
// (internal/gobackend/workerspool), so the cycle cannot form.
const defaultGoOptions = "ops_parallel,parallelism=-1"

// ParseBackendSpec parses a GOMLX_BACKEND value. Empty means the default pure-Go
// backend with defaultGoOptions. A plugin given as a relative path (it contains a
// "/" or ends in .so) is made absolute, since go-xla would otherwise treat it as a
// plugin name.
func ParseBackendSpec(spec string) (BackendSpec, error) {
	bad := func(why string) (BackendSpec, error) {
		return BackendSpec{}, fmt.Errorf("%s=%q: %s; accepted forms: %s", BackendEnv, spec, why, backendForms)
	}
	name, opts, hasOpts := strings.Cut(strings.TrimSpace(spec), ":")
	switch name {
	case "", gobackend.BackendName:
		if name == "" && hasOpts {
			return bad("missing backend name before ':'")
		}
		return BackendSpec{Kind: gobackend.BackendName, Config: cmp.Or(opts, defaultGoOptions)}, nil
	case "xla":
		plugin, xlaOpts, _ := strings.Cut(opts, ",")
		plugin = strings.TrimSpace(plugin)
		if plugin == "" {
			return bad("xla needs a PJRT plugin: xla:<path to the plugin .so or plugin name>")
		}
		if !filepath.IsAbs(plugin) && (strings.ContainsRune(plugin, '/') || strings.HasSuffix(plugin, ".so")) {
			abs, err := filepath.Abs(plugin)
			if err != nil {
				return bad(err.Error())
			}
			plugin = abs
		}
		cfg := plugin
		if xlaOpts != "" {
			cfg += "," + xlaOpts
		}
		return BackendSpec{Kind: "xla", Config: cfg, Plugin: plugin}, nil
	}
	return bad(fmt.Sprintf("unknown backend %q", name))
}

// NewBackend returns the compute backend named by GOMLX_BACKEND (see ParseBackendSpec)
// for scoring and training; the default is the pure-Go backend with defaultGoOptions.
//
// Why not compute's default (parallel op execution on a pool of 2 × GOMAXPROCS): that
// bounded pool deadlocks — every pool slot can be held by an op goroutine blocked in
// workerspool.Pool.Saturate (matmul) waiting for a free slot that only those same
// goroutines could release (see gpuworker/scripts/GOMLX_DEADLOCK.md).
//
// "xla:<plugin>" loads a PJRT plugin with dlopen at run time (github.com/gomlx/go-xla);
// e.g. JAX's CUDA plugin, .../site-packages/jax_plugins/xla_cuda13/xla_cuda_plugin.so
// (gpuworker/scripts/gpu_check.sh shows how to find it and its NVIDIA libraries).
func NewBackend() (compute.Backend, error) {
	return NewBackendFrom(os.Getenv(BackendEnv))
}

// NewBackendFrom is NewBackend for an explicit GOMLX_BACKEND value.
func NewBackendFrom(spec string) (compute.Backend, error) {
	s, err := ParseBackendSpec(spec)
	if err != nil {
		return nil, err
	}
	switch s.Kind {
	case "xla":
		if filepath.IsAbs(s.Plugin) {
			if _, err := os.Stat(s.Plugin); err != nil {
				if pe, ok := errors.AsType[*os.PathError](err); ok {
					err = pe.Err
				}
				return nil, fmt.Errorf("%s=%q: PJRT plugin %s: %w", BackendEnv, spec, s.Plugin, err)
			}
		}
		b, err := newXLABackend(s.Config)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: loading PJRT plugin %s: %w", BackendEnv, spec, s.Plugin, err)
		}
		return b, nil
	default:
		if err := checkMatmulEnv(); err != nil {
			return nil, err
		}
		if err := checkOpsEnv(); err != nil {
			return nil, err
		}
		_ = installMatmul()    // where it cannot, compute's kernels stay; MatmulKernel says why
		_ = installExecutors() // likewise; ExecutorsStatus says why
		b, err := goBackend(s.Config)
		if err != nil {
			return nil, fmt.Errorf("%s=%q: %w", BackendEnv, spec, err)
		}
		return b, nil
	}
}

// goBackend is gobackend.New(config), except that a "parallelism=N" option is
// applied without compute v0.1.2's fmt.Printf to standard output ("Go backend:
// parallelism set to N"), which would otherwise be printed every time a model is
// loaded, into the output of commands whose stdout is data. The option is applied as
// compute applies it, by the pool's exported SetMaxParallelism, reached by reflection
// because the backend's type lives in an internal package; if a later compute moves
// it, the option goes through gobackend.New as before (and prints).
func goBackend(config string) (compute.Backend, error) {
	var rest []string
	parallelism := ""
	for part := range strings.SplitSeq(config, ",") {
		if v, ok := strings.CutPrefix(part, "parallelism="); ok {
			parallelism = v
			continue
		}
		rest = append(rest, part)
	}
	if parallelism == "" {
		return gobackend.New(config)
	}
	n, err := strconv.Atoi(parallelism)
	if err != nil {
		return nil, fmt.Errorf("parallelism=%q: needs an integer", parallelism)
	}
	b, err := gobackend.New(strings.Join(rest, ","))
	if err != nil {
		return nil, err
	}
	if setMaxParallelism(b, n) {
		return b, nil
	}
	b.Finalize()
	return gobackend.New(config)
}

// setMaxParallelism calls b.Workers.SetMaxParallelism(n) on the pure-Go backend,
// reporting whether that method was found.
func setMaxParallelism(b compute.Backend, n int) bool {
	v := reflect.ValueOf(b)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return false
	}
	pool := v.Elem().FieldByName("Workers")
	if !pool.IsValid() || (pool.Kind() == reflect.Pointer && pool.IsNil()) {
		return false
	}
	set := pool.MethodByName("SetMaxParallelism")
	if !set.IsValid() || set.Type().NumIn() != 1 || set.Type().In(0).Kind() != reflect.Int {
		return false
	}
	set.Call([]reflect.Value{reflect.ValueOf(n)})
	return true
}

// DeviceName is what metrics.device reports for a backend: "cuda" when an XLA backend
// runs a CUDA PJRT plugin (by plugin name/path, or by its device description), "cpu"
// otherwise — the pure-Go backend and XLA's CPU plugin.
func DeviceName(b compute.Backend) string {
	if c, ok := b.(interface{ IsCUDA() bool }); ok && c.IsCUDA() {
		return "cuda"
	}
	desc := strings.ToLower(b.Name())
	if b.NumDevices() > 0 {
		desc += " " + strings.ToLower(b.DeviceDescription(0))
	}
	if strings.Contains(desc, "cuda") || strings.Contains(desc, "nvidia") {
		return "cuda"
	}
	return "cpu"
}
