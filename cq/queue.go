package cq

import (
	"sync"
	"sync/atomic"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// queue is one CQ of the reactor's, on one device, shared by the queue
// pairs attached to it (its members): its entries are as many as their
// work requests, so that a QP in error, which flushes every work request
// it holds, cannot overrun it.
type queue struct {
	r      *Reactor
	dev    *device
	cq     verbs.Ptr[verbs.CQ]
	ops    *verbs.ContextOps
	size   int                 // entries
	batch  int                 // WCs at wcs
	wcs    verbs.Ptr[verbs.WC] // for inline polls and Release's drain, under mu
	inline Inline

	// mu serialises polling the CQ with handing out what the poll found,
	// so that each member's completions reach it in order, whoever polls;
	// it guards the member table too.
	mu      sync.Mutex
	members []member    // by registration slot
	free    []uint32    // slots of members that left
	broken  atomic.Bool // a poll failed: the CQ is in error and polled no more (set under mu, read by attach too)

	used int // entries reserved by members not yet released (the reactor's devMu)

	// The reactor goroutine's. hot: the CQ is in the poll list. It leaves
	// it (goes cold) when the reactor armed it and then polled it empty
	// (armAndCool): any completion after that raises an event, which puts
	// it back. So an idle CQ costs no poll and no arm.
	hot      bool
	emptyRun uint32 // the hot CQ's polls in a row that found nothing
	// emptyFrom is when coolIdle first saw the current run of empty
	// polls (on the reactor's clock, since epoch); 0 while it has not,
	// and after each poll that found completions.
	emptyFrom int64
}

// member is a slot of a queue's member table.
type member struct {
	h    Handler // nil once the member left
	gen  uint16
	live bool
}

// attach puts h in a free slot (mu held) and returns its registration; a
// slot used before gets the next generation, so that completions still
// naming its last member are not handed to h.
func (q *queue) attach(h Handler) registration {
	var slot uint32
	if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
	} else {
		slot = uint32(len(q.members))
		q.members = append(q.members, member{})
	}
	m := &q.members[slot]
	m.gen++
	m.h, m.live = h, true
	return registration{slot: slot, gen: m.gen}
}

// noOwner is dispatch's owner when no member polls: the reactor's polls.
const noOwner = ^uint32(0)

// dispatch hands each run of completions that name the same live member to
// its handler (mu held), telling the member in slot owner that it polled;
// it returns how many were owner's.
func (q *queue) dispatch(wcs []Completion, owner uint32) (own int) {
	for len(wcs) > 0 {
		slot, gen := decode(wcs[0].wc.WRID)
		n := 1
		for n < len(wcs) {
			if s, g := decode(wcs[n].wc.WRID); s != slot || g != gen {
				break
			}
			n++
		}
		if int(slot) < len(q.members) && q.members[slot].live && q.members[slot].gen == gen {
			q.members[slot].h.HandleCompletions(wcs[:n], slot == owner)
			if slot == owner {
				own += n
			}
		} else {
			q.r.stale.Add(uint64(n))
		}
		wcs = wcs[n:]
	}
	return own
}

// Member is a queue pair's place on a CQ of the reactor's (Reactor.attach):
// the CQ to create the QP with, the wr_ids that route its completions to
// its Handler, and polling the CQ from the member's own goroutines.
// Its methods are for one owner: Leave and Release are not called
// concurrently with each other or with the others.
type Member struct {
	q        *queue
	reg      registration
	cqes     int
	left     bool
	released bool
}

// handle is the CQ to create the queue pair with, as its send and receive
// CQ. Package qp calls it through internal/bridge (bridge.go).
func (m *Member) handle() verbs.Ptr[verbs.CQ] { return m.q.cq }

// SendWRID returns the wr_id for a send-queue work request that carries
// local (23 bits) for the handler.
func (m *Member) SendWRID(local uint32) uint64 { return m.reg.SendWRID(local) }

// RecvWRID returns the wr_id for a receive-queue work request that carries
// local (23 bits) for the handler.
func (m *Member) RecvWRID(local uint32) uint64 { return m.reg.RecvWRID(local) }

// Inline is the CQ's inline-polling state, shared with the reactor and the
// other members.
func (m *Member) Inline() *Inline { return &m.q.inline }

// TryLock takes the CQ's lock, without waiting, for PollLocked; while a
// member holds it, the reactor and the other members skip the CQ.
func (m *Member) TryLock() bool { return m.q.mu.TryLock() }

// Unlock releases the lock TryLock took.
func (m *Member) Unlock() { m.q.mu.Unlock() }

// PollLocked polls the CQ once, with its lock held (TryLock), and hands out
// what it found: each member's completions to its handler, on this
// goroutine, this member's with byOwner set. It returns how many were this
// member's. A CQ in error yields nothing here; the reactor's poll reports
// it to every member (HandleCQError).
func (m *Member) PollLocked() int {
	q := m.q
	if q.broken.Load() {
		return 0
	}
	n := verbs.PollCQ(q.ops, q.cq, q.batch, q.wcs)
	if n <= 0 {
		return 0
	}
	return q.dispatch(completions(q.wcs, n), m.reg.slot)
}

// Leave takes the member off its CQ: when it returns, its handler is called
// no more, and completions of its QP still to come are dropped (counted as
// stale). Release follows once the QP is destroyed.
func (m *Member) Leave() {
	if m.left {
		return
	}
	m.left = true
	q := m.q
	q.mu.Lock()
	q.members[m.reg.slot] = member{gen: m.reg.gen}
	q.free = append(q.free, m.reg.slot)
	q.mu.Unlock()
}

// Release gives the member's room on the CQ back, once its QP is destroyed
// and no completion of it can come any more; it calls Leave if that was
// not done. The last member on a device releases the device's CQs and
// completion channel.
func (m *Member) Release() {
	if m.released {
		return
	}
	m.Leave()
	m.released = true
	q := m.q
	// Completions the QP left in the CQ are taken out (and dropped) now,
	// so that the room given back is empty: a CQ is a queue, and a poll
	// that returns less than a full batch has reached its end.
	q.mu.Lock()
	if !q.broken.Load() {
		for range q.size/q.batch + 1 {
			n := verbs.PollCQ(q.ops, q.cq, q.batch, q.wcs)
			if n > 0 {
				q.dispatch(completions(q.wcs, n), noOwner)
			}
			if n < q.batch {
				break
			}
		}
	}
	q.mu.Unlock()
	q.r.release(q, m.cqes)
}
