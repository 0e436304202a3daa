package server

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Commands on lists, hashes, sets, sorted sets and streams. Their replies
// are appended under the shard's lock (collections change in place);
// arguments are copied before they are stored, since they point into the
// connection's input buffer (reader.take: a big argument is not copied).

// readCollection returns, for a reader holding s.mu, the live entry under
// key if it is of kind k; nil, nil if there is none.
func readCollection(s *shard, key []byte, k kind) (*entry, error) {
	e := s.get(key)
	if e != nil && e.kind != k {
		return nil, errWrongType
	}
	return e, nil
}

// parseCount parses the optional count of LPOP, RPOP, SPOP and ZPOPMIN.
func parseCount(c *conn, args [][]byte) (count int, given, ok bool) {
	if len(args) < 3 {
		return 1, false, true
	}
	if len(args) > 3 {
		c.addError(msgSyntax)
		return 0, false, false
	}
	n, valid := parseInt(args[2])
	if !valid || n < 0 {
		c.addError("ERR value is out of range, must be positive")
		return 0, false, false
	}
	return int(min(n, math.MaxInt32)), true, true
}

// --- lists ---

// LPUSH / RPUSH key element [element ...]
func cmdPush(c *conn, args [][]byte) { pushElements(c, args, true) }

// pushElements pushes the elements args[2:] at the head (LPUSH, LPUSHX) or
// the tail (RPUSH, RPUSHX) of the list under args[1] and replies its new
// length. Without create (the X forms) a missing key is left missing and
// gets 0.
func pushElements(c *conn, args [][]byte, create bool) {
	front := args[0][0]|0x20 == 'l'
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindList, create)
	if err != nil || e == nil {
		c.replyErrOrZero(err)
		return
	}
	l := e.obj.(*list)
	for _, v := range args[2:] {
		if front {
			l.pushFront(c.rd.take(v))
		} else {
			l.pushBack(c.rd.take(v))
		}
	}
	s.touch(key)
	c.addInt(int64(l.len()))
}

// LPOP / RPOP key [count]
func cmdPop(c *conn, args [][]byte) {
	front := args[0][0]|0x20 == 'l'
	if len(args) > 3 { // valkey's arity error here, where SPOP and ZPOPMIN say syntax
		name := "rpop"
		if front {
			name = "lpop"
		}
		c.addError("ERR wrong number of arguments for '" + name + "' command")
		return
	}
	count, withCount, ok := parseCount(c, args)
	if !ok {
		return
	}
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindList, false)
	switch {
	case err != nil:
		c.addError(err.Error())
		return
	case e == nil && withCount:
		c.addNullArray()
		return
	case e == nil:
		c.addNull()
		return
	}
	l := e.obj.(*list)
	pop := l.popBack
	if front {
		pop = l.popFront
	}
	n := 1
	if !withCount {
		c.addBulk(pop())
	} else {
		n = min(count, l.len())
		c.addArray(n)
		for range n {
			c.addBulk(pop())
		}
	}
	if n > 0 {
		s.touch(key)
	}
	s.dropIfEmpty(key, e)
}

// rangeIndexes turns LRANGE/ZRANGE's start and stop, which may count from
// the end (-1 is the last), into a range [from, to] of an n-element
// sequence; empty is true when it selects nothing.
func rangeIndexes(start, stop int64, n int) (from, to int, empty bool) {
	if start < 0 {
		start += int64(n)
	}
	if stop < 0 {
		stop += int64(n)
	}
	start = max(start, 0)
	if start > stop || start >= int64(n) {
		return 0, 0, true
	}
	stop = min(stop, int64(n)-1)
	return int(start), int(stop), false
}

// LRANGE key start stop
func cmdLRange(c *conn, args [][]byte) {
	start, ok1 := parseInt(args[2])
	stop, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		c.addError(msgNotInteger)
		return
	}
	s := c.db.shard(args[1])
	s.rlock(c)
	defer s.runlock(c)
	e, err := readCollection(s, args[1], kindList)
	if err != nil {
		c.addError(err.Error())
		return
	}
	if e == nil {
		c.addArray(0)
		return
	}
	l := e.obj.(*list)
	from, to, empty := rangeIndexes(start, stop, l.len())
	if empty {
		c.addArray(0)
		return
	}
	c.addArray(to - from + 1)
	for i := from; i <= to; i++ {
		c.addBulk(l.at(i))
	}
}

// --- hashes ---

// HSET key field value [field value ...]; HMSET, which replies OK.
func cmdHSet(c *conn, args [][]byte) {
	hmset := eqFold(args[0], "hmset")
	if len(args)%2 != 0 {
		if hmset {
			c.addError("ERR wrong number of arguments for 'hmset' command")
		} else {
			c.addError("ERR wrong number of arguments for 'hset' command")
		}
		return
	}
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindHash, true)
	if err != nil {
		c.addError(err.Error())
		return
	}
	h := e.obj.(hashValue)
	added := 0
	for i := 2; i < len(args); i += 2 {
		if _, ok := h[string(args[i])]; !ok {
			added++
		}
		h[string(args[i])] = c.rd.take(args[i+1])
	}
	s.touch(key)
	if hmset {
		c.addOK()
		return
	}
	c.addInt(int64(added))
}

func cmdHGet(c *conn, args [][]byte) {
	s := c.db.shard(args[1])
	s.rlock(c)
	defer s.runlock(c)
	e, err := readCollection(s, args[1], kindHash)
	if err != nil {
		c.addError(err.Error())
		return
	}
	if e != nil {
		if v, ok := e.obj.(hashValue)[string(args[2])]; ok {
			c.addBulk(v)
			return
		}
	}
	c.addNull()
}

// HDEL key field [field ...]
func cmdHDel(c *conn, args [][]byte) {
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindHash, false)
	if err != nil || e == nil {
		c.replyErrOrZero(err)
		return
	}
	n := removeMembers(e.obj.(hashValue), args[2:])
	s.touchIf(n > 0, key)
	s.dropIfEmpty(key, e)
	c.addInt(int64(n))
}

// removeMembers deletes the given members of a hash or set and returns how
// many were there.
func removeMembers[V any](m map[string]V, members [][]byte) int {
	n := 0
	for _, f := range members {
		if _, ok := m[string(f)]; ok {
			delete(m, string(f))
			n++
		}
	}
	return n
}

// cardinality returns the command (LLEN, HLEN, SCARD, ZCARD, XLEN) that
// replies with the size of the collection of kind k at args[1], as size
// measures it: 0 when there is none, an error when the key holds another
// kind.
func cardinality(k kind, size func(obj any) int) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		s := c.db.shard(args[1])
		s.rlock(c)
		defer s.runlock(c)
		e, err := readCollection(s, args[1], k)
		if err != nil || e == nil {
			c.replyErrOrZero(err)
			return
		}
		c.addInt(int64(size(e.obj)))
	}
}

// replyErrOrZero replies with err, or 0 when it is nil (a missing key).
func (c *conn) replyErrOrZero(err error) {
	if err != nil {
		c.addError(err.Error())
	} else {
		c.addInt(0)
	}
}

// HGETALL key: a map in RESP3.
func cmdHGetAll(c *conn, args [][]byte) {
	s := c.db.shard(args[1])
	s.rlock(c)
	defer s.runlock(c)
	e, err := readCollection(s, args[1], kindHash)
	if err != nil {
		c.addError(err.Error())
		return
	}
	if e == nil {
		c.addMap(0)
		return
	}
	h := e.obj.(hashValue)
	c.addMap(len(h))
	for f, v := range h {
		c.addBulkString(f)
		c.addBulk(v)
	}
}

// --- sets ---

// SADD key member [member ...]
func cmdSAdd(c *conn, args [][]byte) {
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindSet, true)
	if err != nil {
		c.addError(err.Error())
		return
	}
	set := e.obj.(setValue)
	n := 0
	for _, m := range args[2:] {
		if _, ok := set[string(m)]; !ok {
			set[string(m)] = struct{}{}
			n++
		}
	}
	s.touchIf(n > 0, key)
	c.addInt(int64(n))
}

// SREM key member [member ...]
func cmdSRem(c *conn, args [][]byte) {
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindSet, false)
	if err != nil || e == nil {
		c.replyErrOrZero(err)
		return
	}
	n := removeMembers(e.obj.(setValue), args[2:])
	s.touchIf(n > 0, key)
	s.dropIfEmpty(key, e)
	c.addInt(int64(n))
}

// SPOP key [count]: Go's map iteration order is random enough.
func cmdSPop(c *conn, args [][]byte) {
	count, withCount, ok := parseCount(c, args)
	if !ok {
		return
	}
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindSet, false)
	switch {
	case err != nil:
		c.addError(err.Error())
		return
	case e == nil && withCount:
		c.addSet(0)
		return
	case e == nil:
		c.addNull()
		return
	}
	set := e.obj.(setValue)
	n := min(count, len(set))
	s.touchIf(n > 0, key)
	if withCount {
		c.addSet(n)
	}
	for m := range set {
		if n == 0 {
			break
		}
		c.addBulkString(m)
		delete(set, m)
		n--
	}
	s.dropIfEmpty(key, e)
}

func cmdSIsMember(c *conn, args [][]byte) {
	s := c.db.shard(args[1])
	s.rlock(c)
	defer s.runlock(c)
	e, err := readCollection(s, args[1], kindSet)
	if err != nil {
		c.addError(err.Error())
		return
	}
	c.addIsMember(e, args[2])
}

// addIsMember replies 1 if m is a member of e, a set's entry (nil for
// none), else 0 (SISMEMBER, SMISMEMBER).
func (c *conn) addIsMember(e *entry, m []byte) {
	in := false
	if e != nil {
		_, in = e.obj.(setValue)[string(m)]
	}
	if in {
		c.addInt(1)
	} else {
		c.addInt(0)
	}
}

// SMEMBERS key: a set in RESP3.
func cmdSMembers(c *conn, args [][]byte) {
	s := c.db.shard(args[1])
	s.rlock(c)
	defer s.runlock(c)
	e, err := readCollection(s, args[1], kindSet)
	if err != nil {
		c.addError(err.Error())
		return
	}
	if e == nil {
		c.addSet(0)
		return
	}
	set := e.obj.(setValue)
	c.addSet(len(set))
	for m := range set {
		c.addBulkString(m)
	}
}

// --- sorted sets ---

// parseScore parses a score as valkey does: a float, inf, -inf; not nan.
func parseScore(b []byte) (float64, bool) {
	if n, ok := parseInt(b); ok && n > -1<<53 && n < 1<<53 {
		return float64(n), true // the common case, without allocating
	}
	// Valkey reads a score with strtod: hexadecimal without an exponent
	// too, no underscores between digits; too large or too small to
	// hold, rejected.
	s := string(b)
	if strings.IndexByte(s, '_') >= 0 {
		return 0, false
	}
	unsigned := s
	if s != "" && (s[0] == '-' || s[0] == '+') {
		unsigned = s[1:]
	}
	hex := len(unsigned) > 1 && unsigned[0] == '0' && unsigned[1]|0x20 == 'x'
	if hex && !strings.ContainsAny(s, "pP") {
		s += "p0"
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) {
		return 0, false
	}
	if f == 0 && strings.ContainsAny(mantissa(s, hex), "123456789abcdefABCDEF") {
		return 0, false // underflow
	}
	return f, true
}

// mantissa is s up to its exponent.
func mantissa(s string, hex bool) string {
	sep := "eE"
	if hex {
		sep = "pP"
	}
	if i := strings.IndexAny(s, sep); i >= 0 {
		return s[:i]
	}
	return s
}

// ZADD key [NX | XX] [GT | LT] [CH] [INCR] score member [score member
// ...], as valkey's zaddGenericCommand: the options, then every score
// checked before any member is set.
func cmdZAdd(c *conn, args [][]byte) {
	opts, n := leadingOptions(args[2:], "nx", "xx", "gt", "lt", "ch", "incr")
	nx, xx, gt, lt, ch, incr := opts[0], opts[1], opts[2], opts[3], opts[4], opts[5]
	pairs := args[2+n:]
	switch {
	case len(pairs) == 0 || len(pairs)%2 != 0:
		c.addError(msgSyntax)
		return
	case nx && xx:
		c.addError("ERR XX and NX options at the same time are not compatible")
		return
	case gt && nx, lt && nx, gt && lt:
		c.addError("ERR GT, LT, and/or NX options at the same time are not compatible")
		return
	case incr && len(pairs) > 2:
		c.addError("ERR INCR option supports a single increment-element pair")
		return
	}
	scores := make([]float64, 0, 8)
	for j := 0; j < len(pairs); j += 2 {
		score, ok := parseScore(pairs[j])
		if !ok {
			c.addError(msgNotFloat)
			return
		}
		scores = append(scores, score)
	}
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindZSet, !xx)
	if err != nil {
		c.addError(err.Error())
		return
	}
	added, changed, done := 0, 0, 0
	var score float64
	if e != nil {
		z := e.obj.(*zset)
		longest := 0
		for j := 1; j < len(pairs); j += 2 {
			longest = max(longest, len(pairs[j]))
		}
		z.willAdd(len(scores), longest)
		for j, sc := range scores {
			member := string(pairs[2*j+1])
			cur, exists := z.scores[member]
			switch {
			case exists && nx, !exists && xx:
				continue
			case exists && incr:
				sc += cur
				if math.IsNaN(sc) {
					s.dropIfEmpty(key, e)
					c.addError("ERR resulting score is not a number (NaN)")
					return
				}
			}
			if exists && (gt && sc <= cur || lt && sc >= cur) {
				continue
			}
			score = sc
			done++
			if !exists {
				z.adding(member)
			}
			// A listpack stores -0 as 0; INCR replies -0 all the same.
			if !z.skiplist {
				sc += 0
			}
			switch {
			case !exists:
				z.set(member, sc)
				added++
			case sc != cur:
				z.set(member, sc)
				changed++
			}
		}
		s.touchIf(added+changed > 0, key)
		s.dropIfEmpty(key, e)
	}
	switch {
	case incr && done > 0:
		c.addDouble(score)
	case incr:
		c.addNull()
	case ch:
		c.addInt(int64(added + changed))
	default:
		c.addInt(int64(added))
	}
}

func cmdZScore(c *conn, args [][]byte) {
	s := c.db.shard(args[1])
	s.rlock(c)
	defer s.runlock(c)
	e, err := readCollection(s, args[1], kindZSet)
	if err != nil {
		c.addError(err.Error())
		return
	}
	c.addScoreOrNull(e, args[2])
}

// addScoreOrNull replies the score of member m in e, a sorted set's entry
// (nil for none): nil when m is not there (ZSCORE, ZMSCORE).
func (c *conn) addScoreOrNull(e *entry, m []byte) {
	if e != nil {
		if score, ok := e.obj.(*zset).scores[string(m)]; ok {
			c.addDouble(score)
			return
		}
	}
	c.addNull()
}

// ZREM key member [member ...]
func cmdZRem(c *conn, args [][]byte) {
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindZSet, false)
	if err != nil || e == nil {
		c.replyErrOrZero(err)
		return
	}
	z := e.obj.(*zset)
	n := 0
	for _, m := range args[2:] {
		if z.remove(string(m)) {
			n++
		}
	}
	s.touchIf(n > 0, key)
	s.dropIfEmpty(key, e)
	c.addInt(int64(n))
}

// addScored appends member and score: as two elements of the enclosing
// array, or in RESP3 with nested as a pair of its own.
func (c *conn) addScored(it zitem, nested bool) {
	if nested && c.proto == 3 {
		c.addArray(2)
	}
	c.addBulkString(it.member)
	c.addDouble(it.score)
}

// ZPOPMIN key [count]
func cmdZPopMin(c *conn, args [][]byte) {
	count, withCount, ok := parseCount(c, args)
	if !ok {
		return
	}
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindZSet, false)
	if err != nil {
		c.addError(err.Error())
		return
	}
	if e == nil {
		c.addArray(0)
		return
	}
	z := e.obj.(*zset)
	n := min(count, z.len())
	switch {
	case !withCount:
		c.addArray(2)
	case c.proto == 3:
		c.addArray(n)
	default:
		c.addArray(2 * n)
	}
	for range n {
		c.addScored(z.popMin(), withCount)
	}
	s.touchIf(n > 0, key)
	s.dropIfEmpty(key, e)
}

// ZRANGE key start stop [BYSCORE | BYLEX] [REV] [LIMIT offset count]
// [WITHSCORES], as valkey's zrangeGenericCommand: the options, then the
// range, then the key.
func cmdZRange(c *conn, args [][]byte) {
	q, ok := parseZRange(c, args[2:], false)
	if !ok {
		return
	}
	s := c.db.shard(args[1])
	s.rlock(c)
	defer s.runlock(c)
	e, err := readCollection(s, args[1], kindZSet)
	if err != nil {
		c.addError(err.Error())
		return
	}
	if e == nil {
		c.addArray(0)
		return
	}
	z := e.obj.(*zset)
	from, to := q.ranks(z)
	c.addZRange(z, from, to, q.rev, q.withScores)
}

// The kinds of range of ZRANGE.
const (
	byRank = iota
	byScore
	byLex
)

// zrangeQuery is a parsed ZRANGE (or ZRANGESTORE) range and its options.
type zrangeQuery struct {
	by              int
	rev, withScores bool
	offset, limit   int64
	start, stop     int64
	scores          scoreRange
	lex             lexRange
}

// parseZRange parses args, ZRANGE's from its start on (ZRANGESTORE's from
// its min: store refuses WITHSCORES), as valkey's zrangeGenericCommand:
// the options first, then the range. It replies with the error and
// returns false.
func parseZRange(c *conn, args [][]byte, store bool) (q zrangeQuery, ok bool) {
	q.limit = -1
	for j := 2; j < len(args); j++ {
		switch a := args[j]; {
		case !store && eqFold(a, "withscores"):
			q.withScores = true
		case eqFold(a, "limit") && len(args)-j-1 >= 2:
			var ok1, ok2 bool
			q.offset, ok1 = parseInt(args[j+1])
			q.limit, ok2 = parseInt(args[j+2])
			if !ok1 || !ok2 {
				c.addError(msgNotInteger)
				return q, false
			}
			j += 2
		case !q.rev && eqFold(a, "rev"):
			q.rev = true
		case q.by == byRank && eqFold(a, "bylex"):
			q.by = byLex
		case q.by == byRank && eqFold(a, "byscore"):
			q.by = byScore
		default:
			c.addError(msgSyntax)
			return q, false
		}
	}
	if q.limit != -1 && q.by == byRank {
		c.addError("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
		return q, false
	}
	if q.withScores && q.by == byLex {
		c.addError("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
		return q, false
	}
	lo, hi := args[0], args[1]
	if q.rev && q.by != byRank {
		lo, hi = hi, lo // given as max, min
	}
	switch q.by {
	case byRank:
		var ok1, ok2 bool
		q.start, ok1 = parseInt(lo)
		q.stop, ok2 = parseInt(hi)
		if !ok1 || !ok2 {
			c.addError(msgNotInteger)
			return q, false
		}
	case byScore:
		if q.scores, ok = parseScoreRange(lo, hi); !ok {
			c.addError("ERR min or max is not a float")
			return q, false
		}
	case byLex:
		if q.lex, ok = parseLexRange(lo, hi); !ok {
			c.addError("ERR min or max not valid string range item")
			return q, false
		}
	}
	return q, true
}

// ranks returns the ranks [from, to) of z's members in q's range (to may
// be below from: none).
func (q zrangeQuery) ranks(z *zset) (from, to int) {
	switch q.by {
	case byRank: // REV counts from the end
		f, t, empty := rangeIndexes(q.start, q.stop, z.len())
		if !empty {
			from, to = f, t+1
			if q.rev {
				from, to = z.len()-1-t, z.len()-f
			}
		}
	case byScore:
		from, to = z.sl.count(q.scores.below), z.sl.count(q.scores.upTo)
	case byLex:
		from, to = z.sl.count(q.lex.below), z.sl.count(q.lex.upTo)
	}
	if q.by != byRank {
		from, to = window(from, to, q.offset, q.limit, q.rev, z)
	}
	return from, max(from, to)
}

// window narrows the ranks [from, to) of a range to LIMIT offset count, as
// valkey does: an offset past the set leaves nothing, a count below 0 is no
// limit, and REV counts the offset from the end. An offset below 0 leaves
// nothing of a set valkey holds as a listpack; of a skip list, it counts
// from the range's other end (zslNthInRange).
func window(from, to int, offset, limit int64, rev bool, z *zset) (int, int) {
	n := int64(z.len())
	switch {
	case offset > 0 && offset >= n, offset < 0 && !z.skiplist, from >= to:
		return 0, 0
	case offset < 0 && offset < -n:
		return 0, 0
	case offset < 0 && rev: // from the range's first member, backwards
		top := from + int(-offset-1)
		if top >= to {
			return 0, 0
		}
		to = top + 1
		if limit >= 0 && int64(to-from) > limit {
			from = to - int(limit)
		}
		return from, to
	case offset < 0: // from the range's last members, forwards
		start := to + int(offset)
		if start < from {
			return 0, 0
		}
		from = start
		if limit >= 0 && int64(to-from) > limit {
			to = from + int(limit)
		}
		return from, to
	}
	if rev {
		to -= int(offset)
		if limit >= 0 && int64(to-from) > limit {
			from = to - int(limit)
		}
		return from, to
	}
	from += int(offset)
	if limit >= 0 && int64(to-from) > limit {
		to = from + int(limit)
	}
	return from, to
}

// addZRange replies with the members of ranks [from, to), in reverse when
// rev.
func (c *conn) addZRange(z *zset, from, to int, rev, withScores bool) {
	n := to - from
	if withScores && c.proto == 2 {
		c.addArray(2 * n)
	} else {
		c.addArray(n)
	}
	if n == 0 {
		return
	}
	nodes := make([]*znode, 0, n)
	for x := z.at(from); len(nodes) < n; x = x.next[0].to {
		nodes = append(nodes, x)
	}
	if rev {
		slices.Reverse(nodes)
	}
	for _, x := range nodes {
		if withScores {
			c.addScored(x.zitem, true)
		} else {
			c.addBulkString(x.member)
		}
	}
}

// scoreRange is a range of scores of ZRANGE BYSCORE; below and upTo tell
// whether a member is below it and not above it.
type scoreRange struct {
	min, max     float64
	minEx, maxEx bool
}

func (r scoreRange) below(x *znode) bool {
	return r.minEx && x.score <= r.min || !r.minEx && x.score < r.min
}

func (r scoreRange) upTo(x *znode) bool {
	return r.maxEx && x.score < r.max || !r.maxEx && x.score <= r.max
}

// parseScoreRange parses ZRANGE BYSCORE's min and max as valkey's
// zslParseRange: a '(' for an exclusive end, then a float as C's strtod
// reads it.
func parseScoreRange(min, max []byte) (r scoreRange, ok bool) {
	end := func(b []byte) (float64, bool, bool) {
		ex := len(b) > 0 && b[0] == '('
		if ex {
			b = b[1:]
		}
		f, ok := parseStrtod(b)
		return f, ex, ok
	}
	var ok1, ok2 bool
	r.min, r.minEx, ok1 = end(min)
	r.max, r.maxEx, ok2 = end(max)
	return r, ok1 && ok2
}

// parseStrtod parses b whole as C's strtod, and refuses nan: leading white
// space, a sign, decimal or hexadecimal, inf and infinity; too large a
// number is an infinity, too small one 0; "" is 0 (strtod converts
// nothing and stops at its end).
func parseStrtod(b []byte) (float64, bool) {
	s := string(b)
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	switch {
	case s == "":
		return 0, true
	case t == "" || strings.IndexByte(t, '_') >= 0:
		return 0, false
	}
	unsigned := strings.TrimLeft(t, "+-")
	if len(t)-len(unsigned) > 1 {
		return 0, false
	}
	if len(unsigned) > 1 && unsigned[0] == '0' && unsigned[1]|0x20 == 'x' && !strings.ContainsAny(t, "pP") {
		t += "p0"
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(f) {
		return 0, false
	}
	return f, true
}

// lexRange is a range of members of ZRANGE BYLEX.
type lexRange struct{ min, max lexEnd }

// lexEnd is an end of a lexRange: "-" (below every member, inf -1), "+"
// (above every one, inf 1), or a member, exclusive or not.
type lexEnd struct {
	s   string
	inf int
	ex  bool
}

// cmp compares m with e.
func (e lexEnd) cmp(m string) int {
	if e.inf != 0 {
		return -e.inf
	}
	return strings.Compare(m, e.s)
}

func (r lexRange) below(x *znode) bool {
	c := r.min.cmp(x.member)
	return r.min.ex && c <= 0 || !r.min.ex && c < 0
}

func (r lexRange) upTo(x *znode) bool {
	c := r.max.cmp(x.member)
	return r.max.ex && c < 0 || !r.max.ex && c <= 0
}

// parseLexRange parses ZRANGE BYLEX's min and max as valkey's
// zslParseLexRange: "-", "+", or '(' or '[' and a member.
func parseLexRange(min, max []byte) (r lexRange, ok bool) {
	end := func(b []byte) (lexEnd, bool) {
		switch {
		case string(b) == "-":
			return lexEnd{inf: -1, ex: true}, true
		case string(b) == "+":
			return lexEnd{inf: 1, ex: true}, true
		case len(b) > 0 && (b[0] == '(' || b[0] == '['):
			return lexEnd{s: string(b[1:]), ex: b[0] == '('}, true
		}
		return lexEnd{}, false
	}
	var ok1, ok2 bool
	r.min, ok1 = end(min)
	r.max, ok2 = end(max)
	return r, ok1 && ok2
}
