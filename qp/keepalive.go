package qp

import (
	"sync"
	"time"
)

// Keepalives. Both ends send them (libvalkey's client does not; valkey-server
// sends one every 3 s and takes ours as nothing): a side that only reads
// learns of a peer gone without a disconnect (power loss, a cut link) when a
// keepalive's retries run out. A side that heard from its peer since its
// last tick knows the peer is there and skips its own, so two idle ends of
// ours send one keepalive per interval between them, and a client of
// valkey-server, which sends its own, none.
//
// The connections of a process with the same interval tick together, on one
// timer (keepaliveWheel): the keepalives of a thousand idle connections go
// out in one burst per interval, and their peer's reactor takes them in one
// wake-up, on a few shared CQs, instead of a thousand wake-ups spread over
// the interval, each of which took a CPU from the connections with work.
// A keepalive sent while no write waits is unsignaled: it costs the sender
// no completion.

// keepaliveWheel is the connections with one keepalive interval and the
// timer that ticks for them.
type keepaliveWheel struct {
	interval time.Duration
	mu       sync.Mutex
	conns    map[*Conn]struct{}
	timer    *time.Timer // running while conns is not empty
	running  bool
	batch    []*Conn // the tick's copy of conns (only the tick touches it)
}

var wheels struct {
	sync.Mutex
	m map[time.Duration]*keepaliveWheel
}

// startKeepalives puts an established connection on the wheel of its
// interval.
func startKeepalives(c *Conn) {
	wheels.Lock()
	w := wheels.m[c.opts.KeepaliveInterval]
	if w == nil {
		if wheels.m == nil {
			wheels.m = make(map[time.Duration]*keepaliveWheel)
		}
		w = &keepaliveWheel{interval: c.opts.KeepaliveInterval, conns: make(map[*Conn]struct{})}
		w.timer = time.AfterFunc(time.Hour, w.tick)
		w.timer.Stop()
		wheels.m[w.interval] = w
	}
	wheels.Unlock()
	c.keepalives.Store(w)
	w.mu.Lock()
	w.conns[c] = struct{}{}
	if !w.running {
		w.running = true
		w.timer.Reset(w.interval)
	}
	w.mu.Unlock()
	if c.is(stClosing) { // the teardown may have looked before the Store
		stopKeepalives(c)
	}
}

// stopKeepalives takes c off its wheel, if it is on one. A tick already
// under way may still reach c, which then finds it closing.
func stopKeepalives(c *Conn) {
	w := c.keepalives.Load()
	if w == nil {
		return
	}
	w.mu.Lock()
	delete(w.conns, c)
	w.mu.Unlock()
}

// tick sends the keepalives of the wheel's connections, then sets the timer
// for the next tick while any are left.
func (w *keepaliveWheel) tick() {
	w.mu.Lock()
	for c := range w.conns {
		w.batch = append(w.batch, c)
	}
	w.mu.Unlock()
	for _, c := range w.batch {
		c.keepaliveTick()
	}
	clear(w.batch)
	w.batch = w.batch[:0]
	w.mu.Lock()
	if w.running = len(w.conns) > 0; w.running {
		w.timer.Reset(w.interval)
	}
	w.mu.Unlock()
}

// keepaliveTick sends a keepalive unless the peer was heard from since the
// last tick and no write waits for a completion. While writes wait, the
// keepalive is signaled: its completion tells of theirs, and the staging
// can then shrink.
func (c *Conn) keepaliveTick() {
	if c.is(stClosing) || c.is(stPeerClosed) {
		stopKeepalives(c)
		return
	}
	busy := c.writesPending()
	if !c.heard.Swap(false) || busy {
		if err := c.sendCmd(cmd{opcode: opKeepalive}, busy, false); err != nil {
			c.fail(err)
			return
		}
	}
	c.shrinkStaging()
}

// shrinkStaging gives the send staging memory back to its base size when no
// write came since the last keepalive and every write has completed (while
// writes wait for a completion a keepalive is sent, signaled, and tells of
// them by the next tick). A writer, or a held reservation, holds wmu: then
// it is not idle.
func (c *Conn) shrinkStaging() {
	if !c.wmu.TryLock() {
		return
	}
	defer c.wmu.Unlock()
	if !c.is(stClosing) { // teardown frees res under wmu, after setting stClosing
		c.res.tx.Shrink(c.sqDone.Load())
	}
}
