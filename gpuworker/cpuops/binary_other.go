//go:build !amd64

package cpuops

const hasAVX = false

func loopVV(BinaryOp, *float32, *float32, *float32, int) int { return 0 }
func loopVS(BinaryOp, *float32, *float32, *float32, int) int { return 0 }
func loopSV(BinaryOp, *float32, *float32, *float32, int) int { return 0 }
