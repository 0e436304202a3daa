package loader

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnavailable is matched (errors.Is) by every error that says the RDMA
// libraries cannot be used in this process.
var ErrUnavailable = errors.New("RDMA libraries unavailable")

// Attempt is one file name given to dlopen and what dlerror said about it.
type Attempt struct {
	Name    string
	Dlerror string
}

// LibraryError says that no file of a library could be loaded.
type LibraryError struct {
	Library  string    // "libibverbs" or "librdmacm"
	Attempts []Attempt // in the order tried
}

func (e *LibraryError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rdmapool: cannot load %s: tried ", e.Library)
	for i, a := range e.Attempts {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s (%s)", a.Name, a.Dlerror)
	}
	fmt.Fprintf(&b, "; install rdma-core's %s (Debian: apt-get install %s) or point %s at its directory",
		e.Library, debianPackage(e.Library), EnvLibraryPath)
	return b.String()
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *LibraryError) Is(target error) bool { return target == ErrUnavailable }

// SymbolError says that a loaded library lacks a function rdmapool needs
// (usually a library too old, or not rdma-core's).
type SymbolError struct {
	Library string // "libibverbs", "librdmacm" or "libc"
	Path    string // the file that was loaded
	Symbol  string
	Dlerror string
}

func (e *SymbolError) Error() string {
	return fmt.Sprintf("rdmapool: %s (%s) has no symbol %s: %s", e.Library, e.Path, e.Symbol, e.Dlerror)
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *SymbolError) Is(target error) bool { return target == ErrUnavailable }

// UnsupportedOSError says that this system is not one where rdmapool binds
// the RDMA libraries: it does so only on Linux, where libibverbs and
// librdmacm are. Load returns it on every other system.
type UnsupportedOSError struct {
	GOOS string // runtime.GOOS
}

func (e *UnsupportedOSError) Error() string {
	return "rdmapool: RDMA needs Linux (libibverbs, librdmacm); this is " + e.GOOS
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnsupportedOSError) Is(target error) bool { return target == ErrUnavailable }

func debianPackage(lib string) string {
	switch lib {
	case "libibverbs":
		return "libibverbs1 ibverbs-providers"
	case "librdmacm":
		return "librdmacm1"
	}
	return lib
}
