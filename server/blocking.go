package server

import (
	"errors"
	"math"
	"net"
	"slices"
	"sync"
	"time"
)

// Blocking commands (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
// BZPOPMAX, BZMPOP; XREAD BLOCK can use the same), as valkey 8.0's
// blocked.c: a command that finds nothing to pop parks its client on its
// keys, and a later write to one of them runs the command again for it.
//
// Blocking. The command checks its keys and registers a blocker on them
// (shard.blocked[key], a FIFO per key) with all their shards locked, so no
// write comes between the check and the registration. The client's own
// goroutine or event loop then runs nothing more: the requests that
// arrive meanwhile are read into its reader and wait there, as valkey
// queues a blocked client's input, and run once it is unblocked. Nothing
// is held while it waits: no lock, no goroutine of the event loops.
//
// Waking. A write to a key calls shard.touch, which, when clients are
// blocked on the key, notes it as ready in the writing connection (s.cur)
// (valkey's signalKeyAsReady). When that connection's command ends (a
// single command, or EXEC), and its locks are released, it serves the
// ready keys in the order they became ready (valkey's
// handleClientsBlockedOnKeys): for each, the clients blocked on it when
// its turn comes, in the order they blocked, each if the key then holds a
// value of the type it waits for. To serve one, it locks the shards of all
// the blocked command's keys, checks it still waits on the key, claims it
// (waiting to serving) and runs the blocked command again on a stand-in
// conn (the client's database, protocol and id; its replies go to a
// buffer), with those shards held as EXEC holds them: the re-run is atomic
// with respect to every other command. Keys its re-run makes ready (BLMOVE's push) are
// served in the same round. Once the round is over, the woken clients are
// kicked as pub/sub's mailboxes are (pubsub.go: a read deadline in the
// past, or gnet's Wake), and each, on its own goroutine or loop, appends
// the reply to its output, leaves the other keys' queues and runs the
// requests that queued up.
//
// Another client's command may come between a write and the serving of
// the clients it made ready (valkey runs none there): it is as if it came
// just after the write.
//
// Timeouts are timers (time.AfterFunc) that claim a waiting blocker with
// the null reply; CLIENT UNBLOCK claims it with that or an UNBLOCKED error;
// a closed connection (CLIENT KILL closes one) claims it with nothing and
// leaves every queue. Inside
// EXEC a blocking command does not block: it replies as if it timed out.
//
// Transitions: waiting -> serving (by a writer that holds the blocker's
// shards) -> done, or back to waiting, at the end of its keys' queues, if
// the re-run found nothing after all (valkey's command blocks anew);
// waiting -> done (its timer, CLIENT UNBLOCK); waiting -> gone (its
// connection closed, CLIENT KILL's too). Only a waiting blocker is
// claimed, under its mu, so exactly one of them ends it.
//
// For other commands: a script's commands must not block (mayBlock false,
// as inside EXEC), and the keys they make ready are served when the
// script's command ends, as EXEC's; XREAD BLOCK parses its own timeout (in
// milliseconds) and calls block with kindStream and its arguments with
// "$" rewritten, XREADGROUP sets anyChange on the blocker block returns.
//
// Ownership. A blocker's command, arguments and keys are fixed when it is
// made. Its state, reply and kicked are under its mu; the queues under the
// shards' locks. Only the blocked connection's goroutine or loop reads
// conn.blk and removes the blocker from the queues after it is claimed;
// conn.blocking publishes it to CLIENT UNBLOCK.
//
// Lock order: shard locks (by index), then a blocker's mu, then the loop
// engine's mu (its kick). A blocker's mu is never held while a shard lock
// is taken.

// blockState is a blocker's state; see the top of the file.
type blockState uint8

const (
	bWaiting blockState = iota // in the queues, to be served, timed out, unblocked
	bServing                   // a writer runs its command for it now
	bDone                      // its reply is ready: its connection takes it
	bGone                      // its connection closed
)

// blocker is a client blocked on keys.
type blocker struct {
	c       *conn // the blocked connection: for kick, and nothing else
	cmd     *command
	args    [][]byte // the blocked command's, copied
	db      *keyspace
	dbIndex int
	proto   int
	id      int64
	kind    kind     // the type of value that wakes it
	keys    [][]byte // the keys it waits on, once each
	shards  []*shard // the shards of all its command's keys, by index
	// anyChange: woken by any change of a key, even its deletion (for
	// XREADGROUP, valkey's unblock_on_nokey).
	anyChange bool
	timer     *time.Timer

	mu      sync.Mutex
	state   blockState
	reply   []byte
	kicked  bool // the connection was kicked, or must not be any more
	expired bool // the timeout came while it was being served
}

// readyKey is a key that a command made ready for the clients blocked on it.
type readyKey struct {
	s   *shard
	key string
}

const msgUnblocked = "UNBLOCKED client unblocked via CLIENT UNBLOCK"

// mayBlock reports whether a blocking command of c may block: not inside
// EXEC (valkey's deny_blocking), where it replies as if it timed out. The
// stand-in conn of a woken client may: block tells its server to leave
// the client waiting.
func (c *conn) mayBlock() bool { return c.served != nil || !c.tx.running }

// lockKeys locks the shards of keys in c's database for writing, each
// once, by index (the order of EXEC and lockPair), and returns the
// function that unlocks them.
func (c *conn) lockKeys(keys [][]byte) (unlock func()) { return c.lockShards(keys, true) }

// lockShards is lockKeys, for reading when write is false.
func (c *conn) lockShards(keys [][]byte, write bool) (unlock func()) {
	shards := shardsOf(c.db, keys)
	for _, s := range shards {
		if write {
			s.lock(c)
		} else {
			s.rlock(c)
		}
	}
	return func() {
		for i := len(shards) - 1; i >= 0; i-- {
			if write {
				shards[i].unlock(c)
			} else {
				shards[i].runlock(c)
			}
		}
	}
}

// lockAllShards locks every shard of c's database, for a command that
// reads keys it learns only as it runs (SORT's BY and GET).
func lockAllShards(c *conn) (unlock func()) {
	for i := range c.db.shards {
		c.db.shards[i].lock(c)
	}
	return func() {
		for i := len(c.db.shards) - 1; i >= 0; i-- {
			c.db.shards[i].unlock(c)
		}
	}
}

// shardsOf returns the shards of keys in ks, each once, by index.
func shardsOf(ks *keyspace, keys [][]byte) []*shard {
	var seen [numShards]bool
	for _, k := range keys {
		seen[shardIndex(ks.seed, k)] = true
	}
	var shards []*shard
	for i, ok := range seen {
		if ok {
			shards = append(shards, &ks.shards[i])
		}
	}
	return shards
}

// parseTimeout parses a blocking command's timeout in seconds, as valkey's
// getTimeoutFromObjectOrReply: a long double, rounded up to milliseconds;
// 0 is forever. It replies with the error and returns false.
func parseTimeout(c *conn, b []byte) (time.Duration, bool) {
	v, ok := parseLongDouble(b)
	if !ok {
		c.addError("ERR timeout is not a float or out of range")
		return 0, false
	}
	ms := math.Inf(v.inf)
	if v.inf == 0 {
		f, _ := v.f.Float64()
		ms = math.Ceil(f * 1000)
	}
	switch {
	case ms > math.MaxInt64 || ms > float64(math.MaxInt64-nowMS()):
		c.addError("ERR timeout is out of range")
		return 0, false
	case ms < 0:
		c.addError("ERR timeout is negative")
		return 0, false
	case ms > float64(math.MaxInt64/int64(time.Millisecond)):
		return 0, true // beyond a Duration: as good as forever
	}
	return time.Duration(ms) * time.Millisecond, true
}

// block parks c on keys, for values of kind k, for timeout (0: forever):
// the command that calls it found nothing and replied nothing, and holds
// the shards of all its keys. args are what runs again once a key is
// ready: a command whose arguments mean something else later (XREAD's
// "$") passes them rewritten. It returns the blocker, on which the caller
// may still set anyChange while it holds the shards; on a woken client's
// stand-in, nil: the client waits on where it is.
func (c *conn) block(k kind, args, keys [][]byte, timeout time.Duration) *blocker {
	if c.served != nil {
		c.rerun = true
		return nil
	}
	w := &blocker{c: c, cmd: c.lookup(args[0]), db: c.db, dbIndex: c.dbIndex, proto: c.proto, id: c.id, kind: k}
	n := 0
	for _, a := range args {
		n += len(a)
	}
	arena := make([]byte, 0, n)
	w.args = make([][]byte, len(args))
	for i, a := range args {
		arena = append(arena, a...)
		w.args[i] = arena[len(arena)-len(a) : len(arena) : len(arena)]
	}
	for _, key := range keys {
		if !slices.ContainsFunc(w.keys, func(k []byte) bool { return string(k) == string(key) }) {
			w.keys = append(w.keys, []byte(string(key)))
		}
	}
	w.shards = shardsOf(w.db, w.cmd.keys.appendKeys(nil, w.args))
	for _, key := range w.keys {
		s := c.db.shard(key)
		if s.blocked == nil {
			s.blocked = map[string][]*blocker{}
		}
		s.blocked[string(key)] = append(s.blocked[string(key)], w)
	}
	c.blk = w
	c.blocking.Store(w)
	c.srv.blockedClients.Add(1)
	if timeout > 0 {
		w.timer = time.AfterFunc(timeout, w.expire)
	}
	return w
}

// nullArray is the reply of a blocking command that timed out: *-1, or
// RESP3's null.
func nullArray(proto int) []byte {
	if proto == 3 {
		return []byte("_\r\n")
	}
	return []byte("*-1\r\n")
}

// expire is w's timer: a waiting w times out.
func (w *blocker) expire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch w.state {
	case bWaiting:
		w.finishLocked(nullArray(w.proto))
	case bServing:
		w.expired = true // its server ends it if it finds nothing
	}
}

// unblock is CLIENT UNBLOCK: a waiting w is ended with the timeout's reply,
// or with asError the UNBLOCKED error. It reports whether w was waiting.
func (w *blocker) unblock(asError bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != bWaiting {
		return false
	}
	if asError {
		w.finishLocked([]byte("-" + msgUnblocked + "\r\n"))
	} else {
		w.finishLocked(nullArray(w.proto))
	}
	return true
}

// finishLocked gives w its reply and kicks its connection; w.mu held.
func (w *blocker) finishLocked(reply []byte) {
	w.state, w.reply = bDone, reply
	w.kickLocked()
}

func (w *blocker) kickLocked() {
	if !w.kicked {
		w.kicked = true
		w.c.kick()
	}
}

// wake kicks the connection of a blocker served.
func (w *blocker) wake() {
	w.mu.Lock()
	w.kickLocked()
	w.mu.Unlock()
}

// signalReady notes key as ready for the clients blocked on it, in the
// connection whose command writes it; s.mu held (touch).
func (s *shard) signalReady(key []byte) {
	if len(s.blocked[string(key)]) == 0 || s.cur == nil {
		return
	}
	s.cur.noteReady(readyKey{s, string(key)})
}

// signalSwapped notes as ready every key of s that clients are blocked on
// and that holds a value in s or in other: after SWAPDB has swapped the
// keys of s and other, one that holds a value now may serve them (valkey's
// scanDatabaseForReadyKeys), and one that held a value before is gone, or
// changed, for XREADGROUP (scanDatabaseForDeletedKeys). Before FLUSHDB and
// FLUSHALL empty s, with other nil: its keys are gone. s.mu (and
// other's) held.
func (s *shard) signalSwapped(other *shard) {
	for key := range s.blocked {
		if s.m[key] != nil || other != nil && other.m[key] != nil {
			s.signalReady([]byte(key))
		}
	}
}

// noteReady adds rk to the keys c's command made ready, once.
func (c *conn) noteReady(rk readyKey) {
	if !slices.Contains(c.ready, rk) {
		c.ready = append(c.ready, rk)
	}
}

// mayServe reports whether w, blocked on key, is still in its queue and
// waiting, and whether the key's value can serve it; s.mu held.
func (s *shard) mayServe(key string, w *blocker) bool {
	if !slices.Contains(s.blocked[key], w) {
		return false
	}
	w.mu.Lock()
	waiting := w.state == bWaiting
	w.mu.Unlock()
	if !waiting {
		return false
	}
	e := s.get([]byte(key))
	return e != nil && e.kind == w.kind || w.anyChange
}

// removeWaiter takes w out of key's queue; s.mu held.
func (s *shard) removeWaiter(key string, w *blocker) {
	q := s.blocked[key]
	i := slices.Index(q, w)
	if i < 0 {
		return
	}
	q = slices.Delete(q, i, i+1)
	switch {
	case len(q) > 0:
		s.blocked[key] = q
	case len(s.blocked) == 1:
		s.blocked = nil // touch looks no further
	default:
		delete(s.blocked, key)
	}
}

// requeue moves w to the end of the queues of all its keys, as valkey's
// command run again that blocks anew; the shards of its keys held.
func (w *blocker) requeue() {
	for _, key := range w.keys {
		s := w.db.shard(key)
		s.removeWaiter(string(key), w)
		if s.blocked == nil {
			s.blocked = map[string][]*blocker{}
		}
		s.blocked[string(key)] = append(s.blocked[string(key)], w)
	}
}

// serveReady serves the clients blocked on the keys c's command made
// ready, then kicks those it served. c holds no lock.
func (c *conn) serveReady() {
	var woken []*blocker
	for len(c.ready) > 0 {
		rk := c.ready[0]
		c.ready[0] = readyKey{}
		c.ready = c.ready[1:]
		woken = c.serveKey(rk, woken)
	}
	c.ready = nil
	for _, w := range woken {
		w.wake()
	}
}

// serveKey serves the clients blocked on rk, as valkey's
// handleClientsBlockedOnKey: those blocked when it begins, in the order
// they blocked, each if the key then holds a value of the type it waits
// for. It returns woken with those it served.
func (c *conn) serveKey(rk readyKey, woken []*blocker) []*blocker {
	rk.s.mu.Lock()
	queue := slices.Clone(rk.s.blocked[rk.key])
	rk.s.mu.Unlock()
	for _, w := range queue {
		woken = c.serveOne(rk, w, woken)
	}
	return woken
}

// serveOne runs the command of w, blocked on rk, again if the key's value
// can serve it, and returns woken with w if it was served. A command that
// finds nothing after all (XREADGROUP's, whose entries another consumer
// of its group took) blocks again, behind the others.
func (c *conn) serveOne(rk readyKey, w *blocker, woken []*blocker) []*blocker {
	// The shards of all its keys, rk.s among them, by index.
	held := w.shards
	for _, sh := range held {
		sh.mu.Lock()
	}
	if !rk.s.mayServe(rk.key, w) {
		unlockAll(held)
		return woken
	}
	w.mu.Lock()
	if w.state != bWaiting { // its timer, just now
		w.mu.Unlock()
		unlockAll(held)
		return woken
	}
	w.state = bServing
	w.mu.Unlock()

	p := w.standIn(held)
	w.cmd.run(p, w.args)
	if p.rerun {
		w.requeue()
	} else {
		rk.s.removeWaiter(rk.key, w)
	}
	unlockAll(held)
	if len(p.trk.held) > 0 {
		p.publishHeld() // tracking.go
	}
	for _, r := range p.ready {
		c.noteReady(r)
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case !p.rerun:
		w.state, w.reply = bDone, p.out
		woken = append(woken, w)
	case w.expired:
		// Nothing for it after all, and its time has passed.
		w.state, w.reply = bDone, nullArray(w.proto)
		woken = append(woken, w)
	default:
		w.state = bWaiting // nothing for it after all: it waits on
	}
	return woken
}

func unlockAll(shards []*shard) {
	for i := len(shards) - 1; i >= 0; i-- {
		shards[i].mu.Unlock()
	}
}

// standIn returns the conn that runs w's command again: w's database,
// protocol and id, its replies in its out, with held locked as EXEC holds
// its shards (shard.lock checks and skips them).
func (w *blocker) standIn(held []*shard) *conn {
	p := &conn{srv: w.c.srv, db: w.db, dbIndex: w.dbIndex, rd: &reader{}, id: w.id, proto: w.proto, authed: true, served: w}
	p.tx.running = true
	for _, s := range held {
		p.tx.held[s.idx] = true
	}
	return p
}

// blockDone reports whether c's blocker has its reply.
func (c *conn) blockDone() bool {
	w := c.blk
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.state == bDone
}

// unblocked ends c's block, once blockDone: its reply joins c's output
// and it leaves the queues. The requests that came meanwhile run next.
func (c *conn) unblocked() {
	w := c.blk
	w.mu.Lock()
	reply := w.reply
	w.reply = nil
	w.stopKicksLocked()
	w.mu.Unlock()
	c.out = append(c.out, reply...)
	c.dropBlock(w)
}

// stopKicksLocked: no more kicks for w's connection, and a kick's read
// deadline (netpoll) is lifted; w.mu held. A mailbox's kick that the
// lifted deadline hid is flushed before the next read anyway (flush).
func (w *blocker) stopKicksLocked() {
	if w.kicked && w.c.nc != nil {
		w.c.nc.SetReadDeadline(time.Time{})
	}
	w.kicked = true
}

// endBlock drops the block of a connection that has closed.
func (c *conn) endBlock() {
	w := c.blk
	if w == nil {
		return
	}
	w.mu.Lock()
	if w.state == bWaiting {
		w.state = bGone
	}
	w.kicked = true
	w.mu.Unlock()
	c.dropBlock(w)
}

// dropBlock takes w, claimed, out of the queues and c.
func (c *conn) dropBlock(w *blocker) {
	if w.timer != nil {
		w.timer.Stop()
	}
	for _, key := range w.keys {
		s := w.db.shard(key)
		s.mu.Lock()
		s.removeWaiter(string(key), w)
		s.mu.Unlock()
	}
	c.blk = nil
	c.blocking.Store(nil)
	c.srv.blockedClients.Add(-1)
}

// waitBlocked is serve's loop while c is blocked (a goroutine's
// connection): it writes what c has to write, reads the client's further
// requests into the reader without running them, and returns true once c
// is unblocked; false if the connection failed.
func (c *conn) waitBlocked() bool {
	for {
		if c.blockDone() {
			c.unblocked()
			return true
		}
		if c.flush() != nil {
			return false
		}
		err := c.rd.fill(c.nc)
		if c.rd.dropped > 0 {
			c.srv.dropped.Add(c.rd.dropped)
			c.rd.dropped = 0
		}
		var ne net.Error
		switch {
		case err == nil:
		case errors.As(err, &ne) && ne.Timeout():
			// A kick: the mailbox's (pubsub.go) or the blocker's.
			if !c.wasKicked(err) && !c.blockDone() {
				w := c.blk
				w.mu.Lock()
				if !w.kicked {
					c.nc.SetReadDeadline(time.Time{})
				}
				w.mu.Unlock()
			}
		default:
			return false
		}
	}
}

// CLIENT UNBLOCK id [TIMEOUT | ERROR]
func cmdClientUnblock(c *conn, args [][]byte) {
	if len(args) > 4 {
		c.addError("ERR unknown subcommand or wrong number of arguments for 'unblock'. Try CLIENT HELP.")
		return
	}
	asError := false
	if len(args) == 4 {
		switch {
		case eqFold(args[3], "timeout"):
		case eqFold(args[3], "error"):
			asError = true
		default:
			c.addError("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
			return
		}
	}
	id, ok := parseInt(args[2])
	if !ok {
		c.addError(msgNotInteger)
		return
	}
	var w *blocker
	c.srv.mu.Lock()
	for other := range c.srv.conns {
		if other.id == id {
			w = other.blocking.Load()
			break
		}
	}
	c.srv.mu.Unlock()
	if w != nil && w.unblock(asError) {
		c.addInt(1)
	} else {
		c.addInt(0)
	}
}
