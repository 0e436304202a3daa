package verbs

import (
	"runtime"
	"sync"
	"syscall"

	"github.com/seed54442f1a/rdmapool/internal/ffi"
)

// The librdmacm thread. Every call that can list the RDMA devices (the
// librdmacm calls cm.go names, and ibv_get_device_list) runs on one OS
// thread that does nothing else, for as long as the process lives.
//
// Why: those are the calls that can make libibverbs allocate a struct
// ibv_device (for a device it has not seen before), and glibc's malloc
// serves each thread from its own arena, arenas lying far apart. librdmacm
// before rdma-core 52.0, unless its stable branch has the fix (44.6, 45.5,
// ..., 51.1; Debian bookworm has 44.0), sorts its device list with a
// comparison that casts the difference of two ibv_device pointers to int,
// which orders devices more than 2 GiB apart wrongly. Its merge of the old
// and the new list then drops devices that are still there, and once its list
// is empty the next librdmacm call takes librdmacm's global mutex and, through
// rdma_create_id, tries to take it again: every rdma_cm call of the process
// hangs for good. That needs a device hot-added after the process first
// listed its devices, so that the new device is allocated by another thread
// than the first ones; from one thread, every device comes from one arena.
// docs/design.md ("A hang in librdmacm after a device is removed again")
// has what the VM showed.
//
// The cost is a hand-off to that thread on those calls, on the control path
// (setting up a connection, taking an rdma_cm event); the data path never
// comes here, and neither do the teardown's calls but rdma_get_devices.

// cmCall is one C call handed to the librdmacm thread or, with do set, a few
// made in one hand-off.
type cmCall struct {
	fn    uintptr
	args  [6]uintptr
	r     uintptr
	errno syscall.Errno
	do    func() // calls ffi directly: a hand-off from the thread would wait for itself
	done  chan struct{}
}

var (
	cmOnce  sync.Once
	cmCalls chan *cmCall
	cmFree  = sync.Pool{New: func() any { return &cmCall{done: make(chan struct{}, 1)} }}
)

// cmThread runs the calls handed to it, on its own OS thread, forever: the
// thread is what keeps every device allocation in one malloc arena, so it
// is never given back.
func cmThread(calls <-chan *cmCall) {
	runtime.LockOSThread()
	for c := range calls {
		if c.do != nil {
			c.do()
		} else {
			c.r, c.errno = ffi.CallE(c.fn, c.args[0], c.args[1], c.args[2], c.args[3], c.args[4], c.args[5])
		}
		c.done <- struct{}{}
	}
}

// startCMThread starts the librdmacm thread if it has not started. Publish
// starts it; a call starts it too, should a table come from elsewhere.
func startCMThread() {
	cmOnce.Do(func() {
		cmCalls = make(chan *cmCall)
		go cmThread(cmCalls)
	})
}

// callCM is ffi.CallE made on the librdmacm thread: fn(a1, ..., a6), and
// errno as it was right after the call on that thread.
func callCM(fn, a1, a2, a3, a4, a5, a6 uintptr) (uintptr, syscall.Errno) {
	startCMThread()
	c := cmFree.Get().(*cmCall)
	c.fn, c.args = fn, [6]uintptr{a1, a2, a3, a4, a5, a6}
	cmCalls <- c
	<-c.done
	r, errno := c.r, c.errno
	cmFree.Put(c)
	return r, errno
}

// onCMThread runs do on the librdmacm thread. do makes its C calls with ffi
// directly, never through callCM.
func onCMThread(do func()) {
	startCMThread()
	c := cmFree.Get().(*cmCall)
	c.do = do
	cmCalls <- c
	<-c.done
	c.do = nil
	cmFree.Put(c)
}
