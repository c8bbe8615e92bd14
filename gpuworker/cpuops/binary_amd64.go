package cpuops

import "golang.org/x/sys/cpu"

// hasAVX says whether the AVX loops (binary_amd64.s) run on this CPU.
var hasAVX = cpu.X86.HasAVX

//go:noescape
func loopVV(op BinaryOp, o, a, b *float32, n int) int

//go:noescape
func loopVS(op BinaryOp, o, a, b *float32, n int) int

//go:noescape
func loopSV(op BinaryOp, o, a, b *float32, n int) int
