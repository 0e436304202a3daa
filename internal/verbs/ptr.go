package verbs

import (
	"unsafe"

	"github.com/seed54442f1a/rdmapool/internal/unsafeptr"
)

// Ptr is a C pointer to a T: the address of C memory (from libibverbs,
// librdmacm or libc's allocator, never the Go heap), typed so that a CQ
// cannot be passed where a QP is wanted. It is what the C handles of the
// libraries are (Ptr[PD], Ptr[CQ], Ptr[QP], Ptr[CMID], ...), and what the
// pointer members of the mirrors hold. It costs what a uintptr costs; the
// garbage collector neither scans nor moves what it points to. The zero
// Ptr is C's NULL.
//
// Arithmetic on a Ptr is in whole Ts (Index), sized by unsafe.Sizeof of the
// mirror, never by a literal.
type Ptr[T any] struct {
	_    [0]*T // no conversion between Ptrs of different types
	addr uintptr
}

// PtrAt returns the C address addr as a Ptr[T]. addr must be the address of
// a T in C memory, or 0.
func PtrAt[T any](addr uintptr) Ptr[T] { return Ptr[T]{addr: addr} }

// IsNil reports whether p is C's NULL.
func (p Ptr[T]) IsNil() bool { return p.addr == 0 }

// Addr returns p's address, for a C call's argument.
func (p Ptr[T]) Addr() uintptr { return p.addr }

// Get returns the T that p points to, for reading and writing its members.
// The *T is only valid while the C memory is.
func (p Ptr[T]) Get() *T { return unsafeptr.At[T](p.addr, 0) }

// Index returns a pointer to element i of the C array of Ts at p.
func (p Ptr[T]) Index(i int) Ptr[T] {
	return Ptr[T]{addr: p.addr + uintptr(i)*unsafe.Sizeof(*new(T))}
}

// Slice returns the first n Ts of the C array at p; nil if p is NULL or n is
// 0. The slice is only valid while the C memory is.
func (p Ptr[T]) Slice(n int) []T { return unsafeptr.Slice[T](p.addr, n) }

// Alloc returns n zeroed Ts in C memory (one when n is 1). Free it with
// Release.
func Alloc[T any](t *Table, n int) (Ptr[T], error) {
	p, err := t.Calloc(uintptr(n) * unsafe.Sizeof(*new(T)))
	return Ptr[T]{addr: p}, err
}

// Release frees C memory from Alloc or New; releasing NULL does nothing.
func Release[T any](t *Table, p Ptr[T]) { t.Free(p.addr) }
