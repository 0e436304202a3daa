package qp

import (
	"errors"
	"io"
	"os"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/stages"
	"github.com/seed54442f1a/rdmapool/mr"
)

// Read reads received data into p.
func (c *Conn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.unlockR()
	if stages.Enabled {
		c.marks.Begin()
		defer c.marks.End()
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
	c.holds.take(holdLease)
	signal(c.heldNotify) // a Close that looked before now returns (Close)
	return b, nil
}

// Release ends a Lease, consuming its first n bytes (the rest is returned
// again by the next Read or Lease).
func (c *Conn) Release(n int) error {
	if !c.holds.drop(holdLease) {
		return errors.New("rdma: Release without a Lease")
	}
	defer c.unlockR()
	if n < 0 || n > c.leased {
		return errors.New("rdma: Release of more than was leased")
	}
	return c.consume(n)
}

// readable waits until there is data to read, the peer has closed (io.EOF
// once the data is drained), the connection fails, or the deadline passes.
//
// It spins before it parks (spinPoll), for SpinWait, or twice that when its
// last wait ended without a park (rxSpun): where the replies come while the
// reader polls, one that outlasts a spin often comes within a second one,
// and a park costs a wake-up by the reactor (docs/design.md, "Inline
// polling"). Its own poll does not signal rxNotify for the data it finds,
// and a signal left from before this wait (data handed out by another
// poller while the reader was not parked) is taken before it spins, so a
// park returns only for what came during this wait.
func (c *Conn) readable() ([]byte, error) {
	sp := c.newSpin(&c.rxPassed)
	sp.reader = true
	if c.rxSpun {
		sp.w.Wait *= 2
	}
	defer sp.release()
	parked, fresh := false, false
	for {
		if err := c.terminal(); err != nil {
			return nil, c.opError("read", err)
		}
		// As in net.TCPConn: a passed deadline fails a read even when
		// data is waiting.
		if c.readDL.Expired() {
			return nil, c.opError("read", os.ErrDeadlineExceeded)
		}
		if ch := c.rxRearm; ch != nil {
			// A re-arm registers its buffer without rmu (registerRx);
			// no data can come before it is done: wait outside rmu.
			dl := c.readDL.Wait()
			c.rmu.Unlock()
			select {
			case <-ch:
			case <-c.done:
			case <-dl:
			}
			c.rmu.Lock()
			parked = true
			continue
		}
		// After the peer's close, data it wrote before may still wait in
		// the CQ: io.EOF only once the flush of the QP (our answer to the
		// disconnect) shows that everything before it was handled. Look
		// at that before the ring: the handling records data (Wrote)
		// before the flush (onQPDown), so a reader that sees the flush
		// finds the data before it in the ring, even when both were
		// handled after its last look.
		drained := c.life.load().drained()
		if h := c.opts.readLooks; h != nil {
			if f := h.Load(); f != nil {
				(*f)(c)
			}
		}
		if c.res != nil {
			if b := c.rxRing.Readable(); len(b) > 0 {
				c.rxSpun = !parked
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
		if !fresh {
			// Take a signal left from before, then look again: what
			// comes from now on signals anew.
			fresh = true
			select {
			case <-c.rxNotify:
			default:
			}
			continue
		}
		if !c.life.load().qpDown() && c.spinPoll(&sp) {
			continue
		}
		parked = true
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
	if s := c.life.load(); s.peerClosed() || s.ended() {
		c.rxRing.Reset()
		return nil
	}
	c.rearm()
	if c.life.ended() {
		// The teardown ran while the re-arm registered without rmu
		// (registerRx), and freed the buffer: the next Read says so.
		return nil
	}
	if err := c.sendCmd(c.registerCmd(), true, true); err != nil {
		if err == errQPDown {
			return nil // the peer is gone: the next Read says so (io.EOF)
		}
		c.fail(err)
		return c.opError("read", err)
	}
	return nil
}

// The receive buffer starts at rxStart (or RecvBufferSize, if smaller) and
// changes size at a re-arm, the one point where the peer cannot be writing
// into it. A buffer filled by at most rxGrowWrites writes (the peer had
// more to send than fits: a large value, however slow the link) or within
// rxGrowFill of its advertisement is followed by one rxGrowth times
// larger, up to RecvBufferSize; one filled by more writes over more than
// rxShrinkFill (small messages, seldom), by one rxGrowth times smaller,
// down to rxStart.
const (
	rxStart      = 64 << 10
	rxGrowth     = 4
	rxGrowWrites = 8
	rxGrowFill   = 20 * time.Millisecond
	rxShrinkFill = time.Second

	// txStagingMin is the send staging memory a connection starts with
	// and shrinks back to when idle (mr.SendRing).
	txStagingMin = 64 << 10
)

// rearm empties the fully consumed receive buffer (rmu held), in a region
// of another size if the last fill says so, before it is advertised anew.
// The new region is registered with rmu let go (registerRx). The old one
// can go at once: the peer filled it, so every write into it has completed
// (its completion told us of the bytes we read), and it writes again only
// where our next RegisterXferMemory points; it is closed once rmu is let
// go (unlockR). A failed registration keeps the old region.
func (c *Conn) rearm() {
	now := time.Now()
	fill := now.Sub(c.rxArmedAt)
	c.rxArmedAt = now
	_, writes := c.rxRing.Written()
	cur := c.res.rx.Len()
	size := cur
	switch {
	case !c.feat.resizes.Load():
		// The peer did not negotiate a change of length (features.go):
		// every Valkey peer. valkey-server 8.1-9.1 crash on one.
	case writes <= rxGrowWrites || fill < rxGrowFill:
		size = min(cur*rxGrowth, max(c.opts.RecvBufferSize, cur))
	case fill > rxShrinkFill:
		size = max(cur/rxGrowth, min(rxStart, cur))
	}
	if size != cur {
		if r := c.registerRx(size); r != nil {
			c.rxOld = c.res.rx
			c.res.rx = r
			c.rxRing.ResetTo(r)
			return
		}
	}
	c.rxRing.Reset()
}

// replaceRx puts an empty receive buffer of size bytes in place of the
// current one, which it frees: the peer writes only where the next
// RegisterXferMemory points (advertiseFirst, before any reader). A failed
// registration keeps the old one.
func (c *Conn) replaceRx(size int) error {
	c.registering(size)
	r, err := mr.Register(c.res.mpd, size, mr.LocalWrite|mr.RemoteWrite)
	if err != nil {
		return err
	}
	old := c.res.rx
	c.res.rx = r
	c.rxRing.ResetTo(r)
	old.Close()
	return nil
}
