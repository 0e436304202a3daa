package qp

import (
	"encoding/binary"
	"errors"

	"github.com/seed54442f1a/rdmapool/cq"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
	"github.com/seed54442f1a/rdmapool/mr"
)

const (
	seqMask        = cq.LocalMask // a send WR's sequence number, in its wr_id
	signalInterval = 128          // signal at least every so many send WRs
	ctlReserve     = 64           // send-queue entries that only control SENDs may use (a quarter of a smaller queue)
)

const (
	opcodeWrite = verbs.WRRDMAWriteWithImm
	opcodeSend  = verbs.WRSend
)

// sqFree is the free send-queue entries. A writer calls it without smu,
// while a control SEND (a keepalive, from a timer) may post and its
// completion may come at once. So sqPosted is advanced before a WR is
// posted, and sqDone is loaded here first: then done <= posted. The other
// way round, a writer could see the completion of a WR posted after its
// look at sqPosted, compute a wrapped posted-done, and wait for a
// completion that had already come: a stall until the next keepalive,
// seen in the VM under 50 clients.
func (c *Conn) sqFree() int {
	done := c.sqDone.Load()
	return c.sqDepth() - max(int(int32(c.sqPosted.Load()-done)), 0)
}

// sqDepth is the send queue's depth, Options.QueueDepth (the default for a
// Conn made without options, as by a test).
func (c *Conn) sqDepth() int {
	if c.opts.QueueDepth == 0 {
		return defaultQueueDepth
	}
	return c.opts.QueueDepth
}

// ctlReserve is the send-queue entries that writes leave to control SENDs.
func (c *Conn) ctlReserve() int { return min(ctlReserve, c.sqDepth()/4) }

// sendWR is one send work request: its opcode and immediate data, and the
// memory it sends, which for an RDMA write the send staging (mr.SendRing)
// describes, and for a control SEND is a command slot (Remote and RKey 0).
// Signal asks for a signaled completion; postLocked may add one.
type sendWR struct {
	mr.Write
	opcode uint32
	imm    uint32
}

// postLocked posts one send WR, whose sequence number seq is sqPosted, which
// the caller has loaded (smu held). It signals when asked (the send
// staging memory asks when half of it is in flight; every control SEND but
// an idle keepalive asks), every signalInterval WRs, and whenever half the
// queue is outstanding, so a full queue always has a signaled WR in flight.
// A command slot needs no signal of its own to be reused: the slot of WR
// seq serves again for WR seq+d, which sqFree lets be posted only once WR
// seq has completed.
func (c *Conn) postLocked(seq uint32, wr sendWR) error {
	asked := wr.Signal
	wr.Signal = asked || seq%signalInterval == 0 || int(seq-c.sqDone.Load()) >= c.sqDepth()/2
	c.sqPosted.Store(seq + 1) // before the WR can complete (see sqFree)
	if err := c.res.postSend(c.member.SendWRID(seq&seqMask), &wr); err != nil {
		c.sqPosted.Store(seq)
		return err
	}
	if wr.opcode != opcodeSend || asked { // all but an idle keepalive (keepaliveTick)
		c.sqBusy.Store(seq + 1)
	}
	return nil
}

// writesPending reports whether a WR other than an idle keepalive has not
// yet completed (or its completion has not been handled).
func (c *Conn) writesPending() bool { return int32(c.sqBusy.Load()-c.sqDone.Load()) > 0 }

// sendCmd sends a control message, signaled if signal. With wait it waits
// for send-queue space, unless the QP is down (errQPDown: then nothing will
// free any); without (on the reactor goroutine) it fails when there is none.
func (c *Conn) sendCmd(m cmd, signal, wait bool) error {
	for {
		c.smu.Lock()
		if c.life.ended() {
			c.smu.Unlock()
			return c.endErr()
		}
		if wait && c.life.load().qpDown() {
			c.smu.Unlock()
			return errQPDown
		}
		if c.sqFree() > 0 {
			err := c.postCmdLocked(m, signal)
			c.smu.Unlock()
			return err
		}
		c.smu.Unlock()
		if !wait {
			return errors.New("rdma: send queue full")
		}
		c.park(c.ctlNotify, nil)
	}
}

// postCmdLocked posts control message m as a SEND, signaled if signal (smu
// held, a free send-queue entry checked).
func (c *Conn) postCmdLocked(m cmd, signal bool) error {
	d := uint32(c.sqDepth())
	seq := c.sqPosted.Load()
	slot := d + seq%d
	m.encode(c.res.cmdSlot(slot))
	return c.postLocked(seq, sendWR{opcode: opcodeSend,
		Write: mr.Write{Local: c.res.cmd.Addr() + uint64(slot*cmdSize), Len: cmdSize, LKey: c.res.cmd.LKey(), Signal: signal}})
}

func htonl(v uint32) uint32 {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return binary.NativeEndian.Uint32(b[:])
}

func ntohl(v uint32) uint32 { return htonl(v) }
