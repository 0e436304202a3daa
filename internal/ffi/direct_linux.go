package ffi

import (
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Direct calls skip runtime.cgocall. A cgocall enters and leaves a system
// call in the scheduler's eyes (entersyscall, exitsyscall) so that a C
// function may block without holding up its P, and runs C on the thread's
// system stack. For a C function that returns within microseconds that is
// most of the cost: a direct call of a trivial function takes 8 ns against
// 28 natively, 126 against 400-495 ns under qemu's TCG. The data-path verbs
// are such functions, and a goroutine waiting for a completion calls
// ibv_poll_cq in a loop.
//
// A direct call instead pins the goroutine to its P (runtime.procPin, as
// sync.Pool does; no preemption, no other goroutine on this P) and runs the
// same trampoline on a C stack kept for that P: DirectStackSize bytes of
// mmap'd memory with an inaccessible guard page below, so a C function
// that overflows it faults at once instead of writing over Go memory. At
// most one pinned goroutine runs on a P, so one stack per P suffices.

// DirectStackSize is the stack C code has in a direct call: ample for the
// providers' data-path functions (well under a page; a message printed on
// an error path, through a buffered vfprintf, needs about 10 KiB).
const DirectStackSize = 64 << 10

// maxProcs bounds the P ids that get a stack: the runtime's largest
// GOMAXPROCS in Go 1.26 (_MaxGomaxprocs). A call on a P beyond it, or when
// the stack cannot be mapped, goes through runtime.cgocall.
const maxProcs = 1 << 10

// stacks[id] is the top of P id's C stack (16-byte aligned), 0 until a
// direct call first runs on that P.
var stacks [maxProcs]atomic.Uintptr

// directOff sends direct calls through runtime.cgocall: the switch for a
// provider that breaks the rules below (RDMAPOOL_FFI_DIRECT=0).
var directOff = os.Getenv("RDMAPOOL_FFI_DIRECT") == "0"

//go:linkname procPin runtime.procPin
func procPin() int

//go:linkname procUnpin runtime.procUnpin
func procUnpin()

// callOn runs the trampoline with f on the C stack whose top is stack
// (trampoline_*.s).
//
//go:noescape
func callOn(f *frame, stack uintptr)

// Direct2 calls fn(a1, a2) directly; see Direct3.
func Direct2(fn, a1, a2 uintptr) uintptr {
	f := frame{fn: fn, args: [6]uintptr{a1, a2}}
	direct(&f)
	return f.r1
}

// Direct3 calls fn(a1, a2, a3) without runtime.cgocall: the goroutine keeps
// its P for the call and C runs on a stack kept for that P. It costs under
// a third of Call3 (make bench-ffi). Only for C functions that
//   - return promptly: while one runs, its P runs nothing else and a
//     stop-the-world of the garbage collector waits for it;
//   - never call back into Go and never longjmp out of the call;
//   - need at most DirectStackSize bytes of stack.
//
// The provider's post_send, post_recv, poll_cq and req_notify_cq are such
// functions: they read or write queues in shared memory and ring a
// doorbell (a write to device memory, or on soft-RoCE a write(2) that the
// kernel serves without sleeping). With RDMAPOOL_FFI_DIRECT=0 in the
// environment, direct calls go through runtime.cgocall like Call3.
func Direct3(fn, a1, a2, a3 uintptr) uintptr {
	f := frame{fn: fn, args: [6]uintptr{a1, a2, a3}}
	direct(&f)
	return f.r1
}

func direct(f *frame) {
	for !directOff {
		id := procPin()
		if id < maxProcs {
			if top := stacks[id].Load(); top != 0 {
				callOn(f, top)
				procUnpin()
				return
			}
		}
		procUnpin()
		// No stack for this P yet: map one, unpinned (mapping allocates
		// and may wait for a lock, which a pinned goroutine must not),
		// then pin again, on whichever P the goroutine is now.
		if id >= maxProcs || !mapStack(id) {
			break
		}
	}
	call(f)
}

// mapStack maps a C stack for P id unless it has one, and reports whether
// it now has one.
func mapStack(id int) bool {
	page := os.Getpagesize()
	mem, err := unix.Mmap(-1, 0, page+DirectStackSize, unix.PROT_READ|unix.PROT_WRITE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_STACK)
	if err != nil {
		return stacks[id].Load() != 0
	}
	if unix.Mprotect(mem[:page], unix.PROT_NONE) != nil {
		unix.Munmap(mem)
		return stacks[id].Load() != 0
	}
	// The slice is not Go memory and is never unmapped once published.
	top := uintptr(unsafe.Pointer(&mem[len(mem)-1])) + 1
	if !stacks[id].CompareAndSwap(0, top) {
		unix.Munmap(mem)
	}
	return true
}
