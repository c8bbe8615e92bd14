#include "textflag.h"

// Two rows of the 8×32 tile: broadcast a[r] and a[r+1], multiply-add with the
// two 16-lane vectors of b into the rows' four accumulators.
#define ROWS(off0, off1, b0, b1, acc00, acc01, acc10, acc11) \
	VBROADCASTSS off0(SI), b0; \
	VBROADCASTSS off1(SI), b1; \
	VFMADD231PS Z16, b0, acc00; \
	VFMADD231PS Z17, b0, acc01; \
	VFMADD231PS Z16, b1, acc10; \
	VFMADD231PS Z17, b1, acc11

#define STEP \
	VMOVUPS (DI), Z16; \
	VMOVUPS 64(DI), Z17; \
	ROWS(0, 4, Z18, Z19, Z0, Z1, Z2, Z3); \
	ROWS(8, 12, Z20, Z21, Z4, Z5, Z6, Z7); \
	ROWS(16, 20, Z22, Z23, Z8, Z9, Z10, Z11); \
	ROWS(24, 28, Z24, Z25, Z12, Z13, Z14, Z15); \
	ADDQ $128, DI; \
	ADDQ $32, SI

#define STORE_ROW(z0, z1) \
	VMOVUPS z0, (DX); \
	VMOVUPS z1, 64(DX); \
	ADDQ R8, DX

#define ADD_ROW(z0, z1) \
	VADDPS (DX), z0, z0; \
	VADDPS 64(DX), z1, z1; \
	STORE_ROW(z0, z1)

// func kernel8x32(a, b, c *float32, k, ldc, add int)
//
// c[r*ldc+j] (+)= Σ_p a[p*8+r]·b[p*32+j] for r < 8, j < 32: a is a packed [k][8]
// panel, b a packed [k][32] panel. With add != 0 the tile is added to c, else
// written. AVX-512F only.
TEXT ·kernel8x32(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ c+16(FP), DX
	MOVQ k+24(FP), CX
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
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
	ADD_ROW(Z0, Z1)
	ADD_ROW(Z2, Z3)
	ADD_ROW(Z4, Z5)
	ADD_ROW(Z6, Z7)
	ADD_ROW(Z8, Z9)
	ADD_ROW(Z10, Z11)
	ADD_ROW(Z12, Z13)
	ADD_ROW(Z14, Z15)
	VZEROUPPER
	RET

write:
	STORE_ROW(Z0, Z1)
	STORE_ROW(Z2, Z3)
	STORE_ROW(Z4, Z5)
	STORE_ROW(Z6, Z7)
	STORE_ROW(Z8, Z9)
	STORE_ROW(Z10, Z11)
	STORE_ROW(Z12, Z13)
	STORE_ROW(Z14, Z15)
	VZEROUPPER
	RET
