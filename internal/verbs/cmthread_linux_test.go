package verbs

import (
	"runtime"
	"sync"
	"syscall"
	"testing"

	"github.com/ebitengine/purego"
	"golang.org/x/sys/unix"

	"github.com/seed54442f1a/rdmapool/internal/ffi"
)

// libcSym looks name up in the C library, which a purego binary has loaded.
func libcSym(t testing.TB, name string) uintptr {
	t.Helper()
	h, err := purego.Dlopen("libc.so.6", purego.RTLD_NOW)
	if err != nil {
		t.Fatal(err)
	}
	p, err := purego.Dlsym(h, name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCMThread: calls made from many OS threads all run on one other thread,
// and each gets its own call's errno back from there.
func TestCMThread(t *testing.T) {
	gettid, closeFn := libcSym(t, "gettid"), libcSym(t, "close")
	ffi.SetErrnoLocation(libcSym(t, "__errno_location"))

	var (
		mu   sync.Mutex
		tids = map[uintptr]bool{}
		wg   sync.WaitGroup
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread() // each caller on a thread of its own
			defer runtime.UnlockOSThread()
			own := uintptr(unix.Gettid())
			for range 50 {
				tid, _ := callCM(gettid, 0, 0, 0, 0, 0, 0)
				if tid == own {
					t.Error("a call ran on its caller's thread")
					return
				}
				mu.Lock()
				tids[tid] = true
				mu.Unlock()
				// close(-1) fails with EBADF.
				if r, errno := callCM(closeFn, ^uintptr(0), 0, 0, 0, 0, 0); int32(r) != -1 || errno != syscall.EBADF {
					t.Errorf("close(-1) on the librdmacm thread: %d, errno %v; want -1, EBADF", int32(r), errno)
					return
				}
			}
		}()
	}
	wg.Wait()
	// A sequence handed off in one piece runs there too.
	var seq [2]uintptr
	onCMThread(func() {
		seq[0], _ = ffi.CallE(gettid, 0, 0, 0, 0, 0, 0)
		seq[1], _ = ffi.CallE(gettid, 0, 0, 0, 0, 0, 0)
	})
	tids[seq[0]], tids[seq[1]] = true, true
	if len(tids) != 1 {
		t.Errorf("calls ran on %d threads, want 1", len(tids))
	}
}

// BenchmarkCMThread prices the hand-off to the librdmacm thread: a call of
// libc's gettid made there, and made on the caller's thread.
func BenchmarkCMThread(b *testing.B) {
	gettid := libcSym(b, "gettid")
	b.Run("handed-off", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			callCM(gettid, 0, 0, 0, 0, 0, 0)
		}
	})
	b.Run("caller", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ffi.CallE(gettid, 0, 0, 0, 0, 0, 0)
		}
	})
}
