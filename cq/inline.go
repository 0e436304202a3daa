package cq

import (
	"sync/atomic"
)

// Inline is what the members of a CQ that poll it themselves (inline
// polling, from a goroutine waiting for a completion: Member.PollLocked)
// share with the reactor. While one of them polls the CQ in a loop, the
// reactor leaves the CQ to it: it neither polls nor arms it, and it does not
// busy-poll on its account, so a waiting owner and the reactor do not spin
// for the same completions (two threads taking the CPU from each other,
// from the kernel's RDMA work and from the peer). The poller hands out every
// member's completions meanwhile.
//
// A goroutine calls Begin before it polls in a loop and End after, and Park
// before it parks to wait for the reactor's dispatch (Unpark when it wakes):
// a CQ the reactor left unarmed while members polled must be armed again
// before anyone relies on its events, so Park wakes the reactor when the CQ
// is not armed. The reactor clears armed before it looks at polling, and a
// parker counts itself before it looks at armed (sequentially consistent
// atomics); so either the reactor sees the parker, or the parker sees armed
// false and wakes it. While a CQ with parked waiters is left to a poller,
// the reactor sleeps at most handoffLimit: after the last poller's End it
// arms the CQ (or polls it) within that, without End having to wake it.
type Inline struct {
	r       *Reactor
	polling atomic.Int32 // goroutines polling the CQ in a loop now
	parked  atomic.Int32 // goroutines parked waiting for the reactor's dispatch of it
	armed   atomic.Bool  // the reactor armed the CQ and polled it after (cleared while it leaves the CQ unarmed or unpolled)
}

// Begin marks a goroutine as polling the CQ in a loop.
func (in *Inline) Begin() { in.polling.Add(1) }

// End ends a Begin.
func (in *Inline) End() { in.polling.Add(-1) }

// Park is called by a goroutine before it parks to wait for the reactor's
// dispatch of the CQ's completions.
func (in *Inline) Park() {
	in.parked.Add(1)
	if !in.armed.Load() {
		in.r.wake()
	}
}

// Unpark ends a Park, when the goroutine no longer waits.
func (in *Inline) Unpark() { in.parked.Add(-1) }
