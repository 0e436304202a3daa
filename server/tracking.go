package server

import (
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
)

// Client-side caching: CLIENT TRACKING, CACHING, TRACKINGINFO, GETREDIR,
// as valkey 8.0's tracking.c, in its default mode and BCAST.
//
// A tracking client's read-only command records its keys in the server's
// table (before it runs: a change that comes between the record and the
// read costs a spurious invalidation, never a missed one); every change
// valkey signals calls shard.touch, which, while any client tracks, takes
// the key out of the table and sends each client that had read it an
// invalidation: a RESP3 push `>2 invalidate [key]`, or, redirected to a
// RESP2 client subscribed to __redis__:invalidate, a message on that
// channel. It goes through the client's mailbox (pubsub.go), as a
// message does, after the reply of a command the client is running (see
// mailbox.inval). A client's own change to a key it tracks is told after
// the command's reply, as valkey's tracking_pending_keys. FLUSHDB and
// FLUSHALL send every tracking client a nil invalidation. A BCAST client
// is told of every change under its prefixes, collected and broadcast
// (broadcast) rather than recorded per read.
//
// Lock order: a shard's, tracking.mu, hub.mu, a mailbox's.

// tracking is a Server's tracking table.
type tracking struct {
	mu      sync.Mutex
	active  atomic.Int32 // tracking clients: touch looks only when > 0
	table   map[string]map[*conn]struct{}
	clients map[*conn]struct{}
	srv     *Server
	// BCAST: the clients by prefix, and the keys with a prefix changed
	// since the last broadcast, with the connection that changed each
	// (nil: expiry), for NOLOOP. pendingBcast: changed is not empty.
	prefixes     map[string]map[*conn]struct{}
	changed      map[string]map[string]*conn
	pendingBcast atomic.Bool
}

// trackState is a connection's tracking. on, optin, optout, noloop and
// redirect change under tracking.mu (other connections read them there);
// caching and pending are the connection's own.
type trackState struct {
	on, optin, optout, noloop, bcast bool
	prefixes                         []string // BCAST's ("" for every key)
	redirect                         int64
	// caching: CLIENT CACHING YES (OPTIN) or NO (OPTOUT) was given for
	// the next command.
	caching    bool
	pending    []*string // own changes, told after the reply; nil entry: a flush
	remembered bool      // this command's keys were recorded
	// held: keys under a BCAST prefix this command (a whole EXEC) changed,
	// published to tracking.changed when it ends (publishHeld), so that no
	// broadcast, which another connection may run at any time, splits a
	// command, as none can in valkey's one thread.
	held []string
}

const invalidateChannel = "__redis__:invalidate"

func newTracking(s *Server) *tracking {
	return &tracking{table: map[string]map[*conn]struct{}{}, clients: map[*conn]struct{}{}, srv: s,
		prefixes: map[string]map[*conn]struct{}{}, changed: map[string]map[string]*conn{}}
}

// remember records the keys of a read-only command of c, if c tracks
// them (valkey's trackingRememberKeys).
func (c *conn) remember(cmd *command, args [][]byte) {
	tr := &c.trk
	if !tr.on || tr.bcast || tr.optin && !tr.caching || tr.optout && tr.caching {
		return
	}
	c.keyBuf = cmd.keys.appendKeys(c.keyBuf[:0], args)
	if len(c.keyBuf) == 0 {
		return
	}
	t := c.srv.trk
	t.mu.Lock()
	for _, k := range c.keyBuf {
		set := t.table[string(k)]
		if set == nil {
			set = map[*conn]struct{}{}
			t.table[string(k)] = set
		}
		set[c] = struct{}{}
	}
	t.mu.Unlock()
}

// invalidate tells the clients that read key that it changed; cur is the
// connection whose command changed it (nil: expiry). The caller holds
// the key's shard lock.
func (t *tracking) invalidate(key string, cur *conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.prefixes) > 0 {
		if cur != nil {
			cur.trk.held = append(cur.trk.held, key) // cur's own goroutine
		} else {
			t.changedLocked(key, nil)
		}
	}
	set := t.table[key]
	if set == nil {
		return
	}
	delete(t.table, key)
	for c := range set {
		switch {
		case !c.trk.on:
		case c.trk.noloop && c == cur:
		case c == cur:
			c.trk.pending = append(c.trk.pending, &key)
		default:
			t.send(c, &key)
		}
	}
}

// changedLocked records key, changed by cur, under each BCAST prefix it
// has, for the next broadcast. t.mu held.
func (t *tracking) changedLocked(key string, cur *conn) {
	for p := range t.prefixes {
		if len(key) >= len(p) && key[:len(p)] == p {
			ch := t.changed[p]
			if ch == nil {
				ch = map[string]*conn{}
				t.changed[p] = ch
			}
			ch[key] = cur
			t.pendingBcast.Store(true)
		}
	}
}

// publishHeld ends c's command for BCAST: the keys it changed go to the
// next broadcast together.
func (c *conn) publishHeld() {
	t := c.srv.trk
	t.mu.Lock()
	for i, k := range c.trk.held {
		t.changedLocked(k, c)
		c.trk.held[i] = ""
	}
	t.mu.Unlock()
	c.trk.held = c.trk.held[:0]
}

// broadcast sends the BCAST clients the keys changed under their prefixes
// since the last broadcast, one push per prefix with the keys in order, as
// valkey's trackingBroadcastInvalidationMessages, which runs before the
// event loop sleeps. Ours runs when a connection has run the requests it
// had and writes its replies (flushWith), and after an expiry cycle.
func (t *tracking) broadcast() {
	if !t.pendingBcast.Load() {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pendingBcast.Store(false)
	for _, p := range slices.Sorted(maps.Keys(t.changed)) { // valkey's rax order
		ch := t.changed[p]
		keys := slices.Sorted(maps.Keys(ch))
		for c := range t.prefixes[p] {
			mine := keys
			if c.trk.noloop {
				mine = nil
				for _, k := range keys {
					if ch[k] != c {
						mine = append(mine, k)
					}
				}
			}
			if len(mine) > 0 {
				t.sendKeys(c, mine)
			}
		}
		delete(t.changed, p)
	}
}

// flushed tells every tracking client that every key changed (FLUSHDB,
// FLUSHALL), cur's own after its reply.
func (t *tracking) flushed(cur *conn) {
	if t.active.Load() == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.table)
	for c := range t.clients {
		if c == cur {
			c.trk.pending = append(c.trk.pending, nil)
			continue
		}
		t.send(c, nil)
	}
}

// send sends c's invalidation of key (nil: all) to c or its redirection.
// t.mu held.
func (t *tracking) send(c *conn, key *string) {
	if key == nil {
		t.sendKeys(c, nil)
	} else {
		t.sendKeys(c, []string{*key})
	}
}

// sendKeys is send of several keys (nil: all).
func (t *tracking) sendKeys(c *conn, keys []string) {
	target := c
	if c.trk.redirect != 0 {
		target = t.srv.connByID(c.trk.redirect)
		if target == nil {
			// valkey tells a RESP3 client its redirection is broken.
			c.post(func(b []byte, proto int) []byte {
				if proto != 3 {
					return b
				}
				b = appendPushLen(b, 3, 2)
				b = appendBulk(b, "tracking-redir-broken")
				return appendInt(b, int(c.trk.redirect))
			})
			return
		}
	}
	if target.mb == nil {
		return // a connection with no mailbox: neither RESP3 tracking nor subscribed
	}
	// A nil is in the tracking client's protocol, whatever the target's,
	// as valkey's (shared.null[c->resp]).
	// (Another goroutine's: c.proto is c's own, its mailbox has a copy.)
	c.mb.mu.Lock()
	nullProto := c.mb.proto
	c.mb.mu.Unlock()
	subscribed := false
	if target != c {
		h := t.srv.hub
		h.mu.RLock()
		_, subscribed = h.channels[invalidateChannel][target]
		h.mu.RUnlock()
	}
	target.post(func(b []byte, proto int) []byte {
		return appendInvalidate(b, proto, nullProto, subscribed, keys)
	})
}

// appendInvalidate is an invalidation: a push in RESP3, a message on
// __redis__:invalidate to a RESP2 subscriber of it, else nothing.
func appendInvalidate(b []byte, proto, nullProto int, subscribed bool, keys []string) []byte {
	switch {
	case proto == 3:
		b = appendPushLen(b, 3, 2)
		b = appendBulk(b, "invalidate")
	case subscribed:
		b = appendPushLen(b, 2, 3)
		b = appendBulk(b, "message")
		b = appendBulk(b, invalidateChannel)
	default:
		return b
	}
	if keys == nil {
		if nullProto == 3 {
			return append(b, "_\r\n"...)
		}
		return append(b, "$-1\r\n"...)
	}
	b = appendArrayLen(b, len(keys))
	for _, k := range keys {
		b = appendBulk(b, k)
	}
	return b
}

func appendArrayLen(b []byte, n int) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// afterCommand ends a command of a tracking client: its own invalidations
// go after the reply, and CLIENT CACHING's word is used up (but by a
// CLIENT command, or inside MULTI, as valkey's resetClient).
func (c *conn) afterCommand(cmd *command) {
	tr := &c.trk
	if len(tr.pending) > 0 {
		for i, key := range tr.pending {
			if tr.redirect == 0 {
				var keys []string
				if key != nil {
					keys = []string{*key}
				}
				c.out = appendInvalidate(c.out, c.proto, c.proto, false, keys)
			} else {
				t := c.srv.trk
				t.mu.Lock()
				t.send(c, key)
				t.mu.Unlock()
			}
			tr.pending[i] = nil
		}
		tr.pending = tr.pending[:0]
	}
	if !c.tx.multi && (cmd == nil || cmd.parent == nil || cmd.parent.name != "client") {
		tr.caching = false
	}
}

// connByID finds an open connection by its ID.
func (s *Server) connByID(id int64) *conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.id == id {
			return c
		}
	}
	return nil
}

// endTracking stops a closed connection's tracking.
func (c *conn) endTracking() {
	if c.trk.on {
		c.trackingOff()
	}
}

func (c *conn) trackingOff() {
	t := c.srv.trk
	t.mu.Lock()
	delete(t.clients, c)
	for k, set := range t.table {
		if _, ok := set[c]; ok {
			delete(set, c)
			if len(set) == 0 {
				delete(t.table, k)
			}
		}
	}
	for _, p := range c.trk.prefixes {
		delete(t.prefixes[p], c)
		if len(t.prefixes[p]) == 0 {
			delete(t.prefixes, p)
			delete(t.changed, p)
		}
	}
	c.trk.on, c.trk.optin, c.trk.optout, c.trk.noloop, c.trk.redirect = false, false, false, false, 0
	c.trk.bcast, c.trk.prefixes = false, nil
	t.mu.Unlock()
	t.active.Add(-1)
}

// CLIENT TRACKING ON|OFF [REDIRECT id] [PREFIX p ...] [BCAST] [OPTIN]
// [OPTOUT] [NOLOOP]
func cmdClientTracking(c *conn, args [][]byte) {
	var redirect int64
	var optin, optout, noloop, bcast, prefix bool
	var prefixes []string
	for i := 3; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case eqFold(args[i], "redirect") && more >= 1:
			i++
			id, ok := parseInt(args[i])
			if !ok {
				c.addError(msgNotInteger)
				return
			}
			redirect = id
		case eqFold(args[i], "prefix") && more >= 1:
			i++
			prefix = true
			prefixes = append(prefixes, string(args[i]))
		case eqFold(args[i], "bcast"):
			bcast = true
		case eqFold(args[i], "optin"):
			optin = true
		case eqFold(args[i], "optout"):
			optout = true
		case eqFold(args[i], "noloop"):
			noloop = true
		default:
			c.addError(msgSyntax)
			return
		}
	}
	switch {
	case eqFold(args[2], "off"):
		if c.trk.on {
			c.trackingOff()
		}
		c.addOK()
		return
	case !eqFold(args[2], "on"):
		c.addError(msgSyntax)
		return
	case prefix && !bcast:
		c.addError("ERR PREFIX option requires BCAST mode to be enabled")
		return
	case optin && optout:
		c.addError("ERR You can't specify both OPTIN mode and OPTOUT mode")
		return
	case c.trk.on && bcast != c.trk.bcast:
		c.addError("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.")
		return
	case bcast && (optin || optout):
		c.addError("ERR OPTIN and OPTOUT are not compatible with BCAST")
		return
	case c.trk.on && (optin && c.trk.optout || optout && c.trk.optin):
		c.addError("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
		return
	case redirect != 0 && redirect != c.id && c.srv.connByID(redirect) == nil:
		c.addError("ERR The client ID you want redirect to does not exist")
		return
	}
	if bcast {
		if msg := prefixOverlap(prefixes, c.trk.prefixes); msg != "" {
			c.addError(msg)
			return
		}
		if len(prefixes) == 0 && len(c.trk.prefixes) == 0 {
			prefixes = []string{""}
		}
	}
	c.ensureMailbox() // invalidations come through it
	t := c.srv.trk
	t.mu.Lock()
	if !c.trk.on {
		t.active.Add(1)
		t.clients[c] = struct{}{}
	}
	for _, p := range prefixes {
		if slices.Contains(c.trk.prefixes, p) {
			continue
		}
		c.trk.prefixes = append(c.trk.prefixes, p)
		if t.prefixes[p] == nil {
			t.prefixes[p] = map[*conn]struct{}{}
		}
		t.prefixes[p][c] = struct{}{}
	}
	c.trk.bcast = bcast
	c.trk.on, c.trk.optin, c.trk.optout, c.trk.noloop, c.trk.redirect = true, optin, optout, noloop, redirect
	t.mu.Unlock()
	c.addOK()
}

// prefixOverlap is valkey's checkPrefixCollisionsOrReply: no prefix may
// be another's prefix, among those given and those the client has.
func prefixOverlap(given, have []string) string {
	overlaps := func(a, b string) bool {
		n := min(len(a), len(b))
		return a[:n] == b[:n]
	}
	for i, p := range given {
		for _, q := range have {
			if p != q && overlaps(p, q) {
				return "ERR Prefix '" + p + "' overlaps with an existing prefix '" + q + "'. Prefixes for a single client must not overlap."
			}
		}
		for _, q := range given[i+1:] {
			if overlaps(p, q) {
				return "ERR Prefix '" + p + "' overlaps with another provided prefix '" + q + "'. Prefixes for a single client must not overlap."
			}
		}
	}
	return ""
}

// CLIENT CACHING YES|NO
func cmdClientCaching(c *conn, args [][]byte) {
	tr := &c.trk
	switch {
	case !tr.on || !tr.optin && !tr.optout:
		c.addError("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
	case eqFold(args[2], "yes") && tr.optin:
		tr.caching = true
		c.addOK()
	case eqFold(args[2], "yes"):
		c.addError("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
	case eqFold(args[2], "no") && tr.optout:
		tr.caching = true
		c.addOK()
	case eqFold(args[2], "no"):
		c.addError("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
	default:
		c.addError(msgSyntax)
	}
}

// CLIENT TRACKINGINFO
func cmdClientTrackingInfo(c *conn, _ [][]byte) {
	tr := &c.trk
	var flags []string
	if !tr.on {
		flags = append(flags, "off")
	} else {
		flags = append(flags, "on")
		if tr.bcast {
			flags = append(flags, "bcast")
		}
		if tr.optin {
			flags = append(flags, "optin")
			if tr.caching {
				flags = append(flags, "caching-yes")
			}
		}
		if tr.optout {
			flags = append(flags, "optout")
			if tr.caching {
				flags = append(flags, "caching-no")
			}
		}
		if tr.noloop {
			flags = append(flags, "noloop")
		}
		if tr.redirect != 0 && c.srv.connByID(tr.redirect) == nil {
			flags = append(flags, "broken_redirect")
		}
	}
	c.addMap(3)
	c.addBulkString("flags")
	c.addSet(len(flags))
	for _, f := range flags {
		c.addBulkString(f)
	}
	c.addBulkString("redirect")
	c.addInt(getRedir(tr))
	c.addBulkString("prefixes")
	c.addArray(len(tr.prefixes))
	for _, p := range tr.prefixes {
		c.addBulkString(p)
	}
}

func getRedir(tr *trackState) int64 {
	if !tr.on {
		return -1
	}
	return tr.redirect
}

// CLIENT GETREDIR
func cmdClientGetRedir(c *conn, _ [][]byte) { c.addInt(getRedir(&c.trk)) }

// beginTracked and endTracked frame a command of a tracking connection:
// an invalidation posted in between waits in mailbox.inval and follows
// the command's reply.
func (c *conn) beginTracked() {
	c.mb.mu.Lock()
	c.mb.busy = true
	c.mb.mu.Unlock()
}

func (c *conn) endTracked() {
	mb := c.mb
	mb.mu.Lock()
	defer mb.mu.Unlock()
	mb.busy = false
	if mb.dead {
		return
	}
	mb.buf = append(mb.buf, c.out...)
	c.out = c.out[:0]
	mb.buf = append(mb.buf, mb.inval...)
	mb.inval = mb.inval[:0]
}

// post appends the invalidation build makes (for the connection's
// protocol) to c's mailbox, after the reply of the command c runs (see
// mailbox.inval), and kicks c, or closes c at the limit, as deliver.
func (c *conn) post(build func(b []byte, proto int) []byte) {
	mb := c.mb
	if mb == nil {
		return
	}
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if mb.dead {
		return
	}
	if mb.busy {
		mb.inval = build(mb.inval, mb.proto)
		if len(mb.inval) > 0 {
			c.afterPost(mb)
		}
		return
	}
	n := len(mb.buf)
	mb.buf = build(mb.buf, mb.proto)
	if len(mb.buf) == n {
		return
	}
	c.afterPost(mb)
}
