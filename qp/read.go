package qp

import (
	"errors"
	"io"
	"os"
)

// Read reads received data into p.
func (c *Conn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if StagesEnabled {
		c.marks.begin()
		defer c.marks.end()
	}
	b, err := c.readable()
	if err != nil {
		return 0, err
	}
	n := copy(p, b)
	return n, c.consume(n)
}

// Lease waits for received data and returns it without copying: a slice of
// the registered receive buffer. The slice stays valid, and other reads wait,
// until Release; a peer that keeps to the protocol cannot overwrite it
// before then (the buffer stays remotely writable, so one that does not
// could). Release must follow every successful Lease, from the same
// goroutine or another.
func (c *Conn) Lease() ([]byte, error) {
	c.rmu.Lock()
	b, err := c.readable()
	if err != nil {
		c.rmu.Unlock()
		return nil, err
	}
	c.leased = len(b)
	c.set(stLeaseHeld)
	signal(c.heldNotify) // a Close that looked before now returns (Close)
	return b, nil
}

// Release ends a Lease, consuming its first n bytes (the rest is returned
// again by the next Read or Lease).
func (c *Conn) Release(n int) error {
	if !c.clear(stLeaseHeld) {
		return errors.New("rdma: Release without a Lease")
	}
	defer c.rmu.Unlock()
	if n < 0 || n > c.leased {
		return errors.New("rdma: Release of more than was leased")
	}
	return c.consume(n)
}

// readable waits until there is data to read, the peer has closed (io.EOF
// once the data is drained), the connection fails, or the deadline passes.
func (c *Conn) readable() ([]byte, error) {
	sp := c.newSpin(&c.rxPassed)
	defer sp.release()
	for {
		if err := c.terminal(); err != nil {
			return nil, c.opError("read", err)
		}
		// As in net.TCPConn: a passed deadline fails a read even when
		// data is waiting.
		if c.readDL.Expired() {
			return nil, c.opError("read", os.ErrDeadlineExceeded)
		}
		// After the peer's close, data it wrote before may still wait in
		// the CQ: io.EOF only once the flush of the QP (our answer to the
		// disconnect) shows that everything before it was handled. Look
		// at that before the ring: the handling records data (Wrote)
		// before the flush (onQPDown), so a reader that sees the flush
		// finds the data before it in the ring, even when both were
		// handled after its last look.
		drained := c.is(stPeerClosed) && c.is(stQPDown)
		if h := c.opts.readLooks; h != nil {
			if f := h.Load(); f != nil {
				(*f)(c)
			}
		}
		if c.res != nil {
			if b := c.rxRing.Readable(); len(b) > 0 {
				return b, nil
			}
		}
		if drained {
			// A peer on the same device closes when the device goes,
			// and its DISCONNECTED can come before our DEVICE_REMOVAL
			// (removal.go). The event loop looked when DISCONNECTED came;
			// by now the removal seen elsewhere has had the time to land.
			if c.res != nil && deviceRecentlyGone(c.res.device) {
				c.fail(ErrDeviceRemoved)
				continue
			}
			return nil, io.EOF
		}
		if !c.is(stQPDown) && c.spinPoll(&sp) {
			continue
		}
		if !c.park(c.rxNotify, c.readDL.Wait()) {
			return nil, c.opError("read", os.ErrDeadlineExceeded)
		}
	}
}

// consume marks n bytes read; once the whole buffer is read it is re-armed.
func (c *Conn) consume(n int) error {
	if !c.rxRing.Consume(n) {
		return nil
	}
	c.rxRing.Reset()
	if c.is(stPeerClosed) || c.is(stClosing) {
		return nil
	}
	if err := c.sendCmd(c.registerCmd(), true); err != nil {
		if err == errQPDown {
			return nil // the peer is gone: the next Read says so (io.EOF)
		}
		c.fail(err)
		return c.opError("read", err)
	}
	return nil
}
