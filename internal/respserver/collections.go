package respserver

import (
	"math"
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
func cmdPush(c *conn, args [][]byte) {
	front := args[0][0]|0x20 == 'l'
	key := args[1]
	s := c.srv.ks.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.collection(key, kindList, true)
	if err != nil {
		c.addError(err.Error())
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
	s := c.srv.ks.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
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
	if !withCount {
		c.addBulk(pop())
	} else {
		n := min(count, l.len())
		c.addArray(n)
		for range n {
			c.addBulk(pop())
		}
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
	s := c.srv.ks.shard(args[1])
	s.mu.RLock()
	defer s.mu.RUnlock()
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

// HSET key field value [field value ...]
func cmdHSet(c *conn, args [][]byte) {
	if len(args)%2 != 0 {
		c.addError("ERR wrong number of arguments for 'hset' command")
		return
	}
	key := args[1]
	s := c.srv.ks.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
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
	c.addInt(int64(added))
}

func cmdHGet(c *conn, args [][]byte) {
	s := c.srv.ks.shard(args[1])
	s.mu.RLock()
	defer s.mu.RUnlock()
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
	s := c.srv.ks.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.collection(key, kindHash, false)
	if err != nil || e == nil {
		c.replyErrOrZero(err)
		return
	}
	n := removeMembers(e.obj.(hashValue), args[2:])
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
		s := c.srv.ks.shard(args[1])
		s.mu.RLock()
		defer s.mu.RUnlock()
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
	s := c.srv.ks.shard(args[1])
	s.mu.RLock()
	defer s.mu.RUnlock()
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
	s := c.srv.ks.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
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
	c.addInt(int64(n))
}

// SREM key member [member ...]
func cmdSRem(c *conn, args [][]byte) {
	key := args[1]
	s := c.srv.ks.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.collection(key, kindSet, false)
	if err != nil || e == nil {
		c.replyErrOrZero(err)
		return
	}
	n := removeMembers(e.obj.(setValue), args[2:])
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
	s := c.srv.ks.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
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
	s := c.srv.ks.shard(args[1])
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, err := readCollection(s, args[1], kindSet)
	if err != nil || e == nil {
		c.replyErrOrZero(err)
		return
	}
	if _, ok := e.obj.(setValue)[string(args[2])]; ok {
		c.addInt(1)
	} else {
		c.addInt(0)
	}
}

// SMEMBERS key: a set in RESP3.
func cmdSMembers(c *conn, args [][]byte) {
	s := c.srv.ks.shard(args[1])
	s.mu.RLock()
	defer s.mu.RUnlock()
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
	s := c.srv.ks.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	e, err := s.collection(key, kindZSet, !xx)
	if err != nil {
		c.addError(err.Error())
		return
	}
	added, changed, done := 0, 0, 0
	var score float64
	if e != nil {
		z := e.obj.(*zset)
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
			// -0 is stored as 0, as valkey stores it in a sorted set of up
			// to 128 members (a larger one keeps -0); INCR replies -0.
			switch {
			case !exists:
				z.set(member, sc+0)
				added++
			case sc != cur:
				z.set(member, sc+0)
				changed++
			}
		}
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
	s := c.srv.ks.shard(args[1])
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, err := readCollection(s, args[1], kindZSet)
	if err != nil {
		c.addError(err.Error())
		return
	}
	if e != nil {
		if score, ok := e.obj.(*zset).scores[string(args[2])]; ok {
			c.addDouble(score)
			return
		}
	}
	c.addNull()
}

// ZREM key member [member ...]
func cmdZRem(c *conn, args [][]byte) {
	key := args[1]
	s := c.srv.ks.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
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
	s := c.srv.ks.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
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
	s.dropIfEmpty(key, e)
}

// ZRANGE key start stop [WITHSCORES]: by index only.
func cmdZRange(c *conn, args [][]byte) {
	withScores := false
	for _, a := range args[4:] {
		if !eqFold(a, "withscores") {
			c.addError(msgSyntax) // BYSCORE, BYLEX, REV, LIMIT: not supported
			return
		}
		withScores = true
	}
	start, ok1 := parseInt(args[2])
	stop, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		c.addError(msgNotInteger)
		return
	}
	s := c.srv.ks.shard(args[1])
	s.mu.RLock()
	defer s.mu.RUnlock()
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
	from, to, empty := rangeIndexes(start, stop, z.len())
	if empty {
		c.addArray(0)
		return
	}
	n := to - from + 1
	switch {
	case !withScores:
		c.addArray(n)
	case c.proto == 3:
		c.addArray(n)
	default:
		c.addArray(2 * n)
	}
	for x := z.at(from); n > 0; x, n = x.next[0].to, n-1 {
		if withScores {
			c.addScored(x.zitem, true)
		} else {
			c.addBulkString(x.member)
		}
	}
}
