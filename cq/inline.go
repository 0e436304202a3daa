package cq

import (
	"sync/atomic"
)

// Locker is implemented by a Handler whose owner also polls the CQ itself
// (inline polling, from a goroutine waiting for a completion). The reactor
// then polls that CQ, and calls the handler, only while holding the lock,
// and skips the CQ for a round when the owner holds it.
type Locker interface {
	TryLock() bool
	Unlock()
}

// InlinePoller is a Locker whose owner tells the reactor, through Inline,
// while it polls the CQ in a loop. The reactor then leaves that CQ to the
// owner: it neither polls nor arms it, and it does not busy-poll on its
// account, so a waiting owner and the reactor do not spin for the same
// completions (two threads taking the CPU from each other, from the
// kernel's RDMA work and from the peer).
type InlinePoller interface {
	Locker
	Inline() *Inline
}

// Inline is what an InlinePoller's owner shares with the reactor.
//
// The owner calls Begin before it polls in a loop and End after, and
// BeforePark before it parks to wait for the reactor's dispatch: a CQ the
// reactor left unarmed while the owner polled must be armed again before
// anyone relies on its events, so BeforePark wakes the reactor when that is
// the case. The reactor clears armed before it looks at polling, and the
// owner ends polling before it looks at armed; so either the reactor sees
// the owner polling and the owner then sees armed false, or the reactor arms
// the CQ.
type Inline struct {
	polling atomic.Int32 // goroutines of the owner polling in a loop now
	armed   atomic.Bool  // the reactor armed the CQ and polled it after (cleared while it leaves the CQ unarmed or unpolled)
}

// Begin marks a goroutine of the owner as polling the CQ in a loop.
func (in *Inline) Begin() { in.polling.Add(1) }

// End ends a Begin.
func (in *Inline) End() { in.polling.Add(-1) }

// BeforePark is called by a goroutine of the owner before it parks to wait
// for r's dispatch of this CQ's completions.
func (in *Inline) BeforePark(r *Reactor) {
	if !in.armed.Load() {
		r.wake()
	}
}
