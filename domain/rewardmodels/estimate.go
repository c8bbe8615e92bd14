package rewardmodels

import "math"

// Training-time estimates for the create-model dialog. The model is
// deliberately simple: seconds = pairs × epochs × seconds-per-pair, where a
// pair is one chosen and one rejected sequence through forward, backward
// and AdamW, and seconds-per-pair grows linearly with the base's parameter
// count. The constants are the only place these numbers live.
const (
	// cpuSecondsPerPairPerBillion: one Qwen3-0.6B sequence of 1024 tokens
	// is ≈ 1.1 TFLOP forward, and make bench-score-engine's pure-Go
	// forward of that shape runs ≈ 1.3 s per sequence per 4 of its 28
	// layers on 2 cores (gpuworker/scripts/BENCH_TRAIN.md), ≈ 10 s a
	// sequence. A pair is two sequences and backward costs about twice the
	// forward: ≈ 2 × 3 × 10 = 60 s a 0.6B pair, ≈ 100 s per billion
	// parameters.
	cpuSecondsPerPairPerBillion = 100.0
	// gpuSecondsPerPairPerBillion: the same ≈ 6.6 TFLOP a 0.6B pair at
	// ~20 TFLOP/s sustained (an A10G-class GPU in TF32 through XLA) is
	// ≈ 0.3 s, ≈ 0.5 s per billion parameters. Not yet measured on a GPU
	// (gpuworker/scripts/GPU.md).
	gpuSecondsPerPairPerBillion = 0.5
	// cpuMinSecondsPerPair, gpuMinSecondsPerPair: the floor for tiny bases
	// (the demo base): make bench-train's tiny train step is 0.05–0.4 s
	// for 4 pairs.
	cpuMinSecondsPerPair = 0.1
	gpuMinSecondsPerPair = 0.01
	// DefaultBaseParams is Qwen/Qwen3-0.6B's parameter count, for a hub
	// base whose size no worker has read.
	DefaultBaseParams = 596_049_920
)

// Device kinds a worker reports (jobs.ClaimNextTraining.Device).
const (
	DeviceCPU = "cpu"
	DeviceGPU = "gpu"
)

// SecondsPerPair is the estimate of one training pair's cost on device
// for a base of params parameters (params ≤ 0: the default base's size).
func SecondsPerPair(device string, params int64) float64 {
	if params <= 0 {
		params = DefaultBaseParams
	}
	b := float64(params) / 1e9
	if device == DeviceGPU {
		return math.Max(gpuMinSecondsPerPair, b*gpuSecondsPerPairPerBillion)
	}
	return math.Max(cpuMinSecondsPerPair, b*cpuSecondsPerPairPerBillion)
}
