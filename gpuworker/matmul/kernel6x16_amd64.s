#include "textflag.h"

// Two rows of the 6×16 tile: broadcast a[r] and a[r+1], multiply-add with the two
// 8-lane vectors of b (Y12, Y13) into the rows' four accumulators.
#define ROWS(off0, off1, acc00, acc01, acc10, acc11) \
	VBROADCASTSS off0(SI), Y14; \
	VBROADCASTSS off1(SI), Y15; \
	VFMADD231PS Y12, Y14, acc00; \
	VFMADD231PS Y13, Y14, acc01; \
	VFMADD231PS Y12, Y15, acc10; \
	VFMADD231PS Y13, Y15, acc11

#define STEP \
	VMOVUPS (DI), Y12; \
	VMOVUPS 32(DI), Y13; \
	ROWS(0, 4, Y0, Y1, Y2, Y3); \
	ROWS(8, 12, Y4, Y5, Y6, Y7); \
	ROWS(16, 20, Y8, Y9, Y10, Y11); \
	ADDQ $64, DI; \
	ADDQ $24, SI

#define STORE_ROW(y0, y1) \
	VMOVUPS y0, (DX); \
	VMOVUPS y1, 32(DX); \
	ADDQ R8, DX

#define ADD_ROW(y0, y1) \
	VADDPS (DX), y0, y0; \
	VADDPS 32(DX), y1, y1; \
	STORE_ROW(y0, y1)

// func kernel6x16(a, b, c *float32, k, ldc, add int)
//
// kernel8x32's contract for a 6×16 tile: a is a packed [k][6] panel, b a packed
// [k][16] panel. AVX2 and FMA3 only (all 16 YMM registers).
TEXT ·kernel6x16(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ c+16(FP), DX
	MOVQ k+24(FP), CX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	TESTQ CX, CX
	JZ    done

loop:
	STEP
	DECQ CX
	JNZ  loop

done:
	MOVQ  add+40(FP), AX
	TESTQ AX, AX
	JZ    write
	ADD_ROW(Y0, Y1)
	ADD_ROW(Y2, Y3)
	ADD_ROW(Y4, Y5)
	ADD_ROW(Y6, Y7)
	ADD_ROW(Y8, Y9)
	ADD_ROW(Y10, Y11)
	VZEROUPPER
	RET

write:
	STORE_ROW(Y0, Y1)
	STORE_ROW(Y2, Y3)
	STORE_ROW(Y4, Y5)
	STORE_ROW(Y6, Y7)
	STORE_ROW(Y8, Y9)
	STORE_ROW(Y10, Y11)
	VZEROUPPER
	RET
