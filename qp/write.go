package qp

import (
	"errors"
	"os"

	"github.com/seed54442f1a/rdmapool/internal/stages"
)

// errQPDown: the QP went to the error state, its send queue will not drain.
var errQPDown = errors.New("rdma: the queue pair is down")

// Write writes p, splitting it across the peer's re-arms as needed.
func (c *Conn) Write(p []byte) (int, error) {
	if stages.Enabled {
		defer stages.Write.Since(stages.Now())
	}
	c.wmu.Lock()
	defer c.unlockW()
	written := 0
	for len(p) > 0 {
		buf, err := c.reserve(len(p))
		if err != nil {
			return written, err
		}
		n := copy(buf, p)
		if err := c.commit(n); err != nil {
			return written, err
		}
		written += n
		p = p[n:]
	}
	return written, nil
}

// Reserve waits until the peer has room and returns registered send memory
// for up to n bytes (less if the peer's buffer or the staging memory has
// less room). Fill it, then
// call Commit with the number of bytes filled; until then the slice is valid
// and other writes wait.
func (c *Conn) Reserve(n int) ([]byte, error) {
	if n < 0 {
		return nil, errors.New("rdma: Reserve of a negative length")
	}
	c.wmu.Lock()
	b, err := c.reserve(n)
	if err != nil {
		c.unlockW()
		return nil, err
	}
	c.reserved = len(b)
	c.holds.take(holdReserve)
	signal(c.heldNotify) // a Close that looked before now returns (Close)
	return b, nil
}

// Commit sends the first n bytes of the memory from Reserve (0 sends
// nothing) and ends the reservation.
func (c *Conn) Commit(n int) error {
	if !c.holds.drop(holdReserve) {
		return errors.New("rdma: Commit without a Reserve")
	}
	defer c.unlockW()
	if n == 0 {
		return nil
	}
	if n < 0 || n > c.reserved {
		return errors.New("rdma: Commit of more than was reserved")
	}
	return c.commit(n)
}

// reserve waits for the peer's buffer to have room and the send queue to
// have space (wmu held).
func (c *Conn) reserve(n int) ([]byte, error) {
	sp := c.newSpin(&c.txPassed)
	defer sp.release()
	for {
		if err := c.writeErr(); err != nil {
			return nil, err
		}
		if c.writeDL.Expired() { // even with room, as in net.TCPConn
			return nil, c.opError("write", os.ErrDeadlineExceeded)
		}
		if g := c.armGen.Load(); g != c.txGen {
			lk := c.armLenKey.Load()
			c.res.tx.Arm(c.armAddr.Load(), uint32(lk>>32), uint32(lk))
			c.txGen = g
		}
		if err := c.takePrepared(); err != nil {
			c.fail(err)
			return nil, c.opError("write", err)
		}
		tx := c.res.tx
		down := c.life.load().qpDown()
		if !down && tx.Armed() && tx.Available() > 0 && c.sqFree() > c.ctlReserve() {
			b, ok := tx.Reserve(n, c.sqDone.Load())
			if !ok || len(b) < n {
				c.prepareStaging() // if it asked for memory (staging.go)
			}
			if ok {
				return b, nil
			}
			// The staging memory is full of writes in flight: wait
			// for a completion, as for send-queue space; or it has
			// none yet: wait for its registration.
		}
		if !down && c.spinPoll(&sp) {
			continue
		}
		if !c.park(c.txNotify, c.writeDL.Wait()) {
			return nil, c.opError("write", os.ErrDeadlineExceeded)
		}
	}
}

func (c *Conn) writeErr() error {
	if err := c.terminal(); err != nil {
		return c.opError("write", err)
	}
	if c.life.load().peerClosed() {
		return c.opError("write", ErrPeerGone)
	}
	return nil
}

// commit posts an RDMA_WRITE_WITH_IMM of n reserved bytes, imm = n.
func (c *Conn) commit(n int) error {
	c.smu.Lock()
	if c.life.ended() {
		// Close's linger waits for the WRs posted before its marker,
		// under smu: a write posted after it would be flushed by the
		// disconnect, and the Write would have reported success.
		c.smu.Unlock()
		return c.opError("write", c.endErr())
	}
	// Under smu the next sequence number is this write's.
	seq := c.sqPosted.Load()
	err := c.postLocked(seq, sendWR{Write: c.res.tx.Commit(n, seq), opcode: opcodeWrite, imm: htonl(uint32(n))})
	c.smu.Unlock()
	if err != nil {
		c.fail(err)
		return c.opError("write", err)
	}
	return nil
}
