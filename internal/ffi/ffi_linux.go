package ffi

import (
	"sync/atomic"
	"syscall"
	"unsafe"

	// Sets up the runtime's cgo hooks (fakecgo) when CGO_ENABLED=0, and gives
	// the loader dlopen/dlsym.
	_ "github.com/ebitengine/purego"
)

// frame is what the trampoline reads and writes; its layout is fixed by the
// offsets in trampoline_*.s.
type frame struct {
	fn     uintptr    // 0
	args   [6]uintptr // 8..48
	r1     uintptr    // 56
	errnoF uintptr    // 64: address of __errno_location, or 0 to skip errno
	errno  uintptr    // 72
}

// trampolineABI0 is the ABI0 address of the assembly trampoline.
var trampolineABI0 uintptr

// errnoLocation is the address of libc's __errno_location, set by SetErrnoLocation.
var errnoLocation atomic.Uintptr

// SetErrnoLocation records the address of libc's __errno_location so that the
// *E calls can read errno on the thread that made the call. The loader sets it
// before it publishes any function address.
func SetErrnoLocation(fn uintptr) { errnoLocation.Store(fn) }

//go:linkname runtime_cgocall runtime.cgocall
//go:noescape
func runtime_cgocall(fn uintptr, arg unsafe.Pointer) int32

// call runs f with the frame f on the system stack. The frame lives on the
// caller's stack: runtime.cgocall does not let the stack move while C runs, and
// noescape above keeps the frame off the heap.
//
//go:nosplit
func call(f *frame) {
	runtime_cgocall(trampolineABI0, unsafe.Pointer(f))
}

// Call0 calls fn().
func Call0(fn uintptr) uintptr {
	f := frame{fn: fn}
	call(&f)
	return f.r1
}

// Call1 calls fn(a1).
func Call1(fn, a1 uintptr) uintptr {
	f := frame{fn: fn, args: [6]uintptr{a1}}
	call(&f)
	return f.r1
}

// Call2 calls fn(a1, a2).
func Call2(fn, a1, a2 uintptr) uintptr {
	f := frame{fn: fn, args: [6]uintptr{a1, a2}}
	call(&f)
	return f.r1
}

// Call3 calls fn(a1, a2, a3).
func Call3(fn, a1, a2, a3 uintptr) uintptr {
	f := frame{fn: fn, args: [6]uintptr{a1, a2, a3}}
	call(&f)
	return f.r1
}

// Call6 calls fn(a1, ..., a6); unused trailing arguments may be zero.
func Call6(fn, a1, a2, a3, a4, a5, a6 uintptr) uintptr {
	f := frame{fn: fn, args: [6]uintptr{a1, a2, a3, a4, a5, a6}}
	call(&f)
	return f.r1
}

// CallE calls fn(a1, ..., a6) and also returns errno as it was right after the
// call, read on the same OS thread. errno is only meaningful when the function's
// return value says it failed. Before SetErrnoLocation, errno is always 0.
func CallE(fn, a1, a2, a3, a4, a5, a6 uintptr) (uintptr, syscall.Errno) {
	f := frame{fn: fn, args: [6]uintptr{a1, a2, a3, a4, a5, a6}, errnoF: errnoLocation.Load()}
	call(&f)
	return f.r1, syscall.Errno(int32(f.errno))
}
