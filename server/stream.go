package server

import (
	"math"
	"slices"
	"sort"
	"strconv"
)

// stream is a stream: its entries in order of their IDs (immutable once
// added: a PEL holds IDs, not entries), the last ID given, and valkey's
// bookkeeping for consumer groups' lag (entries-added, the greatest
// deleted ID, the recorded first ID). Its groups are kept by name, as
// valkey's radix tree lists them.
type stream struct {
	last       streamID
	entries    []streamEntry
	first      streamID // recorded-first-entry-id: 0-0 when empty
	maxDeleted streamID // max-deleted-entry-id
	added      uint64   // entries-added
	groups     []*streamGroup
}

type streamID struct{ ms, seq uint64 }

func (a streamID) less(b streamID) bool { return a.ms < b.ms || a.ms == b.ms && a.seq < b.seq }

func (a streamID) append(b []byte) []byte {
	b = strconv.AppendUint(b, a.ms, 10)
	b = append(b, '-')
	return strconv.AppendUint(b, a.seq, 10)
}

var maxStreamID = streamID{math.MaxUint64, math.MaxUint64}

func (a streamID) compare(b streamID) int {
	switch {
	case a.less(b):
		return -1
	case b.less(a):
		return 1
	}
	return 0
}

func (a streamID) isZero() bool { return a == streamID{} }

// incr is valkey's streamIncrID: the next ID; false (and 0-0) after the
// last possible one.
func (a streamID) incr() (streamID, bool) {
	switch {
	case a.seq != math.MaxUint64:
		return streamID{a.ms, a.seq + 1}, true
	case a.ms != math.MaxUint64:
		return streamID{a.ms + 1, 0}, true
	}
	return streamID{}, false
}

// decr is valkey's streamDecrID: the previous ID; false (and the last
// possible ID) before 0-0.
func (a streamID) decr() (streamID, bool) {
	switch {
	case a.seq != 0:
		return streamID{a.ms, a.seq - 1}, true
	case a.ms != 0:
		return streamID{a.ms - 1, math.MaxUint64}, true
	}
	return maxStreamID, false
}

// addID replies with id as a bulk string.
func (c *conn) addID(id streamID) {
	var b [41]byte
	c.addBulk(id.append(b[:0]))
}

type streamEntry struct {
	id     streamID
	fields [][]byte // field, value, field, value, ...
}

const msgInvalidStreamID = "ERR Invalid stream ID specified as stream command argument"

// xaddArgs are XADD's options, as valkey's streamParseAddOrTrimArgsOrReply
// reads them.
type xaddArgs struct {
	noMkStream bool
	trim       int // 0, trimMaxLen or trimMinID
	approx     bool
	maxLen     int64
	minID      streamID
	limit      int64
	limitGiven bool
	idGiven    bool // not "*"
	seqGiven   bool // not "<ms>-*"
	id         streamID
}

const (
	trimMaxLen = 1 + iota
	trimMinID
)

// parseXAdd parses the options and ID of XADD key ... (xadd) or the
// options of XTRIM key ... and returns the index of the ID, or replies with
// the error and returns -1: valkey's streamParseAddOrTrimArgsOrReply.
func parseXAdd(c *conn, args [][]byte, x *xaddArgs, xadd bool) int {
	i := 2
loop:
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		a := args[i]
		switch {
		case xadd && string(a) == "*":
			break loop
		case (eqFold(a, "maxlen") || eqFold(a, "minid")) && more > 0:
			if x.trim != 0 {
				c.addError("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
				return -1
			}
			x.approx = false
			if next := string(args[i+1]); more >= 2 && (next == "~" || next == "=") {
				x.approx = next == "~"
				i++
			}
			i++
			if eqFold(a, "minid") {
				id, _, ok := parseStreamID(args[i], false)
				if !ok {
					c.addError(msgInvalidStreamID)
					return -1
				}
				x.trim, x.minID = trimMinID, id
				continue
			}
			n, ok := parseCountArg(c, args[i], "MAXLEN")
			if !ok {
				return -1
			}
			x.trim, x.maxLen = trimMaxLen, n
		case eqFold(a, "limit") && more > 0:
			i++
			n, ok := parseCountArg(c, args[i], "LIMIT")
			if !ok {
				return -1
			}
			x.limit, x.limitGiven = n, true
		case xadd && eqFold(a, "nomkstream"):
			x.noMkStream = true
		case !xadd:
			c.addError(msgSyntax)
			return -1
		default:
			id, seqGiven, ok := parseStreamID(a, true)
			if !ok {
				c.addError(msgInvalidStreamID)
				return -1
			}
			x.id, x.idGiven, x.seqGiven = id, true, seqGiven
			break loop
		}
	}
	switch {
	case x.limit != 0 && x.trim == 0:
		c.addError("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
		return -1
	case !xadd && x.trim == 0:
		c.addError("ERR syntax error, XTRIM must be called with a trimming strategy")
		return -1
	case x.limitGiven && !x.approx:
		c.addError("ERR syntax error, LIMIT cannot be used without the special ~ option")
		return -1
	case x.approx && !x.limitGiven:
		x.limit = 10000 // valkey's 100 nodes of stream-node-max-entries
	}
	return i
}

// parseCountArg parses the value of XADD's MAXLEN or LIMIT (what), an
// integer not below 0, or replies with the error.
func parseCountArg(c *conn, b []byte, what string) (int64, bool) {
	n, ok := parseInt(b)
	switch {
	case !ok:
		c.addError(msgNotInteger)
	case n < 0:
		c.addError("ERR The " + what + " argument must be >= 0.")
		ok = false
	}
	return n, ok
}

// XADD key [NOMKSTREAM] [MAXLEN | MINID [= | ~] threshold [LIMIT count]]
// <* | id> field value [field value ...], as valkey's xaddCommand. A
// trim with ~ is exact here (up to its LIMIT); valkey's removes only whole
// nodes of the stream (100 entries), so it may keep more.
func cmdXAdd(c *conn, args [][]byte) {
	var x xaddArgs
	idpos := parseXAdd(c, args, &x, true)
	if idpos < 0 {
		return
	}
	fields := args[min(idpos+1, len(args)):]
	if idpos >= len(args) || len(fields) < 2 || len(fields)%2 != 0 {
		c.addError("ERR wrong number of arguments for 'xadd' command")
		return
	}
	if x.idGiven && x.seqGiven && x.id == (streamID{}) {
		c.addError("ERR The ID specified in XADD must be greater than 0-0")
		return
	}
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindStream, !x.noMkStream)
	if err != nil {
		c.addError(err.Error())
		return
	}
	if e == nil {
		c.addNull()
		return
	}
	st := e.obj.(*stream)
	if st.last == maxStreamID {
		c.addError("ERR The stream has exhausted the last possible ID, unable to add more items")
		return
	}
	id, ok := st.nextID(x)
	if !ok {
		c.addError("ERR The ID specified in XADD is equal or smaller than the target stream top item")
		return
	}
	copied := make([][]byte, len(fields))
	for j, f := range fields {
		copied[j] = c.rd.take(f)
	}
	st.entries = append(st.entries, streamEntry{id: id, fields: copied})
	st.last = id
	st.added++
	if len(st.entries) == 1 {
		st.first = id
	}
	c.addID(id)
	st.trim(x)
	s.touch(key)
}

// nextID returns the ID of the entry XADD adds, as valkey's
// streamAppendItem picks it; false if it would not follow the last one.
func (st *stream) nextID(x xaddArgs) (streamID, bool) {
	var id streamID
	switch {
	case x.idGiven && x.seqGiven:
		id = x.id
	case x.idGiven: // <ms>-*
		if x.id.ms != st.last.ms {
			id = streamID{x.id.ms, 0}
			break
		}
		if st.last.seq == math.MaxUint64 {
			return id, false
		}
		id = streamID{st.last.ms, st.last.seq + 1}
	default: // *
		now := uint64(nowMS())
		switch {
		case now > st.last.ms:
			id = streamID{now, 0}
		case st.last.seq == math.MaxUint64:
			id = streamID{st.last.ms + 1, 0}
		default:
			id = streamID{st.last.ms, st.last.seq + 1}
		}
	}
	return id, st.last.less(id)
}

// trim applies XADD's or XTRIM's MAXLEN or MINID and returns the number of
// entries it removed. With ~ it removes up to the LIMIT, entry by entry.
func (st *stream) trim(x xaddArgs) int {
	drop := 0
	switch x.trim {
	case trimMaxLen:
		drop = int(max(int64(len(st.entries))-x.maxLen, 0))
	case trimMinID:
		for drop < len(st.entries) && st.entries[drop].id.less(x.minID) {
			drop++
		}
	}
	if x.approx && x.limit > 0 && int64(drop) > x.limit {
		drop = int(x.limit)
	}
	if drop > 0 {
		n := copy(st.entries, st.entries[drop:])
		clear(st.entries[n:])
		st.entries = st.entries[:n]
		st.first = streamID{}
		if len(st.entries) > 0 {
			st.first = st.entries[0].id
		}
	}
	return drop
}

// search returns the index of the first entry whose ID is id or after.
func (st *stream) search(id streamID) int {
	return sort.Search(len(st.entries), func(i int) bool { return !st.entries[i].id.less(id) })
}

// entry returns the entry with id, or nil.
func (st *stream) entry(id streamID) *streamEntry {
	if i := st.search(id); i < len(st.entries) && st.entries[i].id == id {
		return &st.entries[i]
	}
	return nil
}

// lastValid is the ID of the last entry (valkey's streamLastValidID), 0-0
// when there is none.
func (st *stream) lastValid() streamID {
	if len(st.entries) == 0 {
		return streamID{}
	}
	return st.entries[len(st.entries)-1].id
}

// addEntry replies with one entry: its ID and its fields and values.
func (c *conn) addEntry(e *streamEntry) {
	c.addArray(2)
	c.addID(e.id)
	c.addArray(len(e.fields))
	for _, f := range e.fields {
		c.addBulk(f)
	}
}

// parseID parses an ID as valkey's streamGenericParseIDOrReply: "-" and
// "+" (unless strict), "<ms>-<seq>", and "<ms>" whose sequence is missing.
func parseID(b []byte, missing uint64, strict bool) (streamID, bool) {
	if len(b) > 127 {
		return streamID{}, false
	}
	if len(b) == 1 && (b[0] == '-' || b[0] == '+') {
		if strict {
			return streamID{}, false
		}
		if b[0] == '-' {
			return streamID{}, true
		}
		return maxStreamID, true
	}
	msPart, seqPart, dash := b, []byte(nil), false
	for i, ch := range b {
		if ch == '-' {
			msPart, seqPart, dash = b[:i], b[i+1:], true
			break
		}
	}
	var id streamID
	var ok bool
	if id.ms, ok = string2ull(msPart); !ok {
		return id, false
	}
	if !dash {
		id.seq = missing
		return id, true
	}
	id.seq, ok = string2ull(seqPart)
	return id, ok
}

// parseRangeID parses a bound of a range as valkey's
// streamParseIntervalIDOrReply and streamIncrID/streamDecrID: "(" before
// an ID excludes it; start is the lower bound. It replies with the error.
func parseRangeID(c *conn, b []byte, missing uint64, start bool) (streamID, bool) {
	exclude := len(b) > 1 && b[0] == '('
	var id streamID
	var ok bool
	if exclude {
		id, ok = parseID(b[1:], missing, true)
	} else {
		id, ok = parseID(b, missing, false)
	}
	if !ok {
		c.addError(msgInvalidStreamID)
		return id, false
	}
	if !exclude {
		return id, true
	}
	if start {
		if id, ok = id.incr(); !ok {
			c.addError("ERR invalid start ID for the interval")
		}
		return id, ok
	}
	if id, ok = id.decr(); !ok {
		c.addError("ERR invalid end ID for the interval")
	}
	return id, ok
}

// streamForRead returns the stream under key for a read with the shard's
// lock held: nil, and no reply, if there is none; nil after the WRONGTYPE
// reply if the key holds another type.
func streamForRead(c *conn, s *shard, key []byte) (st *stream, wrong bool) {
	e := s.get(key)
	switch {
	case e == nil:
		return nil, false
	case e.kind != kindStream:
		c.addError(msgWrongType)
		return nil, true
	}
	return e.obj.(*stream), false
}

// parseIDs parses the entry IDs of XDEL and XACK (strictly: no - or +, a
// missing sequence number is 0), or replies the invalid-ID error and
// returns false.
func parseIDs(c *conn, args [][]byte) ([]streamID, bool) {
	ids := make([]streamID, len(args))
	for j, a := range args {
		id, ok := parseID(a, 0, true)
		if !ok {
			c.addError(msgInvalidStreamID)
			return nil, false
		}
		ids[j] = id
	}
	return ids, true
}

// XRANGE key start end [COUNT count], XREVRANGE key end start [COUNT
// count], as valkey's xrangeGenericCommand.
func cmdXRange(c *conn, args [][]byte) {
	rev := len(args[0]) == len("xrevrange")
	startArg, endArg := args[2], args[3]
	if rev {
		startArg, endArg = endArg, startArg
	}
	start, ok := parseRangeID(c, startArg, 0, true)
	if !ok {
		return
	}
	end, ok := parseRangeID(c, endArg, math.MaxUint64, false)
	if !ok {
		return
	}
	count := int64(-1)
	for j := 4; j < len(args); j++ {
		if !eqFold(args[j], "count") || j+1 >= len(args) {
			c.addError(msgSyntax)
			return
		}
		j++
		n, ok := parseInt(args[j])
		if !ok {
			c.addError(msgNotInteger)
			return
		}
		count = max(n, 0)
	}
	s := c.db.shard(args[1])
	s.rlock(c)
	defer s.runlock(c)
	st, wrong := streamForRead(c, s, args[1])
	switch {
	case wrong:
		return
	case st == nil:
		c.addArray(0)
		return
	case count == 0:
		c.addNullArray()
		return
	}
	st.replyRange(c, start, end, count, rev)
}

// replyRange replies with the entries from start to end, at most count
// (all if count is below 1), backwards if rev.
func (st *stream) replyRange(c *conn, start, end streamID, count int64, rev bool) {
	lo, hi := st.search(start), len(st.entries)
	if !end.less(start) {
		hi = st.search(end)
		if hi < len(st.entries) && st.entries[hi].id == end {
			hi++
		}
	} else {
		hi = lo
	}
	n := hi - lo
	if count > 0 && int64(n) > count {
		n = int(count)
	}
	c.addArray(n)
	for k := range n {
		if rev {
			c.addEntry(&st.entries[hi-1-k])
		} else {
			c.addEntry(&st.entries[lo+k])
		}
	}
}

// XDEL key id [id ...], as valkey's xdelCommand: a missing key is 0 before
// the IDs are looked at.
func cmdXDel(c *conn, args [][]byte) {
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindStream, false)
	if err != nil {
		c.addError(err.Error())
		return
	}
	if e == nil {
		c.addInt(0)
		return
	}
	ids, ok := parseIDs(c, args[2:])
	if !ok {
		return
	}
	st := e.obj.(*stream)
	deleted := 0
	for _, id := range ids {
		i := st.search(id)
		if i == len(st.entries) || st.entries[i].id != id {
			continue
		}
		st.entries = slices.Delete(st.entries, i, i+1)
		if st.maxDeleted.less(id) {
			st.maxDeleted = id
		}
		deleted++
	}
	if deleted > 0 {
		st.first = streamID{}
		if len(st.entries) > 0 {
			st.first = st.entries[0].id
		}
		s.touch(key)
	}
	c.addInt(int64(deleted))
}

// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count], as valkey's
// xtrimCommand; ~ as XADD's.
func cmdXTrim(c *conn, args [][]byte) {
	var x xaddArgs
	if parseXAdd(c, args, &x, false) < 0 {
		return
	}
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindStream, false)
	if err != nil {
		c.addError(err.Error())
		return
	}
	if e == nil {
		c.addInt(0)
		return
	}
	n := e.obj.(*stream).trim(x)
	if n > 0 {
		s.touch(key)
	}
	c.addInt(int64(n))
}

// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID
// max-deleted-id], as valkey's xsetidCommand.
func cmdXSetID(c *conn, args [][]byte) {
	id, ok := parseID(args[2], 0, true)
	if !ok {
		c.addError(msgInvalidStreamID)
		return
	}
	added := int64(-1)
	var maxDel streamID
	for i := 3; i < len(args); i += 2 {
		more := i+1 < len(args)
		switch {
		case eqFold(args[i], "entriesadded") && more:
			n, ok := parseInt(args[i+1])
			if !ok {
				c.addError(msgNotInteger)
				return
			}
			if n < 0 {
				c.addError("ERR entries_added must be positive")
				return
			}
			added = n
		case eqFold(args[i], "maxdeletedid") && more:
			if maxDel, ok = parseID(args[i+1], 0, true); !ok {
				c.addError(msgInvalidStreamID)
				return
			}
			if id.less(maxDel) {
				c.addError("ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id")
				return
			}
		default:
			c.addError(msgSyntax)
			return
		}
	}
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindStream, false)
	switch {
	case err != nil:
		c.addError(err.Error())
		return
	case e == nil:
		c.addError("ERR no such key")
		return
	}
	st := e.obj.(*stream)
	if id.less(st.maxDeleted) {
		c.addError("ERR The ID specified in XSETID is smaller than current max_deleted_entry_id")
		return
	}
	if len(st.entries) > 0 {
		if id.less(st.lastValid()) {
			c.addError("ERR The ID specified in XSETID is smaller than the target stream top item")
			return
		}
		if added != -1 && int64(len(st.entries)) > added {
			c.addError("ERR The entries_added specified in XSETID is smaller than the target stream length")
			return
		}
	}
	st.last = id
	if added != -1 {
		st.added = uint64(added)
	}
	if !maxDel.isZero() {
		st.maxDeleted = maxDel
	}
	c.addOK() // no touch: valkey's xsetidCommand signals no change to WATCH
}

// parseStreamID parses "<ms>-<seq>", "<ms>" (sequence 0) and, when auto
// is set, "<ms>-*" (seqGiven false), as valkey's streamParseStrictIDOrReply.
func parseStreamID(b []byte, auto bool) (id streamID, seqGiven, ok bool) {
	if len(b) > 127 || string(b) == "-" || string(b) == "+" {
		return id, false, false
	}
	msPart, seqPart, dash := b, []byte(nil), false
	for i, ch := range b {
		if ch == '-' {
			msPart, seqPart, dash = b[:i], b[i+1:], true
			break
		}
	}
	if id.ms, ok = string2ull(msPart); !ok {
		return id, false, false
	}
	switch {
	case !dash:
		return id, true, true
	case auto && string(seqPart) == "*":
		return id, false, true
	}
	id.seq, ok = string2ull(seqPart)
	return id, true, ok
}

// string2ull parses an unsigned 64-bit number as valkey's string2ull:
// strictly (string2ll) if it can, else as C's strtoull does, which takes
// leading white space, a sign (a '-' negates, modulo 2^64) and leading
// zeros.
func string2ull(b []byte) (uint64, bool) {
	if n, ok := parseInt(b); ok {
		return uint64(n), n >= 0
	}
	i := 0
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	if i == len(b) {
		return 0, false
	}
	var v uint64
	for _, ch := range b[i:] {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		d := uint64(ch - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false // ERANGE
		}
		v = v*10 + d
	}
	if neg {
		v = -v
	}
	return v, true
}
