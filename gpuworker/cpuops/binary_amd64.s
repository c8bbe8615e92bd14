#include "textflag.h"

// The innermost loops of Binary with AVX: 16 lanes per iteration in two YMM
// registers. Each returns how many elements it did (n rounded down to 16); the Go
// caller does the rest. op is a BinaryOp (Add 0, Sub 1, Mul 2, Div 3). VZEROUPPER
// before returning: the Go code after it may run legacy-SSE instructions.

// The arguments, CX = n rounded down to 16.
#define PROLOGUE \
	MOVQ op+0(FP), AX; \
	MOVQ o+8(FP), DI; \
	MOVQ a+16(FP), SI; \
	MOVQ b+24(FP), DX; \
	MOVQ n+32(FP), CX; \
	ANDQ $-16, CX

// A jump to the op's loop, or to done with nothing done for any other op.
#define DISPATCH(add, sub, mul, div, done) \
	CMPQ AX, $0; \
	JEQ add; \
	CMPQ AX, $1; \
	JEQ sub; \
	CMPQ AX, $2; \
	JEQ mul; \
	CMPQ AX, $3; \
	JEQ div; \
	MOVQ $0, ret+40(FP); \
	JMP done

#define STORE16 \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	ADDQ $64, DI; \
	DECQ CX

// o = a op b, both vectors.
#define VV(INS) \
	VMOVUPS (SI), Y0; \
	VMOVUPS 32(SI), Y1; \
	INS (DX), Y0, Y0; \
	INS 32(DX), Y1, Y1; \
	ADDQ $64, SI; \
	ADDQ $64, DX; \
	STORE16

// o = a op c, c broadcast in Y15.
#define VS(INS) \
	VMOVUPS (SI), Y0; \
	VMOVUPS 32(SI), Y1; \
	INS Y15, Y0, Y0; \
	INS Y15, Y1, Y1; \
	ADDQ $64, SI; \
	STORE16

// o = c op b, c broadcast in Y15.
#define SV(INS) \
	INS (DX), Y15, Y0; \
	INS 32(DX), Y15, Y1; \
	ADDQ $64, DX; \
	STORE16

// func loopVV(op BinaryOp, o, a, b *float32, n int) int: o[i] = a[i] op b[i]
TEXT ·loopVV(SB), NOSPLIT, $0-48
	PROLOGUE
	MOVQ CX, ret+40(FP)
	SHRQ $4, CX
	JZ vvdone
	DISPATCH(vvadd, vvsub, vvmul, vvdiv, vvdone)
vvadd:
	VV(VADDPS)
	JNZ vvadd
	JMP vvdone
vvsub:
	VV(VSUBPS)
	JNZ vvsub
	JMP vvdone
vvmul:
	VV(VMULPS)
	JNZ vvmul
	JMP vvdone
vvdiv:
	VV(VDIVPS)
	JNZ vvdiv
vvdone:
	VZEROUPPER
	RET

// func loopVS(op BinaryOp, o, a, b *float32, n int) int: o[i] = a[i] op b[0]
TEXT ·loopVS(SB), NOSPLIT, $0-48
	PROLOGUE
	MOVQ CX, ret+40(FP)
	SHRQ $4, CX
	JZ vsdone
	VBROADCASTSS (DX), Y15
	DISPATCH(vsadd, vssub, vsmul, vsdiv, vsdone)
vsadd:
	VS(VADDPS)
	JNZ vsadd
	JMP vsdone
vssub:
	VS(VSUBPS)
	JNZ vssub
	JMP vsdone
vsmul:
	VS(VMULPS)
	JNZ vsmul
	JMP vsdone
vsdiv:
	VS(VDIVPS)
	JNZ vsdiv
vsdone:
	VZEROUPPER
	RET

// func loopSV(op BinaryOp, o, a, b *float32, n int) int: o[i] = a[0] op b[i]
TEXT ·loopSV(SB), NOSPLIT, $0-48
	PROLOGUE
	MOVQ CX, ret+40(FP)
	SHRQ $4, CX
	JZ svdone
	VBROADCASTSS (SI), Y15
	DISPATCH(svadd, svsub, svmul, svdiv, svdone)
svadd:
	SV(VADDPS)
	JNZ svadd
	JMP svdone
svsub:
	SV(VSUBPS)
	JNZ svsub
	JMP svdone
svmul:
	SV(VMULPS)
	JNZ svmul
	JMP svdone
svdiv:
	SV(VDIVPS)
	JNZ svdiv
svdone:
	VZEROUPPER
	RET
