package qp

import (
	"runtime"
	"sync/atomic"
	"time"
)

// InlineCap is the max_inline_data the provider granted c's QP.
func (c *Conn) InlineCap() uint32 { return c.res.inline }

// HoldCompletions keeps the reactor and inline polls from handling c's
// completions (those of every connection on its CQ) until the returned
// function is called.
func (c *Conn) HoldCompletions() (release func()) {
	for !c.member.TryLock() {
		runtime.Gosched()
	}
	return c.member.Unlock
}

// ReadLooksHook gives o a hook: a function stored in it runs in every Read
// of the connections made with o, between its look at the QP's flush and
// its look at the receive ring (where the data and the flush can be
// handled by another goroutine).
func ReadLooksHook(o *Options) *atomic.Pointer[func(*Conn)] {
	o.readLooks = new(atomic.Pointer[func(*Conn)])
	return o.readLooks
}

// RegisterHook gives o a hook: a function stored in it runs before each
// registration of send staging or of a receive buffer by the connections
// made with o, with its size, on the goroutine that registers.
func RegisterHook(o *Options) *atomic.Pointer[func(*Conn, int)] {
	o.registering = new(atomic.Pointer[func(*Conn, int)])
	return o.registering
}

// QPDown reports whether c has handled the flush of its QP.
func (c *Conn) QPDown() bool { return c.life.load().qpDown() }

// PeerClosed reports whether c has seen its peer's disconnect.
func (c *Conn) PeerClosed() bool { return c.life.load().peerClosed() }

// KeepalivesSent is how many keepalives the process's connections have
// posted from their keepalive ticks.
func KeepalivesSent() uint64 { return keepalivesSent.Load() }

// BreakQP moves c's QP to the error state, as a fault would, without a
// disconnect: its work requests are flushed and the peer is not told. Only
// a client's QP is its own to move (ownqp.go); on a server's it does
// nothing.
func (c *Conn) BreakQP() { c.res.shutdownQP() }

// SetQPDownGrace sets how long the connections made with o wait, their
// link half down, for the other half (the peer's DISCONNECTED or the
// flush) before the grace timer stands in for it.
func SetQPDownGrace(o *Options, d time.Duration) { o.qpDownGrace = d }

// TornDown reports whether c's teardown has freed everything.
func (c *Conn) TornDown() bool {
	select {
	case <-c.torndown:
		return true
	default:
		return false
	}
}

// Life is c's life state, as life.go names it.
func (c *Conn) Life() string { return c.life.load().String() }

// TakeRxSignal takes the signal on c's rxNotify, if there is one, and
// reports whether there was: whether the reader's next park would have
// returned at once.
func (c *Conn) TakeRxSignal() bool {
	select {
	case <-c.rxNotify:
		return true
	default:
		return false
	}
}
