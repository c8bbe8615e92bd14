package model

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gomlx/compute"
	"github.com/stretchr/testify/require"
)

func TestParseBackendSpec(t *testing.T) {
	cwd, err := os.Getwd()
	require.NoError(t, err)
	good := []struct {
		spec string
		want BackendSpec
	}{
		{"", BackendSpec{Kind: "go", Config: "ops_parallel,parallelism=-1"}},
		{"go", BackendSpec{Kind: "go", Config: "ops_parallel,parallelism=-1"}},
		{"go:", BackendSpec{Kind: "go", Config: "ops_parallel,parallelism=-1"}},
		{"go:parallelism=8", BackendSpec{Kind: "go", Config: "parallelism=8"}},
		{" go:ops_sequential ", BackendSpec{Kind: "go", Config: "ops_sequential"}},
		{"xla:/opt/jax_plugins/xla_cuda13/xla_cuda_plugin.so", BackendSpec{Kind: "xla",
			Config: "/opt/jax_plugins/xla_cuda13/xla_cuda_plugin.so", Plugin: "/opt/jax_plugins/xla_cuda13/xla_cuda_plugin.so"}},
		{"xla:/p/cuda.so,notf32,preallocate=false", BackendSpec{Kind: "xla",
			Config: "/p/cuda.so,notf32,preallocate=false", Plugin: "/p/cuda.so"}},
		{"xla:cuda", BackendSpec{Kind: "xla", Config: "cuda", Plugin: "cuda"}},
		{"xla:cpu,shared_buffers", BackendSpec{Kind: "xla", Config: "cpu,shared_buffers", Plugin: "cpu"}},
		{"xla:plugins/x.so", BackendSpec{Kind: "xla", Config: filepath.Join(cwd, "plugins/x.so"), Plugin: filepath.Join(cwd, "plugins/x.so")}},
		{"xla:x.so", BackendSpec{Kind: "xla", Config: filepath.Join(cwd, "x.so"), Plugin: filepath.Join(cwd, "x.so")}},
	}
	for _, c := range good {
		got, err := ParseBackendSpec(c.spec)
		require.NoError(t, err, c.spec)
		require.Equal(t, c.want, got, c.spec)
	}
	for _, spec := range []string{"xla", "xla:", "xla:,notf32", "cuda", "gpu:0", "XLA:/p.so", ":ops_sequential", "stablehlo:cpu", "torch"} {
		_, err := ParseBackendSpec(spec)
		require.Error(t, err, spec)
		require.ErrorContains(t, err, "GOMLX_BACKEND=")
		require.ErrorContains(t, err, `"go:<options>"`, "the error lists the accepted forms")
		require.ErrorContains(t, err, "xla:<path to a PJRT plugin .so or plugin name>")
	}
}

// The default backend's unlimited pool is set without compute's "Go backend:
// parallelism set to -1" on standard output (commands print data there), and an
// explicit parallelism is applied the same way.
func TestGoBackendParallelismIsQuiet(t *testing.T) {
	for spec, want := range map[string]int{"go": -1, "go:ops_parallel,parallelism=3": 3} {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		stdout := os.Stdout
		os.Stdout = w
		b, err := NewBackendFrom(spec)
		os.Stdout = stdout
		require.NoError(t, w.Close())
		printed, _ := io.ReadAll(r)
		require.NoError(t, err, spec)
		require.Empty(t, string(printed), spec)
		pool := reflect.ValueOf(b).Elem().FieldByName("Workers")
		require.Equal(t, want, int(pool.MethodByName("MaxParallelism").Call(nil)[0].Int()), spec)
		b.Finalize()
	}
	_, err := NewBackendFrom("go:parallelism=many")
	require.ErrorContains(t, err, `parallelism="many": needs an integer`)
}

func TestNewBackendErrors(t *testing.T) {
	t.Setenv(BackendEnv, "xla:/nonexistent/plugin.so")
	_, err := NewBackend()
	require.Error(t, err)
	require.ErrorContains(t, err, "/nonexistent/plugin.so")
	require.ErrorContains(t, err, "GOMLX_BACKEND")
	require.ErrorContains(t, err, "no such file")

	t.Setenv(BackendEnv, "metal")
	_, err = NewBackend()
	require.ErrorContains(t, err, `unknown backend "metal"`)

	_, err = NewBackendFrom("go:no_such_option")
	require.ErrorContains(t, err, `GOMLX_BACKEND="go:no_such_option"`)

	b, err := NewBackendFrom("go")
	require.NoError(t, err)
	defer b.Finalize()
	require.Equal(t, "cpu", DeviceName(b))
}

// A file that is not a PJRT plugin goes through dlopen (or the missing GetPjrtApi
// symbol) and must come back as an error naming the path, never a panic.
func TestNewBackendXLANotAPlugin(t *testing.T) {
	if !xlaLinked {
		_, err := NewBackendFrom("xla:/nonexistent/plugin.so")
		require.ErrorContains(t, err, "/nonexistent/plugin.so")
		t.Skip("built without cgo: no XLA support")
	}
	garbage := filepath.Join(t.TempDir(), "pjrt_c_api_garbage_plugin.so")
	require.NoError(t, os.WriteFile(garbage, []byte("not an ELF file"), 0o644))
	_, err := NewBackendFrom("xla:" + garbage)
	require.ErrorContains(t, err, garbage)
	require.ErrorContains(t, err, "GOMLX_BACKEND")

	// A real shared library without the PJRT entry point.
	for _, lib := range []string{"/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6", "/lib64/libm.so.6"} {
		if _, err := os.Stat(lib); err == nil {
			_, err := NewBackendFrom("xla:" + lib)
			require.ErrorContains(t, err, lib)
			require.ErrorContains(t, err, "GetPjrtApi")
			break
		}
	}

	// A plugin name that is not installed: no download (auto-install is off), an error.
	t.Setenv("PJRT_PLUGIN_LIBRARY_PATH", t.TempDir())
	_, err = NewBackendFrom("xla:no_such_plugin_name")
	require.ErrorContains(t, err, "no_such_plugin_name")
}

type fakeBackend struct {
	compute.Backend
	cuda bool
	desc string
}

func (f fakeBackend) IsCUDA() bool                                 { return f.cuda }
func (f fakeBackend) Name() string                                 { return "xla" }
func (f fakeBackend) NumDevices() int                              { return 1 }
func (f fakeBackend) DeviceDescription(_ compute.DeviceNum) string { return f.desc }

func TestDeviceName(t *testing.T) {
	require.Equal(t, "cuda", DeviceName(fakeBackend{cuda: true, desc: "?"}))
	require.Equal(t, "cuda", DeviceName(fakeBackend{desc: "CudaDevice(id=0) [processId=0]"}))
	require.Equal(t, "cpu", DeviceName(fakeBackend{desc: "TFRT_CPU_0 [processId=0]"}))
}
