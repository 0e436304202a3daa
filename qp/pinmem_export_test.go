package qp

// Pinned is the memory c has registered: command slots, receive buffer and
// send staging. It waits for a Read or Write in progress to end.
func (c *Conn) Pinned() int { return c.pinned() }

// RecvRoom is how many bytes the peer may write into c's receive buffer
// before it must wait for a re-arm, and the buffer's size. It waits for a
// Read in progress to end.
func (c *Conn) RecvRoom() (room, size int) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	size = c.res.rx.Len()
	written, _ := c.rxRing.Written()
	return size - written, size
}

// Keepalive does what c's keepalive timer does: sends a keepalive and, if
// the connection has been idle since the last one, shrinks its staging.
func (c *Conn) Keepalive() { c.keepaliveTick(true) }
