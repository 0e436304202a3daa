package server

import (
	"strconv"
	"sync/atomic"
)

// Transactions: MULTI, EXEC, DISCARD, WATCH and UNWATCH, as valkey 8.0's
// multi.c.
//
// Queuing. After MULTI, conn.exec checks each request as if it were to
// run it (its name, arity, NOAUTH, the no_multi flag, a cluster's
// routing), replies QUEUED and keeps a copy of its arguments (the reader's
// buffer is reused). An error there marks the transaction (dirtyExec) and
// EXEC replies EXECABORT without running anything. EXEC, DISCARD and QUIT
// run at once.
//
// Atomicity. There is no lock over the keyspace: a command locks the
// shard of each key it touches, one at a time. So EXEC, before it runs
// anything, takes the locks of every shard that its commands and the
// watched keys can touch: the shards of their keys (the command table's
// key positions), or every shard when a queued command has no keys
// (FLUSHALL, KEYS, DBSIZE, INFO, SELECT, PING...), in every database. It
// holds them until the last command has replied, so no other client's
// command on those shards runs in between, while commands on the other
// shards go on. While EXEC runs, the commands' own lock calls (shard.lock)
// do nothing and check that EXEC holds the shard. A server-wide lock taken
// by every command would do it too, but would make every command of every
// connection write to one shared word: the cost the shards are there to
// avoid, paid on the hot path for the sake of the rare transaction.
//
// Lock order: Cluster.slotMu[slot] (for reading, on a cluster's node),
// then Server.dbMu for reading, then shards by database and index. EXEC
// takes its shards in that order and other commands hold one shard (MOVE
// and SWAPDB two, of one index, in database order) while they wait for
// another: no cycle. dbMu, held for reading, keeps the databases from
// changing while EXEC runs: the databases a queued SELECT, MOVE or SWAPDB
// names (its row's dbArgs) are made when it is queued.
//
// WATCH. Each shard keeps the connections that watch its keys
// (shard.watched). Every change that valkey signals (signalModifiedKey:
// a write that changed something, a key deleted on expiry) calls touch
// under the shard's lock, which marks the watchers (dirtyCAS); FLUSHDB,
// FLUSHALL and SWAPDB call touchAll. EXEC reads the mark, and whether a
// watched key has expired since WATCH, with the watched keys' shards
// locked, so no change comes between that check and the commands.

// txState is a connection's transaction: its own goroutine or event loop
// reads and writes it, but for dirtyCAS and unwatched, which other
// connections set under a watched key's shard lock.
type txState struct {
	multi     bool     // between MULTI and EXEC or DISCARD
	dirtyExec bool     // an error while queuing: EXEC replies EXECABORT
	queue     []queued // the commands to run
	arena     []byte   // their arguments' bytes

	watching []watchedKey
	// dirtyCAS: a watched key changed; EXEC replies nil.
	dirtyCAS atomic.Bool
	// unwatched: dirtyCAS was set by a change of one key, after which
	// valkey drops the client from every key's watchers: touch skips it.
	unwatched atomic.Bool

	running bool            // inside EXEC: the shards below are locked
	held    [numShards]bool // the shard indexes locked, in every database
	locked  []*shard        // the shard locks EXEC holds, in order
	keys    [][]byte        // scratch for the keys of the queue
}

type queued struct {
	cmd  *command
	args [][]byte
}

// watcher is a connection watching a key, as the key's shard records it.
type watcher struct {
	c *conn
	// expired: the key had expired (and was still there) at WATCH. Read
	// and written under the shard's lock.
	expired bool
}

// watchedKey is a key a connection watches, as the connection records it.
type watchedKey struct {
	ks  *keyspace
	key string
	w   *watcher
}

const (
	msgExecAbort = "EXECABORT Transaction discarded because of previous errors."
	msgNoMulti   = "ERR Command not allowed inside a transaction"
)

// runsInMulti reports whether cmd runs at once after MULTI rather than
// being queued (valkey's processCommand: EXEC, DISCARD, QUIT, RESET; MULTI
// and WATCH are no_multi).
func runsInMulti(cmd *command) bool {
	return cmd.name == "exec" || cmd.name == "discard" || cmd.name == "quit" || cmd.name == "reset"
}

// reject replies msg to a request that cannot run (unknown, wrong arity,
// NOAUTH, not allowed in MULTI, routed elsewhere), as valkey's
// rejectCommand: inside MULTI it marks the transaction, and an EXEC so
// rejected ends it.
func (c *conn) reject(cmd *command, msg string) {
	if c.tx.multi {
		c.tx.dirtyExec = true
		c.tx.clearQueue()
	}
	if cmd != nil && cmd.name == "exec" {
		c.discard()
		if len(msg) > 4 && msg[:4] == "ERR " {
			msg = msg[4:]
		}
		c.addError("EXECABORT Transaction discarded because of: " + msg)
		return
	}
	c.addError(msg)
}

// enqueue queues cmd inside MULTI, after the checks a cluster's node makes
// of each command.
func (c *conn) enqueue(cmd *command, args [][]byte) {
	if c.srv.cluster != nil {
		if msg := c.routeError(cmd, args); msg != "" {
			c.reject(cmd, msg)
			return
		}
	} else if cmd.dbArgs[0] != 0 {
		// EXEC cannot make a database (see dbMu): make those named now.
		last := int(cmd.dbArgs[1])
		if last < 0 { // counted from the end, as key positions (COPY's DB comes anywhere)
			last += len(args)
		}
		for i := int(cmd.dbArgs[0]); i <= last && i < len(args); i++ {
			if n, ok := parseInt(args[i]); ok && n >= 0 && n < int64(len(c.srv.dbs)) {
				c.srv.db(int(n))
			}
		}
	}
	c.out = append(c.out, "+QUEUED\r\n"...)
	if c.tx.dirtyCAS.Load() || c.tx.dirtyExec {
		return // EXEC will run nothing: no need to keep it, as valkey
	}
	q := queued{cmd: cmd, args: make([][]byte, len(args))}
	for i, a := range args {
		start := len(c.tx.arena)
		c.tx.arena = append(c.tx.arena, a...)
		// Full slice expressions: a later append never writes into an
		// argument. A grown arena leaves the earlier ones where they were.
		q.args[i] = c.tx.arena[start:len(c.tx.arena):len(c.tx.arena)]
	}
	c.tx.queue = append(c.tx.queue, q)
}

// routeError is the error a cluster's node answers to cmd's keys, "" if
// it serves them; the same checks as runRouted, for a command queued.
func (c *conn) routeError(cmd *command, args [][]byte) string {
	c.keyBuf = cmd.keys.appendKeys(c.keyBuf[:0], args)
	slot, ok := keysSlot(c.keyBuf)
	switch {
	case !ok:
		return msgCrossSlot
	case slot < 0:
		return ""
	}
	cl := c.srv.cluster.cl
	cl.slotMu[slot].RLock()
	defer cl.slotMu[slot].RUnlock()
	return c.redirect(slot, c.keyBuf, c.asking)
}

func (t *txState) clearQueue() {
	clear(t.queue) // drop the references to the arena
	t.queue = t.queue[:0]
	if cap(t.arena) > keepOut {
		t.arena = nil
	}
	t.arena = t.arena[:0]
}

// discard ends the transaction, as valkey's discardTransaction.
func (c *conn) discard() {
	c.tx.clearQueue()
	c.tx.multi, c.tx.dirtyExec = false, false
	c.unwatchAll()
}

func cmdMulti(c *conn, _ [][]byte) {
	c.tx.multi = true
	c.addOK()
}

func cmdDiscard(c *conn, _ [][]byte) {
	if !c.tx.multi {
		c.addError("ERR DISCARD without MULTI")
		return
	}
	c.discard()
	c.addOK()
}

// EXEC: see the top of the file.
func cmdExec(c *conn, _ [][]byte) {
	t := &c.tx
	switch {
	case !t.multi:
		c.addError("ERR EXEC without MULTI")
		return
	case t.dirtyExec:
		c.discard()
		c.addError(msgExecAbort)
		return
	case t.dirtyCAS.Load(): // final: nothing unsets it but this connection
		c.discard()
		c.addNullArray()
		return
	}
	t.keys = t.keys[:0]
	defer func() { clear(t.keys) }() // slices of the arena
	all := false
	for _, q := range t.queue {
		all = all || q.cmd.keys.none || q.cmd.anyKey || q.cmd.keys.readsUnknownKeys()
		t.keys = q.cmd.keys.appendKeys(t.keys, q.args)
	}
	if n := c.srv.cluster; n != nil {
		// The whole transaction is routed as one command, as valkey's
		// getNodeByQuery does for EXEC.
		asking := c.asking
		c.asking = false
		slot, ok := keysSlot(t.keys)
		if !ok {
			c.discard()
			c.addError(msgCrossSlot)
			return
		}
		if slot >= 0 {
			n.cl.slotMu[slot].RLock()
			defer n.cl.slotMu[slot].RUnlock()
			if msg := c.redirect(slot, t.keys, asking); msg != "" {
				c.discard()
				c.addError(msg)
				return
			}
		}
	}
	c.lockTx(all)
	defer c.unlockTx()
	// From here on, lock calls do nothing: EXEC holds the shards of the
	// queued and the watched keys.
	t.running = true
	if t.dirtyCAS.Load() || c.watchedExpired() {
		c.discard()
		c.addNullArray()
		return
	}
	c.unwatchAll() // before the commands run: their own changes do not count
	queue := t.queue
	c.addArray(len(queue))
	for _, q := range queue {
		if c.trk.on && q.cmd.flags&fReadonly != 0 {
			c.remember(q.cmd, q.args)
		}
		q.cmd.run(c, q.args)
	}
	c.discard()
}

// lockTx takes the locks EXEC holds: of the shards of the queued keys and
// the watched ones, or of every shard (all), in every database.
func (c *conn) lockTx(all bool) {
	t := &c.tx
	seed := c.srv.seed
	for i := range t.held {
		t.held[i] = all
	}
	if !all {
		for _, k := range t.keys {
			t.held[shardIndex(seed, k)] = true
		}
		for _, w := range t.watching {
			t.held[shardIndex(seed, []byte(w.key))] = true
		}
	}
	c.srv.dbMu.RLock()
	for i := range c.srv.dbs {
		ks := c.srv.dbs[i].Load()
		if ks == nil {
			continue
		}
		for j := range ks.shards {
			if t.held[j] {
				s := &ks.shards[j]
				s.mu.Lock()
				t.locked = append(t.locked, s)
			}
		}
	}
}

func (c *conn) unlockTx() {
	t := &c.tx
	t.running = false
	for i := len(t.locked) - 1; i >= 0; i-- {
		t.locked[i].mu.Unlock()
		t.locked[i] = nil
	}
	t.locked = t.locked[:0]
	c.srv.dbMu.RUnlock()
}

// mustHold panics if a command inside EXEC reaches a shard EXEC has not
// locked: a row of the command table whose keys are wrong.
func (t *txState) mustHold(s *shard) {
	if !t.held[s.idx] {
		panic("server: a command inside EXEC reached shard " + strconv.Itoa(int(s.idx)) + ", which EXEC has not locked: its keys in the command table are wrong")
	}
}

// database returns database i for a command of c. Inside EXEC it is there
// already (dbArgs), and making it would wait for EXEC's own hold of dbMu.
func (c *conn) database(i int) *keyspace {
	if c.tx.running {
		if ks := c.srv.dbs[i].Load(); ks != nil {
			return ks
		}
		panic("server: a command inside EXEC reached database " + strconv.Itoa(i) + ", which its row's dbArgs do not name")
	}
	return c.srv.db(i)
}

// watchedExpired reports whether a watched key that was live at WATCH has
// expired since, as valkey's isWatchedKeyExpired. EXEC holds the shards.
func (c *conn) watchedExpired() bool {
	now := nowMS()
	for _, wk := range c.tx.watching {
		if wk.w.expired {
			continue
		}
		s := wk.ks.shard([]byte(wk.key))
		if e := s.m[wk.key]; e != nil && e.expired(now) {
			return true
		}
	}
	return false
}

// WATCH key [key ...]
func cmdWatch(c *conn, args [][]byte) {
	if c.tx.dirtyCAS.Load() { // no point, as valkey says
		c.addOK()
		return
	}
	now := nowMS()
next:
	for _, key := range args[1:] {
		for _, wk := range c.tx.watching {
			if wk.ks == c.db && wk.key == string(key) {
				continue next
			}
		}
		k := string(key)
		s := c.db.shard(key)
		s.lock(c)
		e := s.m[k]
		w := &watcher{c: c, expired: e != nil && e.expired(now)}
		if s.watched == nil {
			s.watched = map[string][]*watcher{}
		}
		s.watched[k] = append(s.watched[k], w)
		s.unlock(c)
		c.tx.watching = append(c.tx.watching, watchedKey{ks: c.db, key: k, w: w})
	}
	c.addOK()
}

func cmdUnwatch(c *conn, _ [][]byte) {
	c.unwatchAll()
	c.addOK()
}

// unwatchAll forgets the watched keys and their changes.
func (c *conn) unwatchAll() {
	for i, wk := range c.tx.watching {
		s := wk.ks.shard([]byte(wk.key))
		s.lock(c)
		ws := s.watched[wk.key]
		for j, w := range ws {
			if w == wk.w {
				ws = append(ws[:j], ws[j+1:]...)
				break
			}
		}
		switch {
		case len(ws) > 0:
			s.watched[wk.key] = ws
		case len(s.watched) == 1:
			s.watched = nil // touch looks no further
		default:
			delete(s.watched, wk.key)
		}
		s.unlock(c)
		c.tx.watching[i] = watchedKey{}
	}
	c.tx.watching = c.tx.watching[:0]
	c.tx.dirtyCAS.Store(false)
	c.tx.unwatched.Store(false)
}

// endTx drops a closed connection's transaction and watches.
func (c *conn) endTx() {
	c.tx.clearQueue()
	c.tx.multi = false
	c.unwatchAll()
}

// touch tells the connections watching key that it changed, as valkey's
// touchWatchedKey; called after every change valkey signals. The caller
// holds s.mu for writing.
func (s *shard) touch(key []byte) {
	if s.blocked != nil {
		s.signalReady(key) // blocking.go
	}
	if s.watched != nil {
		s.touchKey(string(key))
	}
	if s.trk != nil && s.trk.active.Load() > 0 {
		s.trk.invalidate(string(key), s.cur)
	}
}

// touchIf is touch when changed.
func (s *shard) touchIf(changed bool, key []byte) {
	if changed {
		s.touch(key)
	}
}

func (s *shard) touchKey(key string) {
	if s.trk != nil && s.trk.active.Load() > 0 {
		s.trk.invalidate(key, s.cur)
	}
	if s.watched == nil {
		return
	}
	present := s.m[key] != nil
	for _, w := range s.watched[key] {
		if w.c.tx.unwatched.Load() {
			continue
		}
		if w.expired {
			if !present {
				// Deleted after it expired: no change. Clear the mark.
				w.expired = false
				continue
			}
			// valkey 8.0's touchWatchedKey leaves the loop here, and
			// the watchers after this one are not told.
			break
		}
		w.c.tx.dirtyCAS.Store(true)
		w.c.tx.unwatched.Store(true)
	}
}

// touchAll tells the connections watching keys of s that FLUSHDB or
// FLUSHALL empties it (other nil) or that SWAPDB swaps it with other (the
// shard of the same index in the other database), as valkey's
// touchAllWatchedKeysInDb: a key counts if it is in either, expired or
// not. Called before the change; the caller holds both shards' locks.
func (s *shard) touchAll(other *shard) {
	if s.watched == nil {
		return
	}
	now := nowMS()
	for k, ws := range s.watched {
		inS := s.m[k] != nil
		var theirs *entry
		if other != nil {
			theirs = other.m[k]
		}
		if !inS && theirs == nil {
			continue
		}
		theirsExpired := theirs != nil && theirs.expired(now)
		for _, w := range ws {
			if w.c.tx.unwatched.Load() {
				continue
			}
			switch {
			case w.expired && theirs == nil:
				w.expired = false // deleted after it expired: no change
				continue
			case w.expired && theirsExpired:
				continue // expired before, expired after
			case !w.expired && !inS && theirsExpired:
				w.expired = true // none before, an expired one after
				continue
			}
			w.c.tx.dirtyCAS.Store(true)
		}
	}
}
