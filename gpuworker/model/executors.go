package model

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/gomlx/compute"
	"github.com/gomlx/compute/dtypes"
	"github.com/gomlx/compute/gobackend"
	"github.com/gomlx/compute/shapes"

	"github.com/criticml/critic/gpuworker/cpuops"
)

// compute v0.1.2's pure-Go backend runs each graph node through a per-op executor
// table (internal/gobackend.nodeExecutors, "populated during initialization ... with a
// priority ... to overwrite a configuration"). Its element-wise executors are generic
// loops: a broadcast operand is read through an index iterator per element, Transpose
// and Slice compute every element's index, with no contiguous runs — after our matmul
// they were most of a small model's train step (BENCH_TRAIN.md, eighth pass). The
// table, like the matmul registry, is internal, so it is reached by linkname, and the
// types its entries take are mirrored here field for field. installExecutors checks
// the mirrors against the real types (names, offsets, kinds, sizes) through a live
// backend, and only for the compute release they were written for, before changing
// anything; otherwise compute's executors stay and ExecutorsStatus says why
// (TestCriticExecutorsInstalled fails).

// computeModule is the module whose internal types are mirrored, at the version they
// were read from.
const (
	computeModule  = "github.com/gomlx/compute"
	computeVersion = "v0.1.2"
)

// gbNode mirrors internal/gobackend.Node.
type gbNode struct {
	Index              int
	Inputs             []*gbNode
	CapturedInputs     [][]*gbNode
	OpType             compute.OpType
	Shape              shapes.Shape
	Builder            unsafe.Pointer
	Function           unsafe.Pointer
	MultiOutputsShapes []shapes.Shape
	MultiOutputsNodes  []*gbNode
	IsNodeSelectOutput bool
	SelectOutputIdx    int
	Data               any
}

// gbBuffer mirrors internal/gobackend.Buffer.
type gbBuffer struct {
	RawBackend *gbBackend
	RawShape   shapes.Shape
	InUse      bool
	isUserFed  bool
	RawBytes   []byte
	Flat       any
}

// gbBackend stands for internal/gobackend.Backend, only ever behind a pointer.
type gbBackend struct{}

// nodeExecutor mirrors internal/gobackend.NodeExecutor: the same argument and result
// types up to the pointed-to types, so the same calling convention.
type nodeExecutor func(backend *gbBackend, node *gbNode, inputs []*gbBuffer, inputsOwned []bool) (*gbBuffer, error)

//go:linkname nodeExecutors github.com/gomlx/compute/internal/gobackend.nodeExecutors
var nodeExecutors [compute.OpTypeLast]nodeExecutor

// backendGetBuffer is (*gobackend.Backend).GetBuffer: a buffer of the shape from the
// backend's pool (not zeroed).
//
//go:linkname backendGetBuffer github.com/gomlx/compute/internal/gobackend.(*Backend).GetBuffer
func backendGetBuffer(b *gbBackend, shape shapes.Shape) (*gbBuffer, error)

var (
	criticOpCalls  atomic.Int64 // nodes run by our executors, for the tests
	criticOpsOn    atomic.Bool  // our executors are installed
	executorsNames []string     // the ops ours run, for ExecutorsStatus
)

// installExecutors replaces compute's executors of the ops in criticExecutors, once per
// process (the table is global), after checking the mirrors against the types of a
// backend made for the check. Its error says why compute's executors stayed.
var installExecutors = sync.OnceValue(replaceExecutors)

// ExecutorsStatus says whether the pure-Go backend runs the ops in criticExecutors
// with Critic's executors ("critic (8 ops)") or why compute's own run, installing them
// if no backend has yet. The worker logs it beside the matmul kernel.
func ExecutorsStatus() string {
	if err := installExecutors(); err != nil {
		return "compute (" + err.Error() + ")"
	}
	return fmt.Sprintf("critic (%d ops)", len(executorsNames))
}

// OpsEnv names the environment variable that picks the pure-Go backend's executors
// of the ops in criticExecutors: "critic" (the default) or "compute" (compute's own,
// e.g. to compare them).
const OpsEnv = "CRITIC_OPS"

func checkOpsEnv() error {
	switch v := os.Getenv(OpsEnv); v {
	case "", "critic", "compute":
		return nil
	default:
		return fmt.Errorf("%s=%q: want \"critic\" or \"compute\"", OpsEnv, v)
	}
}

func replaceExecutors() error {
	if err := checkOpsEnv(); err != nil {
		return err
	}
	if os.Getenv(OpsEnv) == "compute" {
		return errors.New(OpsEnv + "=compute")
	}
	if err := checkComputeVersion(); err != nil {
		return err
	}
	backend, err := goBackend("")
	if err != nil {
		return fmt.Errorf("a backend to check the mirrors against: %w", err)
	}
	defer backend.Finalize()
	if err := checkMirrors(backend); err != nil {
		return err
	}
	table := criticExecutors()
	for op := range table { // all or none
		if nodeExecutors[op] == nil {
			return fmt.Errorf("compute has no executor for %s", op)
		}
	}
	for op, wrap := range table {
		nodeExecutors[op] = wrap(nodeExecutors[op])
		executorsNames = append(executorsNames, op.String())
	}
	criticOpsOn.Store(true)
	return nil
}

// fastLogistic says whether backend runs Logistic without math.Exp's VEX/SSE
// transitions (see silu): any backend but compute's pure-Go one, and that one once
// our executors are installed.
func fastLogistic(backend compute.Backend) bool {
	return backend.String() != gobackend.BackendName || criticOpsOn.Load()
}

// checkComputeVersion refuses any compute release but the one the mirrors were read
// from: a changed struct or signature would not fail to compile, it would corrupt
// memory. (The struct layouts are checked on their own in checkMirrors; a signature
// cannot be.)
func checkComputeVersion() error {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return errors.New("no build information to check compute's version")
	}
	for _, dep := range info.Deps {
		if dep.Path == computeModule {
			if dep.Replace != nil {
				return fmt.Errorf("%s is replaced (%s)", computeModule, dep.Replace.Path)
			}
			if dep.Version != computeVersion {
				return fmt.Errorf("%s %s, executors mirrored from %s", computeModule, dep.Version, computeVersion)
			}
			return nil
		}
	}
	if len(info.Deps) == 0 {
		return nil // a test binary lists no dependencies; TestComputeVersionPinned reads go.mod
	}
	return fmt.Errorf("%s not in the build information", computeModule)
}

// checkMirrors compares gbNode and gbBuffer with the types a live backend uses,
// found through method signatures (Backend.GetBuffer returns *Buffer,
// Function.GetOrCreateNode returns *Node).
func checkMirrors(backend compute.Backend) error {
	bt := reflect.TypeOf(backend)
	getBuffer, ok := bt.MethodByName("GetBuffer")
	if !ok || getBuffer.Type.NumIn() != 2 || getBuffer.Type.In(1) != reflect.TypeFor[shapes.Shape]() ||
		getBuffer.Type.NumOut() != 2 || getBuffer.Type.Out(1) != reflect.TypeFor[error]() {
		return fmt.Errorf("%v has no GetBuffer(shapes.Shape) (*Buffer, error)", bt)
	}
	bufferType := getBuffer.Type.Out(0)
	fn := reflect.TypeOf(backend.Builder("critic-executors-check").Main())
	create, ok := fn.MethodByName("GetOrCreateNode")
	if !ok || create.Type.NumOut() < 1 {
		return fmt.Errorf("%v has no GetOrCreateNode", fn)
	}
	nodeType := create.Type.Out(0)
	if bufferType.Kind() != reflect.Pointer || nodeType.Kind() != reflect.Pointer {
		return fmt.Errorf("unexpected buffer/node types %v, %v", bufferType, nodeType)
	}
	if err := sameLayout(bufferType.Elem(), reflect.TypeFor[gbBuffer]()); err != nil {
		return err
	}
	if bufferType.Elem().Field(0).Type != bt {
		return fmt.Errorf("%v.RawBackend is %v, not %v", bufferType.Elem(), bufferType.Elem().Field(0).Type, bt)
	}
	return sameLayout(nodeType.Elem(), reflect.TypeFor[gbNode]())
}

// sameLayout checks mirror has real's fields: names, offsets, sizes and kinds, and
// the very type wherever the mirror's field type does not stand for one of compute's
// internal types (standsForInternal).
func sameLayout(real, mirror reflect.Type) error {
	if real.Kind() != reflect.Struct || real.NumField() != mirror.NumField() || real.Size() != mirror.Size() {
		return fmt.Errorf("%v changed: %d fields, %d bytes (mirror %d, %d)", real, real.NumField(), real.Size(),
			mirror.NumField(), mirror.Size())
	}
	for i := range real.NumField() {
		r, m := real.Field(i), mirror.Field(i)
		kind := r.Type.Kind() == m.Type.Kind() || (r.Type.Kind() == reflect.Pointer && m.Type.Kind() == reflect.UnsafePointer)
		same := r.Name == m.Name && r.Offset == m.Offset && r.Type.Size() == m.Type.Size() && kind
		if same && !standsForInternal(m.Type) {
			same = r.Type == m.Type
		}
		if !same {
			return fmt.Errorf("%v.%s (%v at %d) does not match the mirror (%s %v at %d)", real, r.Name, r.Type, r.Offset,
				m.Name, m.Type, m.Offset)
		}
	}
	return nil
}

// standsForInternal says whether a mirror's field type is, or points or slices down
// to, a stand-in for an internal type (a gb* mirror, unsafe.Pointer), which can only
// be compared by shape.
func standsForInternal(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t.Kind() == reflect.UnsafePointer || t.PkgPath() == reflect.TypeFor[gbNode]().PkgPath()
}

// criticExecutors are the ops ours run, each given compute's executor for the cases it
// leaves to it (other dtypes, dynamic or empty shapes, unexpected node data).
func criticExecutors() map[compute.OpType]func(orig nodeExecutor) nodeExecutor {
	binary := func(op cpuops.BinaryOp) func(nodeExecutor) nodeExecutor {
		return func(orig nodeExecutor) nodeExecutor { return binaryExecutor(op, orig) }
	}
	return map[compute.OpType]func(nodeExecutor) nodeExecutor{
		compute.OpTypeAdd:       binary(cpuops.Add),
		compute.OpTypeSub:       binary(cpuops.Sub),
		compute.OpTypeMul:       binary(cpuops.Mul),
		compute.OpTypeDiv:       binary(cpuops.Div),
		compute.OpTypeTranspose: transposeExecutor,
		compute.OpTypeSlice:     sliceExecutor,
		compute.OpTypeReduceSum: reduceSumExecutor,
		compute.OpTypeLogistic:  logisticExecutor,
	}
}

// ours is a nodeExecutor that runs plan's kernel where plan accepts the node, and
// orig, compute's executor, for the rest: other dtypes, dynamic or empty shapes
// (float32Static), and whatever plan declines. plan reads the inputs it needs and
// returns the kernel, which writes the output, and the inputs the output may take over.
func ours(orig nodeExecutor, plan func(node *gbNode, inputs []*gbBuffer) (kernel func(out []float32), reusable []int, ok bool)) nodeExecutor {
	return func(backend *gbBackend, node *gbNode, inputs []*gbBuffer, inputsOwned []bool) (*gbBuffer, error) {
		if !float32Static(node, inputs) {
			return orig(backend, node, inputs, inputsOwned)
		}
		kernel, reusable, ok := plan(node, inputs)
		if !ok {
			return orig(backend, node, inputs, inputsOwned)
		}
		out, err := outputBuffer(backend, node, inputs, inputsOwned, reusable)
		if err != nil {
			return nil, err
		}
		criticOpCalls.Add(1)
		kernel(out.Flat.([]float32))
		return out, nil
	}
}

// float32Static says whether a node and its inputs are float32 with static, non-empty
// shapes: the only case our executors run.
func float32Static(node *gbNode, inputs []*gbBuffer) bool {
	if node.Shape.DType != dtypes.Float32 || node.Shape.IsDynamic() || node.Shape.Size() == 0 {
		return false
	}
	for _, in := range inputs {
		if in == nil || in.RawShape.DType != dtypes.Float32 || in.RawShape.Size() == 0 {
			return false
		}
	}
	return true
}

// outputBuffer is where an op writes: the first owned input in reusable with the
// output's shape (taken over: inputs[i] = nil tells the executor loop, as compute's own
// ops do), or a buffer from the backend's pool.
func outputBuffer(backend *gbBackend, node *gbNode, inputs []*gbBuffer, inputsOwned []bool, reusable []int) (*gbBuffer, error) {
	for _, i := range reusable {
		if inputsOwned[i] && inputs[i].RawShape.Equal(node.Shape) {
			out := inputs[i]
			inputs[i] = nil
			return out, nil
		}
	}
	return backendGetBuffer(backend, node.Shape)
}

func binaryExecutor(op cpuops.BinaryOp, orig nodeExecutor) nodeExecutor {
	return ours(orig, func(node *gbNode, inputs []*gbBuffer) (func([]float32), []int, bool) {
		outDims := node.Shape.Dimensions
		lhsDims, ok1 := broadcastDims(inputs[0].RawShape, len(outDims))
		rhsDims, ok2 := broadcastDims(inputs[1].RawShape, len(outDims))
		lhs, rhs := inputs[0].Flat.([]float32), inputs[1].Flat.([]float32)
		return func(out []float32) { cpuops.Binary(op, lhs, lhsDims, rhs, rhsDims, out, outDims) }, []int{1, 0}, ok1 && ok2
	})
}

// broadcastDims is an operand's dimensions at the output's rank: its own, or all 1s
// for a one-element operand of another rank (a scalar).
func broadcastDims(s shapes.Shape, rank int) ([]int, bool) {
	if s.Rank() == rank {
		return s.Dimensions, true
	}
	if s.Size() != 1 {
		return nil, false
	}
	return slices.Repeat([]int{1}, rank), true
}

func transposeExecutor(orig nodeExecutor) nodeExecutor {
	return ours(orig, func(node *gbNode, inputs []*gbBuffer) (func([]float32), []int, bool) {
		perm, ok := node.Data.([]int)
		in, dims := inputs[0].Flat.([]float32), inputs[0].RawShape.Dimensions
		// Never in place (no reusable input): a transpose is not done by swaps.
		return func(out []float32) { cpuops.Transpose(in, dims, perm, out) }, nil, ok && len(perm) == len(dims)
	})
}

// gbSliceNode mirrors ops.sliceNode, a Slice node's data; sliceParams checks the
// layout the first time it meets the type.
type gbSliceNode struct {
	starts, limits, strides []int
}

var sliceNodeType atomic.Pointer[reflect.Type] // the data type found to match gbSliceNode

func sliceParams(data any) (*gbSliceNode, bool) {
	t := reflect.TypeOf(data)
	if known := sliceNodeType.Load(); known == nil || *known != t {
		if t == nil || t.Kind() != reflect.Pointer || sameLayout(t.Elem(), reflect.TypeFor[gbSliceNode]()) != nil {
			return nil, false
		}
		sliceNodeType.Store(&t)
	}
	return (*gbSliceNode)(reflect.ValueOf(data).UnsafePointer()), true
}

func sliceExecutor(orig nodeExecutor) nodeExecutor {
	return ours(orig, func(node *gbNode, inputs []*gbBuffer) (func([]float32), []int, bool) {
		p, ok := sliceParams(node.Data)
		in, dims := inputs[0].Flat.([]float32), inputs[0].RawShape.Dimensions
		ok = ok && len(p.starts) == len(dims) && len(p.strides) == len(dims) && node.Shape.Rank() == len(dims)
		return func(out []float32) { cpuops.Slice(in, dims, p.starts, p.strides, node.Shape.Dimensions, out) }, nil, ok
	})
}

func reduceSumExecutor(orig nodeExecutor) nodeExecutor {
	return ours(orig, func(node *gbNode, inputs []*gbBuffer) (func([]float32), []int, bool) {
		axes, ok := node.Data.([]int)
		in, dims := inputs[0].Flat.([]float32), inputs[0].RawShape.Dimensions
		return func(out []float32) { cpuops.ReduceSum(in, dims, axes, out) }, nil, ok && len(axes) > 0
	})
}

func logisticExecutor(orig nodeExecutor) nodeExecutor {
	return ours(orig, func(_ *gbNode, inputs []*gbBuffer) (func([]float32), []int, bool) {
		in := inputs[0].Flat.([]float32)
		return func(out []float32) { cpuops.Logistic(in, out) }, []int{0}, true
	})
}
