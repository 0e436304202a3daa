package server

import (
	"math"
	"strconv"
)

// stream is the least of a stream that XADD and XLEN need: its entries in
// order of their IDs, and the last ID given.
type stream struct {
	last    streamID
	entries []streamEntry
}

type streamID struct{ ms, seq uint64 }

func (a streamID) less(b streamID) bool { return a.ms < b.ms || a.ms == b.ms && a.seq < b.seq }

func (a streamID) append(b []byte) []byte {
	b = strconv.AppendUint(b, a.ms, 10)
	b = append(b, '-')
	return strconv.AppendUint(b, a.seq, 10)
}

var maxStreamID = streamID{math.MaxUint64, math.MaxUint64}

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

// parseXAdd parses the options and ID of XADD key ... and returns the
// index of the ID, or replies with the error and returns -1.
func parseXAdd(c *conn, args [][]byte, x *xaddArgs) int {
	i := 2
	for ; i < len(args); i++ {
		more := len(args) - 1 - i
		a := args[i]
		switch {
		case string(a) == "*":
			return i
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
		case eqFold(a, "nomkstream"):
			x.noMkStream = true
		default:
			id, seqGiven, ok := parseStreamID(a, true)
			if !ok {
				c.addError(msgInvalidStreamID)
				return -1
			}
			x.id, x.idGiven, x.seqGiven = id, true, seqGiven
			return i
		}
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
// trim with ~ is exact here; valkey's removes only whole nodes of the
// stream (100 entries), so it may keep more.
func cmdXAdd(c *conn, args [][]byte) {
	var x xaddArgs
	idpos := parseXAdd(c, args, &x)
	switch {
	case idpos < 0:
		return
	case x.limit != 0 && x.trim == 0:
		c.addError("ERR syntax error, LIMIT cannot be used without specifying a trimming strategy")
		return
	case x.limitGiven && !x.approx:
		c.addError("ERR syntax error, LIMIT cannot be used without the special ~ option")
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
	st.trim(x)
	s.touch(key)
	var b [41]byte
	c.addBulk(id.append(b[:0]))
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

// trim applies XADD's MAXLEN or MINID.
func (st *stream) trim(x xaddArgs) {
	drop := 0
	switch x.trim {
	case trimMaxLen:
		drop = int(max(int64(len(st.entries))-x.maxLen, 0))
	case trimMinID:
		for drop < len(st.entries) && st.entries[drop].id.less(x.minID) {
			drop++
		}
	}
	if drop > 0 {
		clear(st.entries[:drop])
		st.entries = append(st.entries[:0], st.entries[drop:]...)
	}
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
