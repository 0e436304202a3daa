// Package cq is the completion-queue reactor: one goroutine, locked to its OS
// thread, that polls completion queues in batches and hands each completion to
// the handler its work-request id names. While there is work, and for a
// configurable idle window after it, the reactor keeps polling; then it arms
// notification, polls once more to close the race with a completion that
// arrived meanwhile, and sleeps until the completion channels (or an eventfd
// that wakes it for changes and shutdown) have events: in the Go netpoller,
// unlocked from its thread, so that a wake-up costs one thread's.
//
// The reactor is built for Linux, where it sleeps in epoll
// (reactor_linux.go); on other systems (reactor_other.go) New fails, as
// there is no RDMA there.
package cq

import (
	"sync/atomic"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// Completion is one work completion (struct ibv_wc). ImmData is in network
// byte order, as the NIC wrote it.
type Completion = verbs.WC

// Handler receives the completions of the work requests it posted.
type Handler interface {
	// HandleCompletions runs on the reactor's goroutine with consecutive
	// completions for this handler. It must not block. wcs is valid only
	// during the call.
	HandleCompletions(wcs []Completion)
	// HandleCQError runs on the reactor's goroutine when polling the CQ
	// failed; the CQ is then removed from the reactor.
	HandleCQError(err error)
}

// Options tune a Reactor. The zero value busy-polls for 50µs after the last
// completion, in batches of 32.
type Options struct {
	// NoBusyPoll makes the reactor sleep as soon as a poll finds nothing.
	NoBusyPoll bool
	// IdleSpin is how long to keep polling after the last completion
	// before sleeping; 0 means 50µs.
	IdleSpin time.Duration
	// Batch is how many completions one poll may return; 0 means 32.
	Batch int
}

// Stats are a reactor's counters since it started.
type Stats struct {
	Polls       uint64 // poll_cq calls
	EmptyPolls  uint64 // poll_cq calls that returned nothing
	Completions uint64 // completions dispatched
	Wakeups     uint64 // times the reactor slept and was woken
	Stale       uint64 // completions whose wr_id named no live registration
	Timeouts    uint64 // sleeps that ended by sleepLimit, not by an event
	Passes      uint64 // times the busy reactor let the netpoller run (netpass.Every)
	CQs         int    // CQs registered now
}

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

// Registration is a CQ and handler added to a reactor. Its WRID method makes
// the work-request ids that route completions back to the handler.
type Registration struct {
	slot uint32
	gen  uint16
}

// The layout of a wr_id: registration slot (24 bits), generation (16 bits),
// and 24 bits for the handler's own use.
const (
	localBits = 24
	genBits   = 16
	// LocalMask masks the handler's part of a wr_id.
	LocalMask = 1<<localBits - 1
	maxSlots  = 1 << 24
)

// WRID returns the wr_id for a work request of this registration that
// carries local (24 bits) for the handler.
func (r Registration) WRID(local uint32) uint64 {
	return uint64(r.slot)<<(localBits+genBits) | uint64(r.gen)<<localBits | uint64(local&LocalMask)
}

// Local returns the handler's part of a wr_id.
func Local(wrid uint64) uint32 { return uint32(wrid & LocalMask) }
