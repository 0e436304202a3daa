package verbs

import (
	"syscall"

	"github.com/seed54442f1a/rdmapool/internal/ffi"
	"github.com/seed54442f1a/rdmapool/internal/unsafeptr"
)

// Calloc returns n zeroed bytes of C memory from libc, for structs the control
// path passes to the libraries. Free it with Free.
func (t *Table) Calloc(n uintptr) (uintptr, error) {
	p, errno := ffi.CallE(t.C.Calloc, 1, n, 0, 0, 0, 0)
	if p == 0 {
		if errno == 0 {
			errno = syscall.ENOMEM
		}
		return 0, &CallError{Func: "calloc", Errno: errno}
	}
	return p, nil
}

// Free releases C memory from Calloc; Free(0) does nothing.
func (t *Table) Free(p uintptr) {
	if p != 0 {
		ffi.Call1(t.C.Free, p)
	}
}

// New returns a zeroed T in C memory, and a pointer to it for the C calls.
// Free it with Release.
func New[T any](t *Table) (*T, Ptr[T], error) {
	p, err := Alloc[T](t, 1)
	if err != nil {
		return nil, p, err
	}
	return p.Get(), p, nil
}

// CString copies s into C memory with a terminating NUL.
func (t *Table) CString(s string) (uintptr, error) {
	p, err := t.Calloc(uintptr(len(s) + 1))
	if err != nil {
		return 0, err
	}
	copy(unsafeptr.Bytes(p, len(s)), s)
	return p, nil
}

// withOut calls f with the address of a zeroed C pointer-sized slot (an out
// parameter such as struct rdma_cm_id **) and returns what f left in it.
func (t *Table) withOut(f func(slot uintptr) error) (uintptr, error) {
	slot, err := Alloc[uintptr](t, 1)
	if err != nil {
		return 0, err
	}
	defer Release(t, slot)
	if err := f(slot.addr); err != nil {
		return 0, err
	}
	return *slot.Get(), nil
}
