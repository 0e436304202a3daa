//go:build linux

#include "textflag.h"

// trampoline is entered from runtime.asmcgocall on the system stack, with the
// address of a frame (see ffi.go) in DI and the stack aligned as the C ABI wants
// at a call site plus the return address. It calls frame.fn with frame.args in
// the System V argument registers, stores RAX in frame.r1 and, when
// frame.errnoF is set, the int at *errnoF() in frame.errno.
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
