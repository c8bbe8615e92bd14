package model

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	_ "unsafe" // go:linkname

	"github.com/gomlx/compute/dtypes"

	"github.com/criticml/critic/gpuworker/matmul"
)

// MatmulEnv names the environment variable that picks the pure-Go backend's float32
// matmul: "critic" (the default where the CPU has AVX-512F or AVX2 + FMA:
// gpuworker/matmul's assembly kernels, the fastest the CPU runs), one of them by name
// ("avx512-8x32", "avx2-6x16"), or "compute" (compute's own kernels), e.g. to
// compare them.
const MatmulEnv = "CRITIC_MATMUL"

// compute v0.1.2 picks a DotGeneral implementation per (layout, input dtype, output
// dtype) from a registry its matmul package fills at init ("allows pluggability of
// different implementations", internal/gobackend/dot). The registry is internal, so
// it is reached by linkname, with these mirrors of its key and entry types (same
// fields, same order). installMatmul checks what it finds before changing anything:
// a compute release that changes the registry leaves its own kernels in place and
// says why (TestCriticMatmulInstalled fails).
type dotImplKey struct {
	Layout                  int // dot.Layout: 0 NonTransposed, 1 Transposed
	InputDType, OutputDType dtypes.DType
}

type dotImplRegistration struct {
	name     string
	implFn   any // dot.DotGeneralExecFn[I, O]
	priority int
}

//go:linkname dotImplementations github.com/gomlx/compute/internal/gobackend/dot.registeredImplementations
var dotImplementations map[dotImplKey]*dotImplRegistration

const (
	criticMatmulPrefix = "critic:"
	layoutTransposed   = 1
)

var criticDotCalls atomic.Int64 // matmuls run by gpuworker/matmul, for the tests

// installMatmul makes gpuworker/matmul the float32 DotGeneral of every pure-Go
// backend in the process (the registry is global), once, unless MatmulEnv says
// "compute" or the CPU has neither AVX-512F nor AVX2 + FMA. Why: compute's kernel
// runs at about half OpenBLAS's rate, and the matmuls are most of scoring's time (BENCH_TRAIN.md,
// seventh pass). Shapes too small to fill a tile go to compute's kernel. Its error
// says why compute's own kernels stayed.
var installMatmul = sync.OnceValue(replaceFloat32Matmul)

// MatmulKernel names the float32 matmul the pure-Go backend runs in this process:
// "critic:avx512-8x32", "critic:avx2-6x16", or "compute (<why ours is not
// installed>)". The worker logs it.
func MatmulKernel() string {
	if err := installMatmul(); err != nil {
		return "compute (" + err.Error() + ")"
	}
	return criticMatmulPrefix + matmul.Kernel()
}

// checkMatmulEnv rejects a MatmulEnv value that names no kernel this CPU runs, so a
// typo fails the backend's construction instead of silently keeping compute's kernels.
func checkMatmulEnv() error {
	if v := os.Getenv(MatmulEnv); v != "" && v != "critic" && v != "compute" {
		if err := matmul.Check(v); err != nil {
			return badMatmulEnv(v, err)
		}
	}
	return nil
}

func badMatmulEnv(v string, err error) error {
	return fmt.Errorf("%s=%q: %w; want \"critic\", \"compute\" or a kernel's name", MatmulEnv, v, err)
}

func replaceFloat32Matmul() error {
	switch v := os.Getenv(MatmulEnv); v {
	case "compute":
		return errors.New(MatmulEnv + "=compute")
	case "", "critic":
	default:
		if err := matmul.Use(v); err != nil {
			return badMatmulEnv(v, err)
		}
	}
	if !matmul.Available() {
		return errors.New("this CPU has neither AVX-512F nor AVX2 with FMA")
	}
	var regs []*dotImplRegistration
	for _, layout := range []int{0, layoutTransposed} {
		reg := dotImplementations[dotImplKey{layout, dtypes.Float32, dtypes.Float32}]
		if reg == nil {
			return fmt.Errorf("compute's float32 matmul registry has no entry for layout %d", layout)
		}
		if err := checkDotSignature(reflect.TypeOf(reg.implFn)); err != nil {
			return fmt.Errorf("compute's float32 matmul (%s): %w", reg.name, err)
		}
		regs = append(regs, reg)
	}
	for _, reg := range regs {
		if strings.HasPrefix(reg.name, criticMatmulPrefix) {
			continue
		}
		orig := reflect.ValueOf(reg.implFn)
		reg.implFn = reflect.MakeFunc(orig.Type(), func(args []reflect.Value) []reflect.Value {
			return criticDot(orig, args)
		}).Interface()
		reg.name = criticMatmulPrefix + matmul.Kernel()
	}
	return nil
}

// checkDotSignature checks t is func(*Backend, Layout, lhs, rhs []float32, batch, lhsCross,
// rhsCross, contracting int, out []float32), the signature criticDot reads.
func checkDotSignature(t reflect.Type) error {
	f32s := reflect.TypeFor[[]float32]()
	if t == nil || t.Kind() != reflect.Func || t.NumIn() != 9 || t.NumOut() != 0 {
		return fmt.Errorf("unexpected implementation type %v", t)
	}
	want := []reflect.Kind{reflect.Pointer, reflect.Int, reflect.Slice, reflect.Slice, reflect.Int, reflect.Int, reflect.Int, reflect.Int, reflect.Slice}
	for i, k := range want {
		if t.In(i).Kind() != k || (k == reflect.Slice && t.In(i) != f32s) {
			return fmt.Errorf("unexpected implementation type %v (argument %d)", t, i)
		}
	}
	return nil
}

// criticDot is the installed implementation: args are compute's (backend, layout,
// lhs [b,m,k], rhs [b,k,n] or [b,n,k] when transposed, b, m, n, k, out [b,m,n]).
func criticDot(orig reflect.Value, args []reflect.Value) []reflect.Value {
	batch, m, n, k := int(args[4].Int()), int(args[5].Int()), int(args[6].Int()), int(args[7].Int())
	if m < 8 || n < 16 || m*n*k < 1<<16 {
		return orig.Call(args)
	}
	criticDotCalls.Add(1)
	workers, fanOut := backendFanOut(args[0])
	matmul.Float32(args[2].Interface().([]float32), args[3].Interface().([]float32), args[8].Interface().([]float32),
		batch, m, n, k, args[1].Int() == layoutTransposed, workers, fanOut)
	return nil
}

// backendFanOut runs a matmul's tasks on the backend's worker pool, as compute's own
// kernels do (Workers.Saturate, at most AdjustedMaxParallelism at once), so op-parallel
// execution does not start more matmul goroutines than the pool allows. The field and
// the methods are looked up once (poolMethodsOf), not on every matmul.
func backendFanOut(backend reflect.Value) (int, func(func())) {
	m := poolMethodsOf(backend.Type())
	pool := backend.Elem().Field(m.field)
	workers := int(m.maxParallelism.Call([]reflect.Value{pool})[0].Int())
	return workers, func(task func()) { m.saturate.Call([]reflect.Value{pool, reflect.ValueOf(task)}) }
}

// poolMethods locate a backend's Workers field and its pool type's
// AdjustedMaxParallelism and Saturate (method functions: the receiver first).
type poolMethods struct {
	field                    int
	maxParallelism, saturate reflect.Value
}

var (
	poolMethodsOnce  sync.Once
	poolMethodsFound poolMethods
)

func poolMethodsOf(backendType reflect.Type) poolMethods {
	poolMethodsOnce.Do(func() {
		f, _ := backendType.Elem().FieldByName("Workers")
		maxPar, _ := f.Type.MethodByName("AdjustedMaxParallelism")
		saturate, _ := f.Type.MethodByName("Saturate")
		poolMethodsFound = poolMethods{f.Index[0], maxPar.Func, saturate.Func}
	})
	return poolMethodsFound
}
