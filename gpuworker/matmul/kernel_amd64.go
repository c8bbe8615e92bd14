package matmul

import "golang.org/x/sys/cpu"

// The amd64 micro-kernels, in kernel_amd64.s and kernel6x16_amd64.s. x/sys/cpu's
// feature bits include the OS saving the registers' state.
var (
	tileAVX512 = tile{name: "avx512-8x32", mr: 8, nr: 32, kernel: kernel8x32, ok: cpu.X86.HasAVX512F}
	tileAVX2   = tile{name: "avx2-6x16", mr: 6, nr: 16, kernel: kernel6x16, ok: cpu.X86.HasAVX2 && cpu.X86.HasFMA}
	tiles      = []tile{tileAVX512, tileAVX2} // fastest first
)

// kernel8x32: c[r*ldc+j] (+)= Σ_p a[p*8+r]·b[p*32+j], AVX-512F.
//
//go:noescape
func kernel8x32(a, b, c *float32, k, ldc, add int)

// kernel6x16: the same for a 6×16 tile, AVX2 + FMA.
//
//go:noescape
func kernel6x16(a, b, c *float32, k, ldc, add int)
