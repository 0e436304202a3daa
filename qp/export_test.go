package qp

import "time"

// InlineCap is the max_inline_data the provider granted c's QP.
func (c *Conn) InlineCap() uint32 { return c.res.inline }

// HoldCompletions keeps the reactor and inline polls from handling c's
// completions until the returned function is called.
func (c *Conn) HoldCompletions() (release func()) {
	c.h.mu.Lock()
	return c.h.mu.Unlock
}

// SetReadLooksHook makes f run in every Read between its look at the QP's
// flush and its look at the receive ring, until the test ends.
func SetReadLooksHook(t interface{ Cleanup(func()) }, f func(*Conn)) {
	testHookReadLooks.Store(&f)
	t.Cleanup(func() { testHookReadLooks.Store(nil) })
}

// QPDown reports whether c has handled the flush of its QP.
func (c *Conn) QPDown() bool { return c.qpDown.Load() }

// PeerClosed reports whether c has seen its peer's disconnect.
func (c *Conn) PeerClosed() bool { return c.peerClosed.Load() }

// SetCloseLinger sets how long Close waits for outstanding sends, until the
// test ends.
func SetCloseLinger(t interface{ Cleanup(func()) }, d time.Duration) {
	old := closeLinger
	closeLinger = d
	t.Cleanup(func() { closeLinger = old })
}
