package qp

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// Close closes the connection: pending and later Reads and Writes fail with
// an error matching net.ErrClosed, the peer sees a disconnect, and every
// resource is freed. It first waits for what was sent to be acknowledged,
// for up to 2 s (a peer that stopped answering costs that long). It is
// idempotent. When a Lease or reservation is held,
// its memory stays valid and the resources are freed at Release or Commit.
func (c *Conn) Close() error {
	c.end(net.ErrClosed, evClose)
	for {
		if c.holds.any() {
			signal(c.heldNotify) // for another Close waiting on it
			return nil
		}
		// A Lease or Reserve that had found data or room when Close
		// came, and takes its hold now, keeps the teardown waiting
		// until Release or Commit: return then, as if it had come first.
		select {
		case <-c.torndown:
			return nil
		case <-c.heldNotify:
		}
	}
}

// fail ends the connection with err (the first error wins). It may run on
// the reactor goroutine, so the teardown runs on its own.
func (c *Conn) fail(err error) { c.end(err, evFail) }

// end moves the connection's life by evFail or evClose (life.endWith);
// the call that published the terminal error closes done, wakes every
// waiter and starts the teardown.
func (c *Conn) end(err error, ev lifeEvent) {
	if !c.life.endWith(err, ev) {
		return
	}
	close(c.done)
	c.wakeAll()
	go c.teardown()
}

// onPeerClosed records a disconnect by the peer: writes fail; reads drain
// what arrived, then return io.EOF. What arrived includes completions not
// yet polled, so reads wait for the flush of the QP (onQPDown), which our
// answer to the disconnect causes; should it not come, the grace timer
// stands in for it (life.go).
func (c *Conn) onPeerClosed() {
	if _, ok := c.life.move(evDisconnected); ok {
		c.wakeAll()
	}
}

// onQPDown records that the QP went to the error state (flushed work
// requests, which come after every other completion of the QP); if no
// event explains it in time, the grace timer takes it as a close by the
// peer (life.go).
func (c *Conn) onQPDown() {
	if _, ok := c.life.move(evFlushed); ok {
		c.wakeAll()
	}
}

// eventLoop handles the rdma_cm events of an established (or accepting)
// connection until the channel is closed.
func (c *Conn) eventLoop() {
	defer close(c.evDone)
	for {
		ev, err := c.ec.next()
		if err != nil {
			if !c.life.ended() { // not our teardown, which closes the file
				c.fail(fmt.Errorf("rdma: reading the connection's rdma_cm events: %w", err))
			}
			return
		}
		switch ev.typ {
		case verbs.EventEstablished:
			// A server: ESTABLISHED is the one event before Accept. The
			// client's first control message tells what it takes
			// (features.go); the buffer is advertised before Accept.
			c.onEstablished()
			k, err := c.awaitPeer(nil, firstMessageWait)
			if err == nil {
				err = c.advertiseFirst(k)
			}
			if err != nil && err != errQPDown { // a peer gone: Read says so
				c.fail(err)
				continue
			}
			if c.onEstablish != nil {
				c.onEstablish(c)
			}
		case verbs.EventDisconnected:
			if c.res != nil && deviceRecentlyGone(c.res.device) {
				c.fail(ErrDeviceRemoved) // see removal.go
				continue
			}
			// Answer the peer's disconnect at once, which completes it
			// on the peer's side and flushes the QP (onPeerClosed).
			c.disconnect()
			c.onPeerClosed()
		case verbs.EventTimewaitExit:
		case verbs.EventDeviceRemoval:
			if c.res != nil {
				deviceGone(c.res.device)
			}
			c.fail(ErrDeviceRemoved)
		default:
			c.fail(connectError("connection", ev.name, ev.status))
		}
	}
}

// disconnect moves the QP to the error state, which flushes its work
// requests, and disconnects the id: rdma_disconnect does both for a QP
// attached to the id, shutdownQP the first for a client's own (ownqp.go).
func (c *Conn) disconnect() {
	if c.res != nil {
		c.res.shutdownQP()
	}
	c.t.Disconnect(c.id)
}

// teardown disconnects and frees everything in reverse order of creation:
// the connection leaves its CQ (its completions are handled no more), the
// event loop ends, readers and writers leave (they were woken), then QP,
// memory and PD under rmu, wmu and smu; then, those let go, the QP's room
// on the CQ (which takes the CQ's lock: see the lock order in conn.go),
// the id and its event channel.
func (c *Conn) teardown() {
	defer close(c.torndown)
	if c.onTeardown != nil {
		defer c.onTeardown(c)
	}
	stopKeepalives(c) // a tick under way finds the connection closing
	err := c.life.err()
	if err == net.ErrClosed {
		c.linger()
	}
	// Disconnect, unless the peer has (we answered its DISCONNECTED) or
	// the device is gone: on a removed device it can do nothing for a
	// remote peer, and a peer on the same device would see our
	// DISCONNECTED before its own DEVICE_REMOVAL and take the removal for
	// a close.
	if k := c.life.load().link(); (k == linkUp || k == linkFlushed) && !errors.Is(err, ErrDeviceRemoved) {
		c.disconnect()
	}
	if c.member != nil {
		// The handler is called no more; the QP's room on the CQ is
		// given back once the QP is destroyed, below.
		c.member.Leave()
	}
	if c.acquired {
		defer releaseReactor() // after the member's release
	}
	if c.ec != nil {
		c.ec.shut() // ends the event loop
		if c.evStarted.Load() {
			<-c.evDone
		}
	}
	c.rmu.Lock()
	c.wmu.Lock()
	c.smu.Lock()
	c.regWG.Wait() // registrations and closes without rmu or wmu (staging.go)
	c.dropPrepared()
	if c.res != nil {
		c.res.destroy()
	}
	c.smu.Unlock()
	c.wmu.Unlock()
	c.rmu.Unlock()
	c.life.stopGrace() // the link's events matter no more
	// The QP's room on the CQ, then the id: librdmacm closes a removed
	// device's context once no id is on it (ReleaseDeadDevices, here or
	// in another connection's teardown), and the CQ must be gone by
	// then. No establish uses the id now: one that takes smu after the
	// section above finds the life ended.
	if c.member != nil {
		c.member.Release()
	}
	if !c.id.IsNil() {
		c.t.DestroyID(c.id)
	}
	if c.ec != nil {
		c.ec.release()
	}
	if errors.Is(err, ErrDeviceRemoved) {
		c.t.ReleaseDeadDevices()
	}
}

// linger waits, for up to Options.CloseLinger, until every send WR posted before
// Close has completed. The disconnect moves the QP to the error state,
// which flushes the WRs not yet done: the tail of a Write that had
// returned would be lost. Most WRs are unsignaled, so linger first posts a
// signaled one after them, a keepalive, which a peer takes as nothing.
// Completions are still handled (handleClosing) until the CQ leaves the
// reactor.
func (c *Conn) linger() {
	if c.res == nil {
		return
	}
	var timeout <-chan time.Time
	var target uint32
	marked := false
	for {
		if c.life.load().link() != linkUp {
			return // not established, or nothing more will complete successfully
		}
		c.smu.Lock()
		if !marked && !c.writesPending() {
			c.smu.Unlock()
			return // nothing outstanding but idle keepalives, which may be flushed
		}
		if !marked && c.sqFree() > 0 {
			if err := c.postCmdLocked(cmd{opcode: opKeepalive}, true); err != nil {
				c.smu.Unlock()
				return
			}
			marked, target = true, c.sqPosted.Load()
		}
		c.smu.Unlock()
		if marked && int32(c.sqDone.Load()-target) >= 0 {
			return
		}
		if timeout == nil {
			t := time.NewTimer(c.opts.CloseLinger)
			defer t.Stop()
			timeout = t.C
		}
		in := c.member.Inline()
		in.Park() // the CQ is armed, or the reactor polls it
		expired := false
		select {
		case <-c.ctlNotify:
		case <-timeout:
			expired = true
		}
		in.Unpark()
		if expired {
			return
		}
	}
}
