package model

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Hand-written safetensors support: the format is an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}}, then raw little-endian
// data. Tensors are read one at a time straight into their destination so a large
// model is never held twice in memory.

// TensorInfo describes one stored tensor.
type TensorInfo struct {
	DType string `json:"dtype"`
	Shape []int  `json:"shape"`
	// Offsets relative to the start of the data section.
	DataOffsets [2]int64 `json:"data_offsets"`

	file      string
	dataStart int64
}

// Size is the number of elements.
func (ti TensorInfo) Size() int {
	return numElements(ti.Shape)
}

// Checkpoint indexes the tensors of a model directory: model.safetensors, or the
// shards listed in model.safetensors.index.json.
type Checkpoint struct {
	Tensors map[string]TensorInfo
}

// OpenCheckpoint indexes dir's safetensors file(s). Missing files are reported by name.
func OpenCheckpoint(dir string) (*Checkpoint, error) {
	ck := &Checkpoint{Tensors: map[string]TensorInfo{}}
	single := filepath.Join(dir, "model.safetensors")
	if _, err := os.Stat(single); err == nil {
		return ck, ck.addFile(single)
	}
	indexPath := filepath.Join(dir, "model.safetensors.index.json")
	data, err := os.ReadFile(indexPath)
	if err != nil {
		return nil, fmt.Errorf("no model.safetensors or model.safetensors.index.json in %s", dir)
	}
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(data, &index); err != nil {
		return nil, fmt.Errorf("%s: %w", indexPath, err)
	}
	for _, f := range slices.Compact(slices.Sorted(maps.Values(index.WeightMap))) {
		if err := ck.addFile(filepath.Join(dir, f)); err != nil {
			return nil, err
		}
	}
	return ck, nil
}

func (ck *Checkpoint) addFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var n uint64
	if err := binary.Read(f, binary.LittleEndian, &n); err != nil {
		return fmt.Errorf("%s: reading header length: %w", path, err)
	}
	if n > 100<<20 {
		return fmt.Errorf("%s: header length %d is implausible", path, n)
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return fmt.Errorf("%s: reading header: %w", path, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return fmt.Errorf("%s: header: %w", path, err)
	}
	for name, msg := range raw {
		if name == "__metadata__" {
			continue
		}
		var ti TensorInfo
		if err := json.Unmarshal(msg, &ti); err != nil {
			return fmt.Errorf("%s: tensor %s: %w", path, name, err)
		}
		ti.file, ti.dataStart = path, 8+int64(n)
		want := int64(ti.Size()) * int64(dtypeBytes(ti.DType))
		if dtypeBytes(ti.DType) == 0 {
			return fmt.Errorf("%s: tensor %s has unsupported dtype %s (want F32, BF16 or F16)", path, name, ti.DType)
		}
		if ti.DataOffsets[1]-ti.DataOffsets[0] != want {
			return fmt.Errorf("%s: tensor %s: %d bytes for shape %v %s", path, name,
				ti.DataOffsets[1]-ti.DataOffsets[0], ti.Shape, ti.DType)
		}
		ck.Tensors[name] = ti
	}
	return nil
}

func dtypeBytes(dt string) int {
	switch dt {
	case "F32":
		return 4
	case "BF16", "F16":
		return 2
	}
	return 0
}

// ReadF32 reads tensor name, converted to float32, into dst (len must equal its size).
func (ck *Checkpoint) ReadF32(name string, dst []float32) error {
	ti, ok := ck.Tensors[name]
	if !ok {
		return fmt.Errorf("checkpoint has no tensor %q", name)
	}
	if len(dst) != ti.Size() {
		return fmt.Errorf("tensor %s: has %d elements, destination %d", name, ti.Size(), len(dst))
	}
	f, err := os.Open(ti.file)
	if err != nil {
		return err
	}
	defer f.Close()
	r := bufio.NewReaderSize(io.NewSectionReader(f, ti.dataStart+ti.DataOffsets[0], ti.DataOffsets[1]-ti.DataOffsets[0]), 1<<20)
	width := dtypeBytes(ti.DType)
	buf := make([]byte, 64<<10)
	for i := 0; i < len(dst); {
		chunk := min(len(buf)/width, len(dst)-i)
		b := buf[:chunk*width]
		if _, err := io.ReadFull(r, b); err != nil {
			return fmt.Errorf("tensor %s: %w", name, err)
		}
		for j := range chunk {
			switch ti.DType {
			case "F32":
				dst[i+j] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*j:]))
			case "BF16":
				dst[i+j] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*j:])) << 16)
			case "F16":
				dst[i+j] = f16ToF32(binary.LittleEndian.Uint16(b[2*j:]))
			}
		}
		i += chunk
	}
	return nil
}

func f16ToF32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal
		return float32(math.Copysign(float64(mant)*math.Pow(2, -24), float64(int32(sign)|1)))
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
}

// WriteTensor is one F32 tensor to be written; Data streams its little-endian bytes.
type WriteTensor struct {
	Name  string
	Shape []int
	Data  func(w io.Writer) error
}

// WriteSafetensors writes F32 tensors sorted by name (deterministic bytes), with
// metadata {"format": "pt"}, which transformers requires to accept the file.
func WriteSafetensors(path string, tensors []WriteTensor) error {
	ts := slices.Clone(tensors)
	slices.SortFunc(ts, func(a, b WriteTensor) int { return strings.Compare(a.Name, b.Name) })
	// Build the header by hand to fix key order (json maps are sorted anyway, but
	// __metadata__ first matches the reference writer).
	hdr := []byte(`{"__metadata__":{"format":"pt"}`)
	var off int64
	sizes := make([]int64, len(ts))
	for i, t := range ts {
		n := 4 * int64(numElements(t.Shape))
		sizes[i] = n
		name, _ := json.Marshal(t.Name)
		shape, _ := json.Marshal(t.Shape)
		if t.Shape == nil {
			shape = []byte("[]")
		}
		hdr = fmt.Appendf(hdr, `,%s:{"dtype":"F32","shape":%s,"data_offsets":[%d,%d]}`, name, shape, off, off+n)
		off += n
	}
	hdr = append(hdr, '}')
	for len(hdr)%8 != 0 {
		hdr = append(hdr, ' ')
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = binary.Write(w, binary.LittleEndian, uint64(len(hdr)))
	if err == nil {
		_, err = w.Write(hdr)
	}
	for i, t := range ts {
		if err != nil {
			break
		}
		cw := &countingWriter{w: w}
		err = t.Data(cw)
		if err == nil && cw.n != sizes[i] {
			err = fmt.Errorf("tensor %s: wrote %d bytes, want %d", t.Name, cw.n, sizes[i])
		}
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return errors.Join(err, os.Remove(tmp))
	}
	return os.Rename(tmp, path)
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
