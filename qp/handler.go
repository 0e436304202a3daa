package qp

import (
	"fmt"

	"github.com/seed54442f1a/rdmapool/cq"
	"github.com/seed54442f1a/rdmapool/internal/stages"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// completions is a connection's cq.Handler. The CQ's lock, which the
// reactor and any member that polls the CQ inline hold while they hand out
// its completions, serialises their handling.
type completions struct {
	c *Conn
	// reader: the connection's reader polls the CQ inline now (set and
	// cleared by pollInline, under the CQ's lock).
	reader bool
}

// HandleCompletions handles the connection's completions. Its own waiter's
// inline poll (byOwner) leaves the receives for its next poll; anyone
// else's re-posts them at once. Data found by its own reader's poll is not
// signalled to that reader, which looks at it next.
func (h *completions) HandleCompletions(wcs []cq.Completion, byOwner bool) {
	h.c.handleCompletions(wcs, !byOwner, byOwner && h.reader)
}
func (h *completions) HandleCQError(err error) { h.c.fail(err) }

// pollInline polls the connection's CQ from the calling goroutine, unless
// the reactor or another member is polling it, handing out every
// connection's completions it finds; it reports whether some were this
// connection's. Waiting readers and writers call it before they park, which
// saves the reactor's wake-up of the goroutine on the latency path.
func (c *Conn) pollInline() bool { return c.pollInlineBy(false) }

// pollInlineBy is pollInline, by the connection's reader if reader: the
// data it finds is not signalled on rxNotify, which would only make the
// reader's next park return at once for data it has already seen.
func (c *Conn) pollInlineBy(reader bool) bool {
	m := c.member
	if !m.TryLock() {
		return false
	}
	defer m.Unlock()
	if c.life.ended() || !c.postPendingRecvs() {
		return false
	}
	var t0 int64
	if stages.Enabled {
		t0 = stages.Now()
	}
	c.h.reader = reader
	own := m.PollLocked()
	c.h.reader = false
	if stages.Enabled {
		if own == 0 {
			stages.PollMiss.Since(t0)
		} else {
			t1 := stages.Now()
			stages.PollHit.Record(t1 - t0)
			c.marks.Polled(t1)
		}
	}
	return own > 0
}

// postPendingRecvs re-posts the receives that the last inline handling
// consumed (the CQ's lock held); it reports false if that failed, which
// fails the connection.
func (c *Conn) postPendingRecvs() bool {
	if len(c.repost) == 0 {
		return true
	}
	err := c.res.postRecvs(c.repost, c.recvWRID)
	c.repost = c.repost[:0]
	if err != nil {
		c.fail(err)
		return false
	}
	return true
}

// handleCompletions accounts send completions, applies received control
// messages and data, and collects the consumed receives in c.repost, to be
// re-posted as one chain. The reactor re-posts them at once (repostNow). An
// inline poll leaves them for its next poll (postPendingRecvs), so that the
// ibv_post_recv is not between a message's arrival and its reader: with
// 1023 receives posted, at most one batch (inlineBatch) waits, and a
// peer that found none posted would retry (rnr_retry 7, without end). It
// runs with the CQ's lock held, on the reactor goroutine or in a member's
// pollInline, and never blocks. With readerPolls the connection's reader
// is the poller: it needs no signal for the data found.
func (c *Conn) handleCompletions(wcs []cq.Completion, repostNow, readerPolls bool) {
	if c.life.ended() {
		c.handleClosing(wcs)
		return
	}
	sent, received, heard := false, false, false
	for i := range wcs {
		wc := &wcs[i]
		local := wc.Local()
		if wc.Status() == verbs.WCWRFlushErr {
			// The QP went to the error state. Why is told by the rdma_cm
			// event that comes with it (DISCONNECTED, DEVICE_REMOVAL) or
			// by an error completion before this one; until then readers
			// and writers wait. What was received stays readable.
			c.onQPDown()
			return
		}
		if wc.Status() != verbs.WCSuccess {
			op := "receive"
			if wc.Send() {
				op = "send"
			} else if wc.Status() == verbs.WCLocLenErr {
				// A SEND that did not fit the receive's cmdSize bytes:
				// the peer broke the protocol, as with a shorter one
				// (handleCmd).
				c.fail(&ProtocolError{What: fmt.Sprintf("control message longer than %d bytes", cmdSize)})
				return
			}
			err := &CompletionError{Op: op, Status: wc.Status(), Text: c.t.WCStatusStr(wc.Status()), Vendor: wc.VendorErr()}
			if err.Is(ErrPeerGone) {
				c.peerGone()
			}
			c.fail(err)
			return
		}
		if wc.Send() {
			c.sendCompleted(local)
			sent = true
			continue
		}
		heard = true
		slot := local % uint32(c.sqDepth())
		switch wc.Opcode() {
		case verbs.WCRecv:
			if err := c.handleCmd(slot, wc.ByteLen()); err != nil {
				c.fail(err)
				return
			}
			sent = true // an arm may let the writer go on
		case verbs.WCRecvRDMAWithImm:
			if !c.rxArmed.Load() {
				c.fail(&ProtocolError{What: "data written before this side's RegisterXferMemory"})
				return
			}
			if wc.Flags()&verbs.WCWithImm == 0 {
				c.fail(&ProtocolError{What: "RDMA write without immediate data"})
				return
			}
			if err := c.rxRing.Wrote(ntohl(wc.ImmData())); err != nil {
				c.fail(&ProtocolError{What: "immediate byte count overruns the receive buffer: " + err.Error()})
				return
			}
			received = true
			if stages.Enabled {
				stages.Found(stages.Now())
			}
		default:
			c.fail(&ProtocolError{What: fmt.Sprintf("unexpected receive completion opcode %d", wc.Opcode())})
			return
		}
		c.repost = append(c.repost, slot)
	}
	// An inline poll leaves its receives for its next poll, unless they
	// are more than an eighth of the queue (never, at the default depth):
	// with a small QueueDepth one batch may take most of the receives
	// posted, and a peer that finds none waits out rdma_cm's RNR timer
	// (655 ms) before it sends again.
	if (repostNow || len(c.repost) > c.sqDepth()/8) && !c.postPendingRecvs() {
		return
	}
	if heard {
		c.heardFromPeer()
	}
	if received && !readerPolls {
		signal(c.rxNotify)
	}
	if sent {
		signal(c.txNotify)
		signal(c.ctlNotify)
	}
}

// handleClosing handles the completions of a closing connection: received
// data and control messages are dropped, and send completions are counted
// for linger.
func (c *Conn) handleClosing(wcs []cq.Completion) {
	sent := false
	for i := range wcs {
		wc := &wcs[i]
		if wc.Status() == verbs.WCWRFlushErr {
			c.onQPDown()
			break
		}
		if wc.Status() != verbs.WCSuccess || !wc.Send() {
			continue
		}
		c.sendCompleted(wc.Local())
		sent = true
	}
	if sent {
		signal(c.ctlNotify)
	}
}

// sendCompleted records the successful completion of the send WR whose
// wr_id carried local: every WR up to and including it has completed.
func (c *Conn) sendCompleted(local uint32) {
	done := c.sqDone.Load()
	c.sqDone.Store(done + (local-done)&seqMask + 1)
}

// handleCmd applies a control message received in command slot slot.
func (c *Conn) handleCmd(slot, byteLen uint32) error {
	if byteLen != cmdSize {
		return &ProtocolError{What: fmt.Sprintf("control message of %d bytes, want %d", byteLen, cmdSize)}
	}
	m := decodeCmd(c.res.cmdSlot(slot))
	switch m.opcode {
	case opRegisterXferMemory:
		if m.length == 0 || int(m.length) > c.opts.MaxPeerBufferSize {
			return &ProtocolError{What: fmt.Sprintf("RegisterXferMemory of %d bytes, outside (0, %d]", m.length, c.opts.MaxPeerBufferSize)}
		}
		c.armAddr.Store(m.addr)
		c.armLenKey.Store(uint64(m.length)<<32 | uint64(m.rkey))
		c.armGen.Add(1)
	case opKeepalive, opGetServerFeature, opSetClientFeature:
	default:
		return &ProtocolError{What: fmt.Sprintf("unknown control opcode %d", m.opcode)}
	}
	return c.heard(m)
}
