//go:build linux

#include "textflag.h"

// trampoline is entered from runtime.asmcgocall on the system stack, or from
// callOn on a direct call's C stack, with the address of a frame (see ffi.go)
// in R0. It calls frame.fn with frame.args in R0-R5 (AAPCS64), stores R0 in
// frame.r1 and, when frame.errnoF is set, the int at *errnoF() in frame.errno.
GLOBL ·trampolineABI0(SB), NOPTR|RODATA, $8
DATA ·trampolineABI0(SB)/8, $trampoline<>(SB)

TEXT trampoline<>(SB), NOSPLIT|NOFRAME, $0
	SUB  $32, RSP
	STP  (R29, R30), 0(RSP)
	MOVD R19, 16(RSP)    // callee-saved: holds the frame across the call
	MOVD RSP, R29
	MOVD R0, R19
	MOVD 8(R19), R0
	MOVD 16(R19), R1
	MOVD 24(R19), R2
	MOVD 32(R19), R3
	MOVD 40(R19), R4
	MOVD 48(R19), R5
	MOVD 0(R19), R16
	CALL (R16)
	MOVD R0, 56(R19)
	MOVD 64(R19), R16
	CBZ  R16, done
	CALL (R16)           // int *__errno_location(void)
	MOVW (R0), R0
	MOVD R0, 72(R19)
done:
	MOVD 16(RSP), R19
	LDP  0(RSP), (R29, R30)
	ADD  $32, RSP
	RET

// func callOn(f *frame, stack uintptr)
//
// callOn switches to the C stack whose 16-byte aligned top is stack, calls
// the trampoline with f there, and switches back. Nothing of Go runs on the
// C stack: the caller is pinned to its P and C cannot be preempted.
TEXT ·callOn(SB), NOSPLIT, $0-16
	MOVD f+0(FP), R0
	MOVD stack+8(FP), R1
	MOVD RSP, R20        // callee-saved in C (AAPCS64)
	MOVD R1, RSP
	BL   trampoline<>(SB)
	MOVD R20, RSP
	RET
