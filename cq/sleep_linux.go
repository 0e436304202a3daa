package cq

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
	"golang.org/x/sys/unix"
)

// wake makes the reactor look at its operations and CQs again: at once if
// it sleeps, else before it next sleeps. Wakes coalesce, as gnet's poller
// does: only the first since the reactor last read its eventfd writes to it
// (a syscall each); the others find the write pending. The reactor clears
// woken after the read and then looks at everything before it sleeps
// again, so what a waker set up before a wake that found woken set is seen.
func (r *Reactor) wake() {
	if !r.woken.CompareAndSwap(false, true) {
		return
	}
	var one = [8]byte{1}
	unix.Write(r.evfd, one[:]) // EAGAIN only if the counter is saturated: already awake
}

// sleep waits until the epoll set has events, or for sleepLimit, and
// returns the events it took. It waits in the Go netpoller, unlocked from
// its thread: locked, the thread that runs the netpoller would have to hand
// the reactor to its own thread when an event came, two thread wake-ups
// instead of one (docs/design.md has the A/B).
func (r *Reactor) sleep(events []unix.EpollEvent) int {
	runtime.UnlockOSThread()
	defer runtime.LockOSThread()
	r.ep.SetReadDeadline(time.Now().Add(sleepLimit))
	n := 0
	var werr error
	err := r.epRC.Read(func(fd uintptr) bool {
		n, werr = unix.EpollWait(int(fd), events, 0)
		if werr == unix.EINTR {
			n, werr = 0, nil
		}
		return werr != nil || n > 0
	})
	if werr != nil {
		panic(fmt.Sprintf("cq: epoll_wait: %v", werr)) // a programming error: bad epfd
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		panic(fmt.Sprintf("cq: waiting for the epoll set: %v", err)) // only Close, by this goroutine, ends it otherwise
	}
	return max(n, 0)
}

// yieldThread lets the goroutines a dispatch made runnable (a reader or
// writer the handler signalled) run at once on this thread and P, instead
// of waking another thread to steal them while the reactor polls on.
// Locked, the reactor's Gosched would hand its P to another thread.
func yieldThread() {
	runtime.UnlockOSThread()
	runtime.Gosched()
	runtime.LockOSThread()
}

// hasUnnotifiable reports whether some CQ has no completion channel, so the
// reactor must not sleep.
func (r *Reactor) hasUnnotifiable() bool {
	for _, s := range r.live {
		if r.entries[s].channel.IsNil() {
			return true
		}
	}
	return false
}

// drainEvents takes every pending event from a slot's completion channel and
// acks each once.
func (r *Reactor) drainEvents(slot uint32) {
	if int(slot) >= len(r.entries) || !r.entries[slot].live {
		return
	}
	e := &r.entries[slot]
	for {
		cq, errno := r.t.GetCQEventInto(e.channel, r.evOut)
		if errno != 0 {
			return // EAGAIN: drained
		}
		r.t.AckCQEvents(cq, 1)
	}
}

// armAll arms every CQ that has a channel, except those whose owner polls
// them (see Inline).
func (r *Reactor) armAll() {
	for _, s := range r.live {
		e := &r.entries[s]
		if e.channel.IsNil() {
			continue
		}
		if in := e.inline; in != nil {
			in.armed.Store(false)
			if in.polling.Load() > 0 {
				continue
			}
		}
		verbs.ReqNotifyCQ(e.ops, e.cq, false)
		if e.inline != nil {
			e.inline.armed.Store(true)
		}
	}
}
