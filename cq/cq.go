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

	"github.com/seed54442f1a/rdmapool/internal/unsafeptr"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// Completion is one work completion, as the NIC reported it. It has the
// layout of the C struct the provider writes (the verbs mirror), so a
// poll's batch is handed to a Handler in place: no copy, no allocation.
type Completion struct {
	wc verbs.WC
}

// WRID is the work request's wr_id (see Registration).
func (c *Completion) WRID() uint64 { return c.wc.WRID }

// Send reports whether the work request was posted to the send queue
// (its wr_id came from SendWRID). Unlike Opcode, it holds for a completion
// in error too.
func (c *Completion) Send() bool { return c.wc.WRID&sendBit != 0 }

// Local is the handler's part of the wr_id: what SendWRID or RecvWRID was
// given.
func (c *Completion) Local() uint32 { return uint32(c.wc.WRID) & LocalMask }

// Status is the completion's status (enum ibv_wc_status): 0 for success.
func (c *Completion) Status() uint32 { return c.wc.Status }

// Opcode says what completed (enum ibv_wc_opcode); defined only when Status
// is 0.
func (c *Completion) Opcode() uint32 { return c.wc.Opcode }

// VendorErr is the provider's own error code for a failed completion.
func (c *Completion) VendorErr() uint32 { return c.wc.VendorErr }

// ByteLen is the number of bytes a receive took.
func (c *Completion) ByteLen() uint32 { return c.wc.ByteLen }

// ImmData is the immediate data of a receive, in network byte order, as the
// NIC wrote it; meaningful when Flags has IBV_WC_WITH_IMM.
func (c *Completion) ImmData() uint32 { return c.wc.ImmData }

// Flags are the completion's flags (enum ibv_wc_flags).
func (c *Completion) Flags() uint32 { return c.wc.WCFlags }

// completions returns the n completions of a poll in the C array at wcs,
// in place.
func completions(wcs verbs.Ptr[verbs.WC], n int) []Completion {
	return unsafeptr.Slice[Completion](wcs.Addr(), n)
}

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

// Registration is a CQ and handler added to a reactor. Its SendWRID and
// RecvWRID methods make the work-request ids that route completions back
// to the handler.
type Registration struct {
	slot uint32
	gen  uint16
}

// The layout of a wr_id, which this package alone owns: registration slot
// (24 bits), generation (16 bits), and 24 bits for the handler, of which
// the top one says the request went to the send queue (Completion.Send)
// and the other 23 are the handler's own (Completion.Local).
const (
	localBits = 24
	genBits   = 16
	sendBit   = 1 << (localBits - 1)
	// LocalMask masks the handler's own part of a wr_id: the largest
	// value SendWRID and RecvWRID carry.
	LocalMask = sendBit - 1
	maxSlots  = 1 << 24
)

// SendWRID returns the wr_id for a send-queue work request of this
// registration that carries local (23 bits) for the handler.
func (r Registration) SendWRID(local uint32) uint64 { return r.wrid(sendBit | local&LocalMask) }

// RecvWRID returns the wr_id for a receive-queue work request of this
// registration that carries local (23 bits) for the handler.
func (r Registration) RecvWRID(local uint32) uint64 { return r.wrid(local & LocalMask) }

// wrid returns the wr_id that carries local (24 bits, the send bit
// included).
func (r Registration) wrid(local uint32) uint64 {
	return uint64(r.slot)<<(localBits+genBits) | uint64(r.gen)<<localBits | uint64(local&(1<<localBits-1))
}

// local returns the 24 bits of a wr_id below the generation.
func local(wrid uint64) uint32 { return uint32(wrid & (1<<localBits - 1)) }

// Poller polls one CQ from its owner's goroutine, for an InlinePoller's
// own polls, into C memory the owner holds. Polling allocates nothing.
type Poller struct {
	ops *verbs.ContextOps
	cq  verbs.Ptr[verbs.CQ]
	wcs verbs.Ptr[verbs.WC]
	n   int
}

// NewPoller returns a Poller of cq that reads up to n completions at a
// time into wcs, a C array of n WCs that must outlive it.
func NewPoller(cq verbs.Ptr[verbs.CQ], wcs verbs.Ptr[verbs.WC], n int) Poller {
	return Poller{ops: verbs.CQOps(cq), cq: cq, wcs: wcs, n: n}
}

// Poll polls the CQ once and returns the completions it found, in place:
// they are valid until the next Poll. It returns nil when there were none,
// and when the CQ is in error, which the reactor's own poll reports to
// the Handler (HandleCQError).
func (p *Poller) Poll() []Completion {
	n := verbs.PollCQ(p.ops, p.cq, p.n, p.wcs)
	if n <= 0 {
		return nil
	}
	return completions(p.wcs, n)
}
