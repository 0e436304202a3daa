//go:build cgo

// Package cgoref is the cgo baseline for the call-cost benchmarks: it calls a C
// function pointer through cgo, the same shape of call as ffi.Call3. It is only
// built with CGO_ENABLED=1 and only used by benchmarks; rdmapool itself never
// uses cgo.
package cgoref

/*
typedef long (*fn3)(long, long, long);
static long call3(void *f, long a, long b, long c) { return ((fn3)f)(a, b, c); }
*/
import "C"

import "unsafe"

// Available reports whether this build has the cgo baseline.
const Available = true

// Call3 calls the C function at fn with three arguments through cgo.
func Call3(fn, a, b, c uintptr) uintptr {
	return uintptr(C.call3(*(*unsafe.Pointer)(unsafe.Pointer(&fn)), C.long(a), C.long(b), C.long(c)))
}
