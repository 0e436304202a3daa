//go:build linux

package bench

import (
	"testing"

	"github.com/ebitengine/purego"

	"github.com/seed54442f1a/rdmapool/internal/ffi"
	"github.com/seed54442f1a/rdmapool/internal/ffi/cgoref"
	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// BenchmarkCall compares the ways to call the same trivial C function
// (long f(long, long, long), from a library built from internal/ffi's test
// fixture): rdmapool's ffi.Call3 (through runtime.cgocall) and ffi.Direct3
// (the data path's), purego.SyscallN, and cgo (only in a CGO_ENABLED=1
// build: make bench-ffi).
func BenchmarkCall(b *testing.B) {
	testutil.CC(b)
	lib := testutil.BuildSharedLib(b, "libfixture.so", "../internal/ffi/testdata/fixture.c")
	h, err := purego.Dlopen(lib, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		b.Fatal(err)
	}
	add3, err := purego.Dlsym(h, "rdmapool_fixture_add3")
	if err != nil {
		b.Fatal(err)
	}
	var sink uintptr
	b.Run("impl=ffi", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			sink += ffi.Call3(add3, uintptr(i), 2, 3)
		}
	})
	b.Run("impl=ffi.Direct", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			sink += ffi.Direct3(add3, uintptr(i), 2, 3)
		}
	})
	b.Run("impl=purego.SyscallN", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			r, _, _ := purego.SyscallN(add3, uintptr(i), 2, 3)
			sink += r
		}
	})
	b.Run("impl=cgo", func(b *testing.B) {
		if !cgoref.Available {
			b.Skip("the cgo baseline needs CGO_ENABLED=1 (make bench-ffi)")
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			sink += cgoref.Call3(add3, uintptr(i), 2, 3)
		}
	})
	if sink == 0 {
		b.Log(sink) // keep the calls
	}
}
