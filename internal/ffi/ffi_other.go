//go:build !linux

package ffi

import (
	"runtime"
	"syscall"
)

// DirectStackSize is the stack C code would have in a direct call on Linux.
const DirectStackSize = 64 << 10

// unreachable is what every call does off Linux: the loader binds no
// library there, so no caller has a C function's address to pass.
func unreachable() uintptr {
	panic("ffi: C calls are only built for Linux; this is " + runtime.GOOS)
}

// SetErrnoLocation does nothing: there is no C call to read errno after.
func SetErrnoLocation(fn uintptr) {}

// Call0 panics off Linux.
func Call0(fn uintptr) uintptr { return unreachable() }

// Call1 panics off Linux.
func Call1(fn, a1 uintptr) uintptr { return unreachable() }

// Call2 panics off Linux.
func Call2(fn, a1, a2 uintptr) uintptr { return unreachable() }

// Call3 panics off Linux.
func Call3(fn, a1, a2, a3 uintptr) uintptr { return unreachable() }

// Call6 panics off Linux.
func Call6(fn, a1, a2, a3, a4, a5, a6 uintptr) uintptr { return unreachable() }

// CallE panics off Linux.
func CallE(fn, a1, a2, a3, a4, a5, a6 uintptr) (uintptr, syscall.Errno) { return unreachable(), 0 }

// Direct2 panics off Linux.
func Direct2(fn, a1, a2 uintptr) uintptr { return unreachable() }

// Direct3 panics off Linux.
func Direct3(fn, a1, a2, a3 uintptr) uintptr { return unreachable() }
