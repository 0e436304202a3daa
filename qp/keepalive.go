package qp

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Keepalives. A side that only reads learns of a peer gone without a
// disconnect (power loss, a cut link) only when something it sends runs out
// of retries, so every interval (3 s, as valkey-server's) something is sent
// to each peer that was not heard from. libvalkey's client sends nothing;
// valkey-server sends a keepalive on every connection and takes ours as
// nothing.
//
// What goes silent that way is a host or the path to it, not one queue pair
// of a host still there (a process that dies, or closes, has its kernel
// disconnect its connections). So the connections of a process with the
// same interval tick together, on one timer (keepaliveWheel), grouped by
// their peer's address (peer): a group that heard from its peer since the
// last tick sends nothing; one that did not sends one keepalive, on one of
// its connections. Once a connection to the peer fails as the peer gone
// (its retries ran out), every connection to it sends one, at each tick
// until the peer is heard from again, so each learns its fate. Idle
// connections then cost one keepalive per peer and interval, however many
// there are: a thousand connections between two of our processes send one,
// not a thousand. A connection whose writes wait for a completion sends a
// signaled one regardless: its completion tells of theirs, and the staging
// can then shrink. A keepalive sent while no write waits is unsignaled, and
// costs its sender no completion.
//
// Detecting a dead peer takes up to two intervals and two rounds of
// retries (about 20 s at rdma_cm's defaults): one for the group's
// keepalive, one for the rest of its connections'.

// keepaliveWheel is the connections with one keepalive interval, grouped by
// peer, and the timer that ticks for them.
type keepaliveWheel struct {
	interval time.Duration
	mu       sync.Mutex
	conns    map[*Conn]*peer
	peers    map[netip.Addr]*peer
	timer    *time.Timer // running while conns is not empty
	running  bool
	// The tick's own: its number and its copy of conns.
	ticks uint64
	batch []member
}

type member struct {
	c *Conn
	p *peer
}

// peer is what a wheel's connections to one address share.
type peer struct {
	addr    netip.Addr
	conns   int         // on the wheel (its mu)
	heard   atomic.Bool // a connection to it received something since the last tick
	suspect atomic.Bool // a connection to it failed as the peer gone
	// The tick's own: the tick that last looked at the peer, whether the
	// peer was heard from then, and whether a keepalive went to it since.
	tick   uint64
	quiet  bool
	probed bool
}

// keepalivesSent counts the keepalives ticks posted (for the tests).
var keepalivesSent atomic.Uint64

var wheels struct {
	sync.Mutex
	m map[time.Duration]*keepaliveWheel
}

// startKeepalives puts an established connection on the wheel of its
// interval, in the group of its peer's address.
func startKeepalives(c *Conn) {
	wheels.Lock()
	w := wheels.m[c.opts.KeepaliveInterval]
	if w == nil {
		if wheels.m == nil {
			wheels.m = make(map[time.Duration]*keepaliveWheel)
		}
		w = &keepaliveWheel{interval: c.opts.KeepaliveInterval, conns: make(map[*Conn]*peer), peers: make(map[netip.Addr]*peer)}
		w.timer = time.AfterFunc(time.Hour, w.tick)
		w.timer.Stop()
		wheels.m[w.interval] = w
	}
	wheels.Unlock()
	addr := c.remote.Addr()
	w.mu.Lock()
	p := w.peers[addr]
	if p == nil {
		p = &peer{addr: addr}
		w.peers[addr] = p
	}
	p.conns++
	w.conns[c] = p
	if !w.running {
		w.running = true
		w.timer.Reset(w.interval)
	}
	w.mu.Unlock()
	c.peer.Store(p)
	c.keepalives.Store(w)
	if c.life.ended() { // the teardown may have looked before the Store
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
	if p, ok := w.conns[c]; ok {
		delete(w.conns, c)
		if p.conns--; p.conns == 0 {
			delete(w.peers, p.addr)
		}
	}
	w.mu.Unlock()
}

// heardFromPeer notes that the connection received something (the
// handler, for each batch with a receive).
func (c *Conn) heardFromPeer() {
	if p := c.peer.Load(); p != nil && !p.heard.Load() {
		p.heard.Store(true)
	}
}

// peerGone notes that the connection failed as its peer gone: the other
// connections to the peer send keepalives from the next tick on.
func (c *Conn) peerGone() {
	if p := c.peer.Load(); p != nil {
		p.suspect.Store(true)
	}
}

// tick sends the keepalives the wheel's connections owe, then sets the
// timer for the next tick while any connection is left.
func (w *keepaliveWheel) tick() {
	w.ticks++
	w.mu.Lock()
	for c, p := range w.conns {
		w.batch = append(w.batch, member{c, p})
	}
	w.mu.Unlock()
	for _, m := range w.batch {
		send := m.p.owes(w.ticks)
		if m.c.keepaliveTick(send) && send {
			m.p.probed = true
		}
	}
	clear(w.batch)
	w.batch = w.batch[:0]
	w.mu.Lock()
	if w.running = len(w.conns) > 0; w.running {
		w.timer.Reset(w.interval)
	}
	w.mu.Unlock()
}

// owes reports whether a connection to p owes a keepalive at tick (the
// tick's own): every one while p is suspect, else the first to ask in a
// tick after which p was not heard from, until one sent it (probed).
// Hearing from p clears suspect.
func (p *peer) owes(tick uint64) bool {
	if p.tick != tick {
		p.tick, p.probed = tick, false
		p.quiet = !p.heard.Swap(false)
		if !p.quiet {
			p.suspect.Store(false)
		}
	}
	return p.suspect.Load() || (p.quiet && !p.probed)
}

// keepaliveTick sends a keepalive if send, or if writes wait for a
// completion (then signaled), and shrinks the staging of a connection idle
// since the last tick. It reports whether the connection is open.
func (c *Conn) keepaliveTick(send bool) bool {
	if s := c.life.load(); s.ended() || s.peerClosed() {
		stopKeepalives(c)
		return false
	}
	busy := c.writesPending()
	if send || busy {
		if err := c.sendCmd(cmd{opcode: opKeepalive}, busy, false); err != nil {
			c.fail(err)
			return false
		}
		keepalivesSent.Add(1)
	}
	c.shrinkStaging()
	return true
}
