package cq

import (
	"fmt"
	"runtime"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/netpass"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
	"golang.org/x/sys/unix"
)

// sleepLimit is how long the reactor may sleep now: handoffLimit while a
// goroutine is parked on a hot CQ (one the reactor left to a member polling
// it: Inline.handoff), else sleepLimit (handoff.go).
func (r *Reactor) sleepLimit() time.Duration {
	for _, q := range r.hot {
		if q.inline.handoff() {
			return handoffLimit
		}
	}
	return sleepLimit
}

func (r *Reactor) run() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer r.shutdown()

	events := make([]unix.EpollEvent, 64)
	r.epoch = time.Now()
	lastWork := r.epoch
	lastPass := lastWork // when the reactor last parked in the netpoller
	spins, busy := 0, 0
	for {
		if r.pending.Load() {
			if stop := r.applyOps(); stop {
				return
			}
		}
		if n, _ := r.pollAll(); n > 0 {
			lastWork, spins = time.Time{}, 0
			if !r.passIfDue(&lastPass, time.Now()) {
				yieldThread()
			}
			// A cold CQ's event is seen only in the epoll set: look
			// there now and then while busy.
			if busy++; busy&63 == 0 {
				r.peekEvents(events)
				r.coolIdle()
			}
			continue
		}
		if !r.opts.NoBusyPoll {
			// Checking the clock costs more than a poll: do it every 64 spins.
			if spins++; spins&63 != 0 {
				continue
			}
			r.peekEvents(events)
			r.coolIdle()
			now := time.Now()
			if r.passIfDue(&lastPass, now) {
				continue
			}
			if lastWork.IsZero() {
				lastWork = now
			}
			if now.Sub(lastWork) < r.opts.IdleSpin {
				continue
			}
		}
		// Arm, then poll once more: a completion that arrived between the
		// last poll and arming raised no event.
		// A CQ whose owner was polling it is not known to be empty: do not
		// sleep on it.
		if n, skipped := r.armAndCool(0, 0); n > 0 || skipped {
			lastWork, spins = time.Time{}, 0
			if n > 0 {
				yieldThread()
			}
			continue
		}
		r.wakeups.Add(1)
		limit := r.sleepLimit()
		n := r.sleep(events, limit)
		switch {
		case n > 0:
		case limit == sleepLimit:
			r.timeouts.Add(1)
			r.pollCold()
		default:
			r.handoffs.Add(1)
		}
		r.handleEvents(events[:n])
		lastWork, lastPass, spins = time.Time{}, time.Now(), 0
	}
}

// coldPerTimeout bounds the cold CQs one timeout of the sleep polls: a
// reactor with 20,000 idle CQs spent the whole of each 100 ms polling them
// under emulation. Taken in turn, each is still polled within
// len(live)/coldPerTimeout timeouts.
const coldPerTimeout = 256

// pollCold is the safety net of sleepLimit: it polls up to coldPerTimeout
// cold CQs, taking up where the last timeout left off, without arming them
// again (they are armed), and makes hot one that had completions after all.
// A cold CQ costs a poll now and then, not an arm. The protocol does not
// need it (handoff.go, "The timers"): it guards against an event lost
// outside it.
func (r *Reactor) pollCold() {
	for k := 0; k < coldPerTimeout && k < len(r.queues); k++ {
		if r.coldNext >= len(r.queues) {
			r.coldNext = 0
		}
		q := r.queues[r.coldNext]
		r.coldNext++
		if q.hot || q.inline.polled() {
			continue
		}
		if !q.mu.TryLock() {
			r.makeHot(q)
			continue
		}
		n := verbs.PollCQ(q.ops, q.cq, r.opts.Batch, r.wcs)
		r.polls.Add(1)
		switch {
		case n < 0:
			r.makeHot(q) // pollAll reports the error
		case n == 0:
			r.empty.Add(1)
		default:
			r.completions.Add(uint64(n))
			q.dispatch(completions(r.wcs, n), noOwner)
			r.makeHot(q)
		}
		q.mu.Unlock()
	}
}

// handleEvents takes the epoll set's events: a wake-up, or completion
// channels with events, whose CQs become hot.
func (r *Reactor) handleEvents(events []unix.EpollEvent) {
	for _, ev := range events {
		if ev.Fd == -1 {
			var buf [8]byte
			unix.Read(r.evfd, buf[:])
			r.woken.Store(false) // after the read: see wake
			continue
		}
		r.drainEvents(ev.Fd)
	}
}

// peekEvents takes the epoll set's events without waiting, when some CQ is
// cold (its completions are announced there only).
func (r *Reactor) peekEvents(events []unix.EpollEvent) {
	if len(r.hot) == len(r.queues) {
		return
	}
	n, err := unix.EpollWait(r.epfd, events, 0)
	if err != nil || n <= 0 {
		return
	}
	r.handleEvents(events[:n])
}

// A hot CQ becomes a candidate to go cold while the reactor is busy with
// others (coolIdle) after coolAfter empty polls in a row or coolTime
// without a completion, whichever comes first. coolAfter polls are a few
// hundred microseconds on a NIC; coolTime bounds the same where each poll
// is slow (soft-RoCE under emulation) or the poll list is long. Without the
// time bound, the CQs that a keepalive woke stayed hot for 1,024 turns of a
// busy reactor, each turn polling all of them: with 400 idle connections
// the hot list grew faster than it cooled, and one connection's round trip
// cost four times the CPU it did with none.
const (
	coolAfter = 1024
	coolTime  = 500 * time.Microsecond
)

// coolIdle arms and polls, to make cold, the hot CQs that found nothing in
// their last coolAfter polls or for coolTime, so that under load the poll
// list holds the CQs with work, not every one that had some since the
// reactor last slept.
func (r *Reactor) coolIdle() {
	if len(r.hot) < 2 {
		return // the sleep path arms it, as it always did
	}
	now := int64(time.Since(r.epoch))
	for _, q := range r.hot {
		if q.emptyRun > 0 && q.emptyFrom == 0 {
			q.emptyFrom = now
		}
	}
	r.armAndCool(coolAfter, now-int64(coolTime))
}

// passIfDue lets the Go netpoller run (package internal/netpass) when
// netpass.Every has passed since *lastPass, and reports whether it did: a
// reactor that keeps finding completions, beside spinners on the other Ps,
// would otherwise hold up every other network event in the process. It
// yields instead if the pass cannot be made (no eventfd to be had).
func (r *Reactor) passIfDue(lastPass *time.Time, now time.Time) bool {
	if now.Sub(*lastPass) < netpass.Every {
		return false
	}
	r.passes.Add(1)
	runtime.UnlockOSThread()
	if netpass.Pass() != nil {
		runtime.Gosched()
	}
	runtime.LockOSThread()
	*lastPass = time.Now()
	return true
}

// pollAll polls each hot CQ once and dispatches what it found; it returns the
// number of completions, and whether a CQ was skipped because a member held
// its lock.
func (r *Reactor) pollAll() (total int, skipped bool) {
	for i := 0; i < len(r.hot); i++ {
		q := r.hot[i]
		if !q.inline.take() {
			continue // a member polls it (handoff.go)
		}
		if !q.mu.TryLock() {
			skipped = true
			continue
		}
		n := verbs.PollCQ(q.ops, q.cq, r.opts.Batch, r.wcs)
		r.polls.Add(1)
		if n < 0 {
			r.failQueue(q, n)
			q.mu.Unlock()
			i--
			continue
		}
		if n == 0 {
			r.empty.Add(1)
			q.emptyRun++
		} else {
			q.emptyRun, q.emptyFrom = 0, 0
			total += n
			r.completions.Add(uint64(n))
			q.dispatch(completions(r.wcs, n), noOwner)
		}
		q.mu.Unlock()
	}
	return total, skipped
}

// failQueue takes q, whose poll returned n < 0, out of the poll lists for
// good and tells its members (q.mu held): the CQ is in error.
func (r *Reactor) failQueue(q *queue, n int) {
	q.broken.Store(true)
	r.dropQueue(q)
	err := fmt.Errorf("cq: ibv_poll_cq failed (%d): the CQ is in error", n)
	for _, m := range q.members {
		if m.live {
			m.h.HandleCQError(err)
		}
	}
}
