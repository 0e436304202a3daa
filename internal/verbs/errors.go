package verbs

import (
	"fmt"
	"syscall"
)

// CallError is a failed call into librdmacm or libibverbs: the C function's
// name and the errno it gave. errors.Is(err, syscall.ENOMEM) and the like work
// through Unwrap.
type CallError struct {
	Func  string
	Errno syscall.Errno
}

func (e *CallError) Error() string {
	if e.Errno == 0 {
		return e.Func + " failed (errno not set)"
	}
	return fmt.Sprintf("%s: %v", e.Func, e.Errno)
}

func (e *CallError) Unwrap() error { return e.Errno }

// errnoIfMinus1 is for calls that return -1 (or NULL) and set errno.
func errnoIfMinus1(fn string, failed bool, errno syscall.Errno) error {
	if !failed {
		return nil
	}
	return &CallError{Func: fn, Errno: errno}
}

// errnoIfNonzero is for calls that return 0 or an errno value.
func errnoIfNonzero(fn string, r uintptr) error {
	if int32(r) == 0 {
		return nil
	}
	e := syscall.Errno(int32(r))
	if int32(r) < 0 {
		e = syscall.Errno(-int32(r))
	}
	return &CallError{Func: fn, Errno: e}
}
