package ffi_test

import (
	"runtime"
	"sync"
	"syscall"
	"testing"

	"github.com/ebitengine/purego"

	"github.com/seed54442f1a/rdmapool/internal/ffi"
	"github.com/seed54442f1a/rdmapool/internal/ffi/cgoref"
	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

type fixture struct {
	add3, sum6, noop, fail, stack uintptr
}

var (
	fixOnce sync.Once
	fix     fixture
	fixErr  error
)

// loadFixture builds testdata/fixture.c and binds its functions, once per test
// binary (a dlopened library cannot be unloaded safely while benchmarks run).
func loadFixture(tb testing.TB) fixture {
	tb.Helper()
	testutil.CC(tb)
	fixOnce.Do(func() {
		path := testutil.BuildSharedLib(tb, "libfixture.so", "testdata/fixture.c")
		h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
		if err != nil {
			fixErr = err
			return
		}
		sym := func(name string) uintptr {
			p, err := purego.Dlsym(h, name)
			if err != nil && fixErr == nil {
				fixErr = err
			}
			return p
		}
		fix = fixture{sym("rdmapool_fixture_add3"), sym("rdmapool_fixture_sum6"), sym("rdmapool_fixture_noop"), sym("rdmapool_fixture_fail"),
			sym("rdmapool_fixture_stack")}
		libc, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW)
		if err != nil {
			fixErr = err
			return
		}
		ffi.SetErrnoLocation(sym2(libc, "__errno_location", &fixErr))
	})
	if fixErr != nil {
		tb.Fatalf("loading the fixture library: %v", fixErr)
	}
	return fix
}

func sym2(h uintptr, name string, errp *error) uintptr {
	p, err := purego.Dlsym(h, name)
	if err != nil && *errp == nil {
		*errp = err
	}
	return p
}

func TestCalls(t *testing.T) {
	f := loadFixture(t)
	if got := ffi.Call0(f.noop); got != 42 {
		t.Errorf("Call0 = %d, want 42", got)
	}
	if got := ffi.Call3(f.add3, 1, 2, 3); got != 6 {
		t.Errorf("Call3 = %d, want 6", got)
	}
	neg := ^uintptr(0) // -1 as a C long
	if got := ffi.Call3(f.add3, neg, neg, 5); got != 3 {
		t.Errorf("Call3 with negative arguments = %d, want 3", int(got))
	}
	if got := ffi.Call6(f.sum6, 1, 1, 1, 1, 1, 1); got != 21 {
		t.Errorf("Call6 = %d, want 21", got)
	}
	if got := ffi.Call6(f.sum6, 6, 5, 4, 3, 2, 1); got != 56 {
		t.Errorf("Call6 = %d, want 56", got)
	}
}

func TestErrnoReadOnCallingThread(t *testing.T) {
	f := loadFixture(t)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				want := syscall.Errno(1 + (g*2000+i)%130)
				r, errno := ffi.CallE(f.fail, uintptr(want), 0, 0, 0, 0, 0)
				if int(r) != -1 || errno != want {
					t.Errorf("CallE = %d, %v; want -1, %v", int(r), errno, want)
					return
				}
				if i%97 == 0 {
					runtime.Gosched() // move between threads
				}
			}
		}()
	}
	wg.Wait()
}

func TestCallsDoNotAllocate(t *testing.T) {
	f := loadFixture(t)
	if n := testing.AllocsPerRun(1000, func() { ffi.Call3(f.add3, 1, 2, 3) }); n != 0 {
		t.Errorf("Call3 allocates %v times per call, want 0", n)
	}
	if n := testing.AllocsPerRun(1000, func() { ffi.CallE(f.fail, 5, 0, 0, 0, 0, 0) }); n != 0 {
		t.Errorf("CallE allocates %v times per call, want 0", n)
	}
}

// BenchmarkCall3 compares the ways to make the same call to the same
// trivial C function: ours (through runtime.cgocall, and direct),
// purego.SyscallN and cgo (only with CGO_ENABLED=1).
// Compare them within one run; benchstat or the ratio of ns/op.
func BenchmarkCall3(b *testing.B) {
	f := loadFixture(b)
	b.Run("impl=ffi", func(b *testing.B) {
		b.ReportAllocs()
		var s uintptr
		for i := 0; b.Loop(); i++ {
			s += ffi.Call3(f.add3, uintptr(i), 2, 3)
		}
		sink = s
	})
	b.Run("impl=ffi.Direct", func(b *testing.B) {
		b.ReportAllocs()
		var s uintptr
		for i := 0; b.Loop(); i++ {
			s += ffi.Direct3(f.add3, uintptr(i), 2, 3)
		}
		sink = s
	})
	b.Run("impl=purego.SyscallN", func(b *testing.B) {
		b.ReportAllocs()
		var s uintptr
		for i := 0; b.Loop(); i++ {
			r, _, _ := purego.SyscallN(f.add3, uintptr(i), 2, 3)
			s += r
		}
		sink = s
	})
	b.Run("impl=cgo", func(b *testing.B) {
		if !cgoref.Available {
			b.Skip("the cgo baseline needs CGO_ENABLED=1")
		}
		b.ReportAllocs()
		var s uintptr
		for i := 0; b.Loop(); i++ {
			s += cgoref.Call3(f.add3, uintptr(i), 2, 3)
		}
		sink = s
	})
}

var sink uintptr

// BenchmarkCallLibc makes the cgocall and direct calls of BenchmarkCall3 to
// libc's labs, so that it runs where there is no C compiler for the fixture
// (the soft-RoCE VM, where emulation makes the difference larger).
func BenchmarkCallLibc(b *testing.B) {
	h, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW)
	if err != nil {
		b.Fatal(err)
	}
	labs, err := purego.Dlsym(h, "labs")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("impl=ffi", func(b *testing.B) {
		b.ReportAllocs()
		var s uintptr
		for i := 0; b.Loop(); i++ {
			s += ffi.Call3(labs, uintptr(i), 0, 0)
		}
		sink = s
	})
	b.Run("impl=ffi.Direct", func(b *testing.B) {
		b.ReportAllocs()
		var s uintptr
		for i := 0; b.Loop(); i++ {
			s += ffi.Direct3(labs, uintptr(i), 0, 0)
		}
		sink = s
	})
}
