package ffi_test

import (
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/ffi"
)

// stackSum is what the fixture's stack function returns for n bytes.
func stackSum(n int) uintptr {
	var s uintptr
	for i := range n {
		s += uintptr(byte(i))
	}
	return s
}

func TestDirectCalls(t *testing.T) {
	f := loadFixture(t)
	for _, off := range []bool{false, true} {
		restore := ffi.SetDirectOff(off)
		if got := ffi.Direct3(f.add3, 1, 2, 3); got != 6 {
			t.Errorf("Direct3 (off=%v) = %d, want 6", off, got)
		}
		neg := ^uintptr(0)
		if got := ffi.Direct3(f.add3, neg, neg, 5); got != 3 {
			t.Errorf("Direct3 (off=%v) with negative arguments = %d, want 3", off, int(got))
		}
		if got := ffi.Direct2(f.add3, 4, 5); got != 9 {
			t.Errorf("Direct2 (off=%v) = %d, want 9", off, got)
		}
		restore()
	}
}

// TestDirectStack: C gets DirectStackSize bytes of stack, less what the
// trampoline and the function's own frame take.
func TestDirectStack(t *testing.T) {
	f := loadFixture(t)
	n := ffi.DirectStackSize - 4096
	if got, want := ffi.Direct3(f.stack, uintptr(n), 0, 0), stackSum(n); got != want {
		t.Errorf("a function using %d bytes of stack returned %d, want %d", n, got, want)
	}
}

// TestDirectStackOverflow: a C function that needs more than the direct
// stack hits its guard page and the process dies of SIGSEGV, rather than
// writing over memory below the stack. Run in a child process. (The
// runtime's handler cannot report this one: it would push its frame on the
// same exhausted stack, so the kernel ends the process. A fault elsewhere
// in C is reported as "unexpected signal during runtime execution".)
func TestDirectStackOverflow(t *testing.T) {
	if os.Getenv("RDMAPOOL_FFI_OVERFLOW_CHILD") == "1" {
		f := loadFixture(t)
		ffi.Direct3(f.stack, 4*ffi.DirectStackSize, 0, 0)
		t.Fatal("a function using 4 × DirectStackSize of stack returned")
	}
	loadFixture(t) // the child needs the C compiler too
	// Under qemu-user without binfmt_misc (the arm64 run of
	// scripts/test.sh) the binary cannot start itself; the emulator, named
	// in RDMAPOOL_TEST_EXEC_WRAPPER, starts it.
	args := append(strings.Fields(os.Getenv("RDMAPOOL_TEST_EXEC_WRAPPER")),
		os.Args[0], "-test.run=^TestDirectStackOverflow$", "-test.count=1")
	cmd := exec.Command(args[0], args[1:]...)
	// The child dies before its test can remove its temporary directory;
	// under this test's, it goes with this one's.
	cmd.Env = append(os.Environ(), "RDMAPOOL_FFI_OVERFLOW_CHILD=1", "GOTRACEBACK=single", "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil {
		t.Skipf("cannot start this test binary as a child process (%v); under an emulator, set RDMAPOOL_TEST_EXEC_WRAPPER to it", err)
	}
	if err == nil {
		t.Fatalf("the child overflowed the direct stack and exited 0:\n%s", out)
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !(ws.Signaled() && ws.Signal() == syscall.SIGSEGV) && !strings.Contains(string(out), "SIGSEGV") {
		t.Errorf("the child failed (%v) without a SIGSEGV:\n%s", err, out)
	}
}

// TestDirectUnderRuntimeStress makes direct calls from more goroutines than
// Ps while the CPU profiler's signals arrive, the garbage collector runs
// and GOMAXPROCS changes (new Ps need stacks of their own), and checks
// every result.
func TestDirectUnderRuntimeStress(t *testing.T) {
	f := loadFixture(t)
	if err := pprof.StartCPUProfile(io.Discard); err != nil {
		t.Logf("no CPU profile (%v); running without its signals", err)
	} else {
		defer pprof.StopCPUProfile()
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	done := make(chan struct{})
	var churn sync.WaitGroup
	churn.Add(1)
	go func() {
		defer churn.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			runtime.GOMAXPROCS(1 + i%6)
			runtime.GC()
		}
	}()
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 512 + 256*g
			want := stackSum(n)
			for i := range 3000 {
				if got := ffi.Direct3(f.add3, uintptr(i), uintptr(g), 1); got != uintptr(i+g+1) {
					t.Errorf("Direct3(add3, %d, %d, 1) = %d", i, g, got)
					return
				}
				if got := ffi.Direct3(f.stack, uintptr(n), 0, 0); got != want {
					t.Errorf("Direct3(stack, %d) = %d, want %d", n, got, want)
					return
				}
				if i%97 == 0 {
					_ = make([]byte, 1<<10) // give the collector work
					runtime.Gosched()
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	churn.Wait()
}

func TestDirectDoesNotAllocate(t *testing.T) {
	f := loadFixture(t)
	ffi.Direct3(f.add3, 1, 2, 3) // this P's stack is mapped once
	if n := testing.AllocsPerRun(1000, func() { ffi.Direct3(f.add3, 1, 2, 3) }); n != 0 {
		t.Errorf("Direct3 allocates %v times per call, want 0", n)
	}
}
