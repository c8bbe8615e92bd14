//go:build !amd64

package matmul

// No kernels off amd64: Available is false and callers keep their own matmul.
var tiles []tile
