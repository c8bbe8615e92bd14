package model

import (
	"encoding/binary"
	"errors"
	"io"
	"maps"
	"math"
)

// F32Bytes streams a float32 slice as little-endian bytes.
func F32Bytes(data []float32) func(io.Writer) error {
	return func(w io.Writer) error {
		buf := make([]byte, 0, 64<<10)
		for i, v := range data {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
			if len(buf) == cap(buf) || i == len(data)-1 {
				if _, err := w.Write(buf); err != nil {
					return err
				}
				buf = buf[:0]
			}
		}
		return nil
	}
}

// Shapes returns the (rows, tokens) batch shapes this scorer has run, each compiled
// once, with how many forward passes used it: what bounds compile time and tells
// whether bucketing holds.
func (s *Scorer) Shapes() map[[2]int]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.shapes)
}

// Calibrated maps a raw reward to GEPA's calibrated score using reward_stats.json.
func (rm *RewardModel) Calibrated(r float64) (float64, error) {
	if rm.Stats == nil {
		return 0, errors.New("reward model has no reward_stats.json")
	}
	return rm.Stats.Calibrated(r), nil
}
