package qp

import (
	"sync/atomic"
	"time"
)

// A connection's life is one word (life.word), changed only by CAS through
// the transitions of lifeTable, plus the terminal error, set once. The
// word holds two named parts, because two things change independently:
//
//   - its phase, which says whether calls go on: open, then failed (the
//     first terminal error) or closed (Close); failed → closed when Close
//     comes after a failure. Nothing leaves closed.
//   - its link, which says what the QP can still do: connecting, then up,
//     then down in one of two orders (the peer's DISCONNECTED, answered with
//     our disconnect, and the flush of the QP that the answer causes), and
//     draining once both came. The link goes on moving after the phase
//     ended: Close lingers while the link is up (close.go), and the
//     teardown disconnects only a link that is up or flushed.
//
// Every transition, as data (lifeTable; TestLifeTable drives each and
// checks that every other is refused):
//
//	axis   from         event          to           what triggers it (and what it arms)
//	phase  open         evFail         failed       the first terminal error (fail): a completion or CQ error, a protocol error, an rdma_cm event, a failed setup
//	phase  open         evClose        closed       Close
//	phase  failed       evClose        closed       Close after a failure: later calls say net.ErrClosed
//	link   connecting   evEstablished  up           a server's ESTABLISHED, a client's rdma_establish (onEstablished)
//	link   connecting   evDisconnected peer-closed  DISCONNECTED before ESTABLISHED (arms the grace timer)
//	link   connecting   evFlushed      flushed      a flushed work request before ESTABLISHED (arms the grace timer)
//	link   up           evDisconnected peer-closed  DISCONNECTED, answered with our disconnect (arms the grace timer)
//	link   up           evFlushed      flushed      a flushed work request (arms the grace timer)
//	link   peer-closed  evFlushed      draining     the flush our answer caused (stops the grace timer)
//	link   peer-closed  evGrace        draining     no flush within qpDownGrace
//	link   flushed      evDisconnected draining     the DISCONNECTED that says why (stops the grace timer)
//	link   flushed      evGrace        draining     no rdma_cm event within qpDownGrace: taken as the peer's close
//
// What each state means to the calls:
//
//	open/connecting   Dial or the listener's accept under way; no caller has the connection
//	open/up           reads and writes go
//	open/peer-closed  writes fail with ErrPeerGone; reads take what arrived and wait for the flush, which comes after every completion before it
//	open/flushed      reads and writes wait for the rdma_cm event that says why (what arrived stays readable)
//	open/draining     every completion was handled: reads take what is left, then io.EOF; writes fail with ErrPeerGone
//	failed/*          every call returns the terminal error; the teardown runs
//	closed/*          every call returns net.ErrClosed; the teardown runs (after a linger while the link is up)
//
// The holds of Lease and Reserve come and go many times in a life and are
// a word of their own (holds); whether the event loop was started is a
// fact of setup (Conn.evStarted).

// phase is whether a connection's calls go on.
type phase uint8

const (
	phaseOpen   phase = iota // calls go on
	phaseFailed              // ended by an error (life.err): every call returns it
	phaseClosed              // Close was called: every call returns net.ErrClosed
	numPhases
)

func (p phase) String() string {
	switch p {
	case phaseOpen:
		return "open"
	case phaseFailed:
		return "failed"
	case phaseClosed:
		return "closed"
	}
	return "phase?"
}

// link is what a connection's QP can still do.
type link uint8

const (
	linkConnecting link = iota // not yet established
	linkUp                     // established: data flows both ways
	linkPeerClosed             // the peer disconnected; the flush is awaited
	linkFlushed                // the QP was flushed; the rdma_cm event that says why is awaited
	linkDraining               // both: every completion before the flush was handled
	numLinks
)

func (k link) String() string {
	switch k {
	case linkConnecting:
		return "connecting"
	case linkUp:
		return "up"
	case linkPeerClosed:
		return "peer-closed"
	case linkFlushed:
		return "flushed"
	case linkDraining:
		return "draining"
	}
	return "link?"
}

// lifeState is the word: the phase in bits 8-15, the link in bits 0-7.
type lifeState uint32

func mkState(p phase, k link) lifeState { return lifeState(p)<<8 | lifeState(k) }

func (s lifeState) phase() phase { return phase(s >> 8) }
func (s lifeState) link() link   { return link(s) }

func (s lifeState) String() string { return s.phase().String() + "/" + s.link().String() }

// ended reports whether the connection failed or was closed.
func (s lifeState) ended() bool { return s.phase() != phaseOpen }

// userClosed reports whether Close was called.
func (s lifeState) userClosed() bool { return s.phase() == phaseClosed }

// peerClosed reports whether the peer's close is known (its DISCONNECTED
// came, or the grace timer stood in for it): writes fail.
func (s lifeState) peerClosed() bool {
	return s.link() == linkPeerClosed || s.link() == linkDraining
}

// qpDown reports whether the QP's flush was handled (or the grace timer
// stood in for it): nothing more completes successfully.
func (s lifeState) qpDown() bool { return s.link() == linkFlushed || s.link() == linkDraining }

// drained reports whether the peer closed and every completion before the
// flush was handled: what the receive ring holds is all there is.
func (s lifeState) drained() bool { return s.link() == linkDraining }

// lifeEvent is what moves the word.
type lifeEvent uint8

const (
	evEstablished  lifeEvent = iota // the connection is up (onEstablished)
	evDisconnected                  // DISCONNECTED, answered with our disconnect (onPeerClosed)
	evFlushed                       // a flushed work request was handled (onQPDown)
	evGrace                         // the grace timer fired: the other of the two did not come
	evFail                          // the first terminal error (fail)
	evClose                         // Close
	numEvents
)

func (e lifeEvent) String() string {
	switch e {
	case evEstablished:
		return "established"
	case evDisconnected:
		return "disconnected"
	case evFlushed:
		return "flushed"
	case evGrace:
		return "grace"
	case evFail:
		return "fail"
	case evClose:
		return "close"
	}
	return "event?"
}

// onPhase reports whether e moves the phase (else it moves the link).
func (e lifeEvent) onPhase() bool { return e == evFail || e == evClose }

// transition is a row of lifeTable: event ev moves the phase (for evFail
// and evClose) or the link (for the others) from from to to; the other
// part of the word stays.
type transition struct {
	from uint8
	ev   lifeEvent
	to   uint8
}

// lifeTable is every legal transition; any other (state, event) is refused
// and leaves the word as it was. The comment at the top of the file says
// what triggers each.
var lifeTable = []transition{
	{uint8(phaseOpen), evFail, uint8(phaseFailed)},
	{uint8(phaseOpen), evClose, uint8(phaseClosed)},
	{uint8(phaseFailed), evClose, uint8(phaseClosed)},

	{uint8(linkConnecting), evEstablished, uint8(linkUp)},
	{uint8(linkConnecting), evDisconnected, uint8(linkPeerClosed)},
	{uint8(linkConnecting), evFlushed, uint8(linkFlushed)},
	{uint8(linkUp), evDisconnected, uint8(linkPeerClosed)},
	{uint8(linkUp), evFlushed, uint8(linkFlushed)},
	{uint8(linkPeerClosed), evFlushed, uint8(linkDraining)},
	{uint8(linkPeerClosed), evGrace, uint8(linkDraining)},
	{uint8(linkFlushed), evDisconnected, uint8(linkDraining)},
	{uint8(linkFlushed), evGrace, uint8(linkDraining)},
}

// lifeNext is lifeTable indexed: lifeNext[ev][from] is to+1, 0 if refused.
var lifeNext = func() (n [numEvents][8]uint8) {
	for _, t := range lifeTable {
		n[t.ev][t.from] = t.to + 1
	}
	return n
}()

// next is the state ev moves s to, and false if the table refuses it.
func next(s lifeState, ev lifeEvent) (lifeState, bool) {
	if ev.onPhase() {
		to := lifeNext[ev][s.phase()]
		return mkState(phase(to-1), s.link()), to != 0
	}
	to := lifeNext[ev][s.link()]
	return mkState(s.phase(), link(to-1)), to != 0
}

// ending is the terminal error, published once (life.end).
type ending struct{ err error }

// life is a connection's life: the word, the terminal error and the grace
// timer. Its zero value is open/connecting.
type life struct {
	word atomic.Uint32
	end  atomic.Pointer[ending] // set once, by the first of evFail and evClose, before the phase moves

	// The grace timer, armed when the link first goes down (peer-closed
	// or flushed) and stopped when it drains by the other event: it
	// stands in for the other event, should it never come. graceAfter
	// is qpDownGrace but in tests; changed is called after the timer
	// moved the word (the connection wakes its waiters).
	grace      atomic.Pointer[time.Timer]
	graceAfter time.Duration
	changed    func()
}

// qpDownGrace is how long a connection whose QP went down waits for the
// rdma_cm event that says why, before it takes it as the peer's close; and
// how long one whose peer closed waits for the flush.
const qpDownGrace = 2 * time.Second

func (l *life) load() lifeState { return lifeState(l.word.Load()) }

// ended reports whether the connection failed or was closed.
func (l *life) ended() bool { return l.load().ended() }

// err is the terminal error (nil while the connection is open): the first
// given to end, net.ErrClosed if that was Close.
func (l *life) err() error {
	if e := l.end.Load(); e != nil {
		return e.err
	}
	return nil
}

// move applies ev by CAS, unless the table refuses it from the state the
// word holds; it returns the state before and whether ev moved it. The
// move that takes the link down arms the grace timer; the one that drains
// it by the other event stops it.
func (l *life) move(ev lifeEvent) (lifeState, bool) {
	for {
		from := l.load()
		to, ok := next(from, ev)
		if !ok {
			return from, false
		}
		if !l.word.CompareAndSwap(uint32(from), uint32(to)) {
			continue
		}
		switch {
		case from.link() != to.link() && (to.link() == linkPeerClosed || to.link() == linkFlushed):
			l.armGrace()
		case to.link() == linkDraining && ev != evGrace:
			l.stopGrace()
		}
		return from, true
	}
}

// endWith publishes err as the terminal error if none is (the first wins),
// and moves the phase by ev (evFail or evClose): a Close moves it to closed
// even after a failure, a failure only if its error was the one published.
// It reports whether err was.
func (l *life) endWith(err error, ev lifeEvent) bool {
	won := l.end.CompareAndSwap(nil, &ending{err: err})
	if won || ev == evClose {
		l.move(ev)
	}
	return won
}

func (l *life) armGrace() {
	d := l.graceAfter
	if d == 0 {
		d = qpDownGrace
	}
	t := time.AfterFunc(d, func() {
		if _, ok := l.move(evGrace); ok && l.changed != nil {
			l.changed()
		}
	})
	l.grace.Store(t)
	// The other event may have drained the link between the CAS and the
	// Store, and found no timer to stop.
	if l.load().drained() {
		t.Stop()
	}
}

// stopGrace stops the grace timer, if one is armed (the link drained by
// the other event, or the teardown).
func (l *life) stopGrace() {
	if t := l.grace.Load(); t != nil {
		t.Stop()
	}
}

// holds is the Lease and the reservation a connection's callers hold: a
// word of its own, beside the life, since they come and go many times.
// Close does not wait for them; the teardown does (it takes rmu and wmu).
type holds struct{ w atomic.Uint32 }

const (
	holdLease   uint32 = 1 << iota // a Lease is held (until Release)
	holdReserve                    // a reservation is held (until Commit)
)

// take records hold b.
func (h *holds) take(b uint32) { h.w.Or(b) }

// drop ends hold b and reports whether it was held.
func (h *holds) drop(b uint32) bool { return h.w.And(^b)&b != 0 }

// any reports whether a Lease or a reservation is held.
func (h *holds) any() bool { return h.w.Load() != 0 }
