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

// sleep waits until the epoll set has events, or for limit, and
// returns the events it took. It waits in the Go netpoller, unlocked from
// its thread: locked, the thread that runs the netpoller would have to hand
// the reactor to its own thread when an event came, two thread wake-ups
// instead of one (docs/design.md has the A/B).
func (r *Reactor) sleep(events []unix.EpollEvent, limit time.Duration) int {
	runtime.UnlockOSThread()
	defer runtime.LockOSThread()
	r.ep.SetReadDeadline(time.Now().Add(limit))
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

// drainEvents takes every pending event from the completion channel whose
// file descriptor is fd and acks each once; the CQs they are for become
// hot. An event for a CQ no longer polled is acked too: ibv_destroy_cq
// waits for that.
func (r *Reactor) drainEvents(fd int32) {
	d := r.chans[fd]
	if d == nil {
		return
	}
	for {
		cq, errno := r.t.GetCQEventInto(d.ch, r.evOut)
		if errno != 0 {
			return // EAGAIN: drained
		}
		r.t.AckCQEvents(cq, 1)
		if q := r.byCQ[cq.Addr()]; q != nil {
			r.makeHot(q)
		}
	}
}

// armAndCool arms each hot CQ that has found nothing in its last minEmpty
// polls, or since emptyBy (emptyFrom at or before it, when emptyBy > 0),
// except those a member polls (Inline.take), and polls it once more: a
// completion that came before the arm raised no event. A CQ found empty
// then goes cold: it leaves the poll list until its event comes. It returns
// the completions those polls found, and whether a CQ was skipped because a
// member held its lock.
func (r *Reactor) armAndCool(minEmpty uint32, emptyBy int64) (total int, skipped bool) {
	for i := 0; i < len(r.hot); i++ {
		q := r.hot[i]
		idle := q.emptyRun >= minEmpty || (emptyBy > 0 && q.emptyRun > 0 && q.emptyFrom != 0 && q.emptyFrom <= emptyBy)
		if !idle {
			continue
		}
		if !q.inline.take() {
			continue // a member polls it (handoff.go)
		}
		if !q.mu.TryLock() {
			skipped = true
			continue
		}
		verbs.ReqNotifyCQ(q.ops, q.cq, false)
		n := verbs.PollCQ(q.ops, q.cq, r.opts.Batch, r.wcs)
		r.polls.Add(1)
		if n < 0 {
			r.failQueue(q, n)
			q.mu.Unlock()
			i--
			continue
		}
		if n > 0 {
			// Armed, and polled after: the arm stands, the CQ stays hot.
			q.emptyRun, q.emptyFrom = 0, 0
			total += n
			r.completions.Add(uint64(n))
			q.dispatch(completions(r.wcs, n), noOwner)
		} else {
			r.empty.Add(1)
			q.hot = false
			r.hot = append(r.hot[:i], r.hot[i+1:]...)
			i--
			r.hotCQs.Add(-1)
		}
		q.inline.watched()
		q.mu.Unlock()
	}
	return total, skipped
}
