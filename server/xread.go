package server

import (
	"math"
	"slices"
	"strconv"
)

// XREAD and XREADGROUP, as valkey 8.0's xreadCommand.
//
// BLOCK is parsed (with valkey's errors) but does not wait yet: when no
// stream has anything to serve, the call replies at once with the null
// that valkey sends when a BLOCK times out. xreadTry is the part the
// blocking mechanism will call again when a key changes; inside EXEC a
// BLOCK never waits, as in valkey.

// xreadReq is a parsed XREAD or XREADGROUP.
type xreadReq struct {
	group, consumer []byte // XREADGROUP's GROUP
	count           int64  // 0: all
	noAck           bool
	block           int64 // milliseconds, 0 forever; -1: no BLOCK
	keys, idArgs    [][]byte
	// ids are the IDs to read after, as xreadTry resolves them ("$" and
	// "+" to the stream's, ">" to maxStreamID). "$" is resolved by the
	// first try only, as valkey rewrites it to the ID it found before it
	// blocks: a later try reads after the same.
	ids      []streamID
	resolved bool
}

// cmdXRead is XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key
// ...] id [id ...] and XREADGROUP GROUP group consumer [COUNT count]
// [BLOCK milliseconds] [NOACK] STREAMS key [key ...] id [id ...].
func cmdXRead(c *conn, args [][]byte) {
	r, ok := parseXRead(c, args)
	if !ok || xreadTry(c, r) {
		return
	}
	// Nothing to serve. With BLOCK (r.block >= 0) outside EXEC this is
	// where the call is to wait for the keys; until the blocking
	// mechanism takes it, it replies as a BLOCK that timed out.
	c.addNullArray()
}

// parseXRead parses the options as valkey's xreadCommand, or replies with
// the error.
func parseXRead(c *conn, args [][]byte) (*xreadReq, bool) {
	group := len(args[0]) == len("xreadgroup")
	r := &xreadReq{block: -1}
	name := "xread"
	if group {
		name = "xreadgroup"
	}
	streams := 0
	for i := 1; i < len(args) && streams == 0; i++ {
		more := len(args) - i - 1
		a := args[i]
		switch {
		case eqFold(a, "block") && more > 0:
			i++
			ms, ok := parseBlockMS(c, args[i])
			if !ok {
				return nil, false
			}
			r.block = ms
		case eqFold(a, "count") && more > 0:
			i++
			n, ok := parseInt(args[i])
			if !ok {
				c.addError(msgNotInteger)
				return nil, false
			}
			r.count = max(n, 0)
		case eqFold(a, "streams") && more > 0:
			streams = i + 1
			if (len(args)-streams)%2 != 0 {
				symbol := "$"
				if group {
					symbol = ">"
				}
				c.addError("ERR Unbalanced '" + name + "' list of streams: for each stream key an ID or '" + symbol + "' must be specified.")
				return nil, false
			}
		case eqFold(a, "group") && more >= 2:
			if !group {
				c.addError("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
				return nil, false
			}
			r.group, r.consumer = args[i+1], args[i+2]
			i += 2
		case eqFold(a, "noack"):
			if !group {
				c.addError("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
				return nil, false
			}
			r.noAck = true
		default:
			c.addError(msgSyntax)
			return nil, false
		}
	}
	switch {
	case streams == 0:
		c.addError(msgSyntax)
		return nil, false
	case group && r.group == nil:
		c.addError("ERR Missing GROUP option for XREADGROUP")
		return nil, false
	}
	n := (len(args) - streams) / 2
	r.keys, r.idArgs = args[streams:streams+n], args[streams+n:]
	return r, true
}

// parseBlockMS parses BLOCK's milliseconds as valkey's
// getTimeoutFromObjectOrReply, or replies with the error.
func parseBlockMS(c *conn, b []byte) (int64, bool) {
	ms, ok := parseInt(b)
	switch {
	case !ok:
		c.addError("ERR timeout is not an integer or out of range")
	case ms < 0:
		c.addError("ERR timeout is negative")
		ok = false
	case ms > 0 && ms > math.MaxInt64-nowMS():
		c.addError("ERR timeout is out of range")
		ok = false
	}
	return ms, ok
}

// lockKeys locks the shards of keys of c's database, each once, in the
// order of their indexes (as lockPair and EXEC), for writing or reading,
// and returns the function that unlocks them.
func lockKeys(c *conn, keys [][]byte, write bool) (unlock func()) {
	var shards []*shard
	for _, k := range keys {
		if s := c.db.shard(k); !slices.Contains(shards, s) {
			shards = append(shards, s)
		}
	}
	slices.SortFunc(shards, func(a, b *shard) int { return int(a.idx) - int(b.idx) })
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

// xreadTry serves r if it can, as valkey's xreadCommand does before it
// blocks: it reports whether it replied (with entries or an error). It
// replies nothing when no stream has entries to serve.
func xreadTry(c *conn, r *xreadReq) (served bool) {
	unlock := lockKeys(c, r.keys, r.group != nil)
	defer unlock()
	streams := make([]*stream, len(r.keys))
	var groups []*streamGroup
	if r.group != nil {
		groups = make([]*streamGroup, len(r.keys))
	}
	if !r.resolved {
		r.ids = make([]streamID, len(r.keys))
	}
	for i, key := range r.keys {
		st, wrong := streamForRead(c, c.db.shard(key), key)
		if wrong {
			return true
		}
		streams[i] = st
		if r.group != nil {
			if st != nil {
				groups[i] = st.group(r.group)
			}
			if groups[i] == nil {
				c.addError("NOGROUP No such key '" + string(key) + "' or consumer group '" + string(r.group) + "' in XREADGROUP with GROUP option")
				return true
			}
		}
		switch arg := string(r.idArgs[i]); {
		case r.resolved && arg == "$":
		case arg == "$":
			if r.group != nil {
				c.addError("ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.")
				return true
			}
			if st != nil {
				r.ids[i] = st.last
			}
		case arg == "+":
			if r.group != nil {
				c.addError("ERR The + ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The + ID would just return an empty result set.")
				return true
			}
			if st != nil {
				id, ok := st.last.decr()
				if !ok {
					c.addError("ERR the stream last element ID is 0-0")
					return true
				}
				r.ids[i] = id
			}
		case arg == ">":
			if r.group == nil {
				c.addError("ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.")
				return true
			}
			r.ids[i] = maxStreamID
		default:
			id, ok := parseID(r.idArgs[i], 0, true)
			if !ok {
				c.addError(msgInvalidStreamID)
				return true
			}
			r.ids[i] = id
		}
	}
	r.resolved = true

	now := nowMS()
	start, served_ := len(c.out), 0
	for i, st := range streams {
		if st == nil {
			continue
		}
		gt := r.ids[i]
		serve, history := false, false
		var g *streamGroup
		var cs *consumer
		if groups != nil {
			g = groups[i]
			if gt != maxStreamID {
				serve, history = true, true
			} else if len(st.entries) > 0 && g.last.less(st.lastValid()) {
				serve, gt = true, g.last
			}
			cs = g.lookupOrCreateConsumer(r.consumer, now)
			cs.seen = now
		} else if len(st.entries) > 0 && gt.less(st.lastValid()) {
			serve = true
		}
		if !serve {
			continue
		}
		served_++
		if c.proto == 2 {
			c.addArray(2)
		}
		c.addBulk(r.keys[i])
		from, _ := gt.incr()
		if history {
			st.replyHistory(c, cs, from, r.count, now)
		} else {
			st.replyNew(c, g, cs, from, r.count, r.noAck, now)
		}
	}
	if served_ == 0 {
		return false
	}
	var head []byte
	if c.proto == 3 {
		head = appendLen(head, '%', served_)
	} else {
		head = appendLen(head, '*', served_)
	}
	c.out = slices.Insert(c.out, start, head...)
	return true
}

func appendLen(b []byte, prefix byte, n int) []byte {
	b = append(b, prefix)
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// replyNew replies with the entries from start on, at most count (0: all);
// for a group (g and cs set) it moves the group's last ID and, unless
// noAck, puts them in the PELs, as valkey's streamReplyWithRange.
func (st *stream) replyNew(c *conn, g *streamGroup, cs *consumer, start streamID, count int64, noAck bool, now int64) {
	lo := st.search(start)
	n := len(st.entries) - lo
	if count > 0 && int64(n) > count {
		n = int(count)
	}
	c.addArray(n)
	for _, e := range st.entries[lo : lo+n] {
		if g != nil {
			st.delivered(g, e.id)
		}
		c.addEntry(&e)
		if g == nil || noAck {
			continue
		}
		if i, found := pelSearch(g.pel, e.id); found {
			p := g.pel[i]
			p.give(cs)
			p.delivered, p.count = now, 1
		} else {
			p := &pending{id: e.id, delivered: now, count: 1, owner: cs}
			g.pel = slices.Insert(g.pel, i, p)
			cs.pel = pelInsert(cs.pel, p)
		}
		cs.active = now
	}
}

// replyHistory replies with the entries of the consumer's PEL from start
// on, at most count (0: all): an entry no longer in the stream as its ID
// and a null; each other is delivered once more. As valkey's
// streamReplyWithRangeFromConsumerPEL.
func (st *stream) replyHistory(c *conn, cs *consumer, start streamID, count int64, now int64) {
	lo, _ := pelSearch(cs.pel, start)
	n := len(cs.pel) - lo
	if count > 0 && int64(n) > count {
		n = int(count)
	}
	c.addArray(n)
	for _, p := range cs.pel[lo : lo+n] {
		e := st.entry(p.id)
		if e == nil {
			c.addArray(2)
			c.addID(p.id)
			c.addNullArray()
			continue
		}
		c.addEntry(e)
		p.delivered = now
		p.count++
	}
}
