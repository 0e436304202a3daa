package qp

import (
	"runtime"
	"sync/atomic"
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
func (c *Conn) QPDown() bool { return c.is(stQPDown) }

// PeerClosed reports whether c has seen its peer's disconnect.
func (c *Conn) PeerClosed() bool { return c.is(stPeerClosed) }

// KeepalivesSent is how many keepalives the process's connections have
// posted from their keepalive ticks.
func KeepalivesSent() uint64 { return keepalivesSent.Load() }
