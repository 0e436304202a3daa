//go:build linux

#include "textflag.h"

// trampoline is entered from runtime.asmcgocall on the system stack, or from
// callOn on a direct call's C stack, with the address of a frame (see ffi.go)
// in DI and the stack aligned as the C ABI wants at a call site plus the
// return address. It calls frame.fn with frame.args in the System V argument
// registers, stores RAX in frame.r1 and, when frame.errnoF is set, the int at
// *errnoF() in frame.errno.
GLOBL ·trampolineABI0(SB), NOPTR|RODATA, $8
DATA ·trampolineABI0(SB)/8, $trampoline<>(SB)

TEXT trampoline<>(SB), NOSPLIT|NOFRAME, $0
	PUSHQ BP
	MOVQ  SP, BP
	PUSHQ BX             // callee-saved: holds the frame across the call
	PUSHQ R12            // keeps SP 16-byte aligned at the CALL below
	MOVQ  DI, BX
	MOVQ  8(BX), DI
	MOVQ  16(BX), SI
	MOVQ  24(BX), DX
	MOVQ  32(BX), CX
	MOVQ  40(BX), R8
	MOVQ  48(BX), R9
	XORL  AX, AX         // no vector registers used (variadic callees read AL)
	MOVQ  0(BX), R10
	CALL  R10
	MOVQ  AX, 56(BX)
	MOVQ  64(BX), R10
	TESTQ R10, R10
	JZ    done
	CALL  R10            // int *__errno_location(void)
	MOVLQSX (AX), AX
	MOVQ  AX, 72(BX)
done:
	POPQ R12
	POPQ BX
	POPQ BP
	RET

// func callOn(f *frame, stack uintptr)
//
// callOn switches to the C stack whose 16-byte aligned top is stack, calls
// the trampoline with f there, and switches back. Nothing of Go runs on the
// C stack: the caller is pinned to its P and C cannot be preempted.
TEXT ·callOn(SB), NOSPLIT, $0-16
	MOVQ f+0(FP), DI
	MOVQ stack+8(FP), AX
	MOVQ SP, R12         // callee-saved in C, and the trampoline restores it
	MOVQ AX, SP
	CALL trampoline<>(SB)
	MOVQ R12, SP
	RET
