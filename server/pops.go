package server

import (
	"math"
	"time"
)

// The pops of lists and sorted sets that take from several keys or move
// between two, and their blocking forms, as valkey 8.0's t_list.c and
// t_zset.c: LMOVE, RPOPLPUSH, LMPOP, BLPOP, BRPOP, BLMOVE, BRPOPLPUSH,
// BLMPOP; ZPOPMAX, ZMPOP, BZPOPMIN, BZPOPMAX, BZMPOP. Each locks the
// shards of all its keys at once (lockKeys), so that a blocking one checks
// its keys and blocks (blocking.go) with no write in between.

// listEnd parses LEFT or RIGHT: true for LEFT (the head).
func listEnd(c *conn, b []byte) (head, ok bool) {
	switch {
	case eqFold(b, "left"):
		return true, true
	case eqFold(b, "right"):
		return false, true
	}
	c.addError(msgSyntax)
	return false, false
}

// popEnd pops l's head or tail.
func popEnd(l *list, head bool) []byte {
	if head {
		return l.popFront()
	}
	return l.popBack()
}

// BLPOP / BRPOP key [key ...] timeout
func cmdBPop(c *conn, args [][]byte) {
	head := args[0][1]|0x20 == 'l'
	timeout, ok := parseTimeout(c, args[len(args)-1])
	if !ok {
		return
	}
	keys := args[1 : len(args)-1]
	defer c.lockKeys(keys)()
	if !c.popFirst(keys, head, 0) && !c.tryBlock(kindList, args, keys, timeout) {
		c.addNullArray()
	}
}

// popFirst pops from the first of keys that holds a list, as valkey's
// blockingPopGenericCommand: one element as [key, element] when count is
// 0, else up to count as [key, [elements]]. It reports whether it
// replied (an element, or WRONGTYPE); the caller holds the keys' shards.
func (c *conn) popFirst(keys [][]byte, head bool, count int) bool {
	for _, key := range keys {
		s := c.db.shard(key)
		e, err := s.collection(key, kindList, false)
		if err != nil {
			c.addError(err.Error())
			return true
		}
		if e == nil {
			continue
		}
		l := e.obj.(*list)
		c.addArray(2)
		c.addBulk(key)
		if count == 0 {
			c.addBulk(popEnd(l, head))
		} else {
			n := min(count, l.len())
			c.addArray(n)
			for range n {
				c.addBulk(popEnd(l, head))
			}
		}
		s.touch(key)
		s.dropIfEmpty(key, e)
		return true
	}
	return false
}

// tryBlock blocks c on keys unless it may not (inside EXEC); it reports
// whether it did.
func (c *conn) tryBlock(k kind, args, keys [][]byte, timeout time.Duration) bool {
	if !c.mayBlock() {
		return false
	}
	c.block(k, args, keys, timeout)
	return true
}

// LMOVE source destination LEFT|RIGHT LEFT|RIGHT, RPOPLPUSH source
// destination, and the blocking BLMOVE (timeout last) and BRPOPLPUSH
// source destination timeout.
func cmdLMove(c *conn, args [][]byte) {
	from, to := false, true // RPOPLPUSH's
	blocking := args[0][0]|0x20 == 'b'
	if len(args) >= 5 {
		var ok bool
		if from, ok = listEnd(c, args[3]); !ok {
			return
		}
		if to, ok = listEnd(c, args[4]); !ok {
			return
		}
	}
	var timeout time.Duration
	if blocking {
		var ok bool
		if timeout, ok = parseTimeout(c, args[len(args)-1]); !ok {
			return
		}
	}
	key, dst := args[1], args[2]
	src, to_, unlock := lockPair(c, key, dst)
	defer unlock()
	e, err := src.collection(key, kindList, false)
	switch {
	case err != nil:
		c.addError(err.Error())
		return
	case e == nil && blocking && c.tryBlock(kindList, args, args[1:2], timeout):
		return
	case e == nil:
		c.addNull()
		return
	}
	if d := to_.getForWrite(dst); d != nil && d.kind != kindList {
		c.addError(msgWrongType)
		return
	}
	v := popEnd(e.obj.(*list), from)
	d, _ := to_.collection(dst, kindList, true)
	if to {
		d.obj.(*list).pushFront(v)
	} else {
		d.obj.(*list).pushBack(v)
	}
	to_.touch(dst)
	src.touch(key)
	src.dropIfEmpty(key, e)
	c.addBulk(v)
}

// mpopArgs are LMPOP's and ZMPOP's arguments from numkeys on.
type mpopArgs struct {
	keys  [][]byte
	first bool // LEFT, MIN
	count int  // 1 without COUNT
}

// parseMPop parses numkeys key [key ...] where [COUNT count] from
// args[at], as valkey's lmpopGenericCommand and zmpopGenericCommand:
// where is LEFT|RIGHT, or MIN|MAX for a sorted set.
func parseMPop(c *conn, args [][]byte, at int, zset bool) (m mpopArgs, ok bool) {
	n, valid := parseInt(args[at])
	if !valid || n < 1 {
		c.addError("ERR numkeys should be greater than 0")
		return m, false
	}
	if n >= int64(len(args)-at-1) {
		c.addError(msgSyntax)
		return m, false
	}
	m.keys = args[at+1 : at+1+int(n)]
	where := args[at+1+int(n)]
	switch {
	case !zset && eqFold(where, "left"), zset && eqFold(where, "min"):
		m.first = true
	case !zset && eqFold(where, "right"), zset && eqFold(where, "max"):
	default:
		c.addError(msgSyntax)
		return m, false
	}
	m.count = -1
	for i := at + 2 + int(n); i < len(args); i++ {
		if m.count != -1 || !eqFold(args[i], "count") || i == len(args)-1 {
			c.addError(msgSyntax)
			return m, false
		}
		i++
		v, valid := parseInt(args[i])
		if !valid || v < 1 {
			c.addError("ERR count should be greater than 0")
			return m, false
		}
		m.count = int(min(v, math.MaxInt32))
	}
	if m.count == -1 {
		m.count = 1
	}
	return m, true
}

// parseMPopCall parses LMPOP's and ZMPOP's arguments (zset) or, when
// args[0] is BLMPOP or BZMPOP, the timeout first and then those: the
// arguments are checked before the timeout, as valkey does.
func parseMPopCall(c *conn, args [][]byte, zset bool) (m mpopArgs, blocking bool, timeout time.Duration, ok bool) {
	blocking = args[0][0]|0x20 == 'b'
	at := 1
	if blocking {
		at = 2
	}
	if m, ok = parseMPop(c, args, at, zset); !ok {
		return m, blocking, 0, false
	}
	if blocking {
		if timeout, ok = parseTimeout(c, args[1]); !ok {
			return m, blocking, 0, false
		}
	}
	return m, blocking, timeout, true
}

// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count], and BLMPOP
// timeout numkeys ...
func cmdLMPop(c *conn, args [][]byte) {
	m, blocking, timeout, ok := parseMPopCall(c, args, false)
	if !ok {
		return
	}
	defer c.lockKeys(m.keys)()
	if c.popFirst(m.keys, m.first, m.count) {
		return
	}
	if !blocking || !c.tryBlock(kindList, args, m.keys, timeout) {
		c.addNullArray()
	}
}

// --- sorted sets ---

// popMax removes and returns the last member; the set is not empty.
func (z *zset) popMax() zitem {
	it := z.at(z.len() - 1).zitem
	z.remove(it.member)
	return it
}

// zpopFrom pops from the first of keys that exists, as valkey's
// genericZpopCommand: count -1 is a single pop; emitKey puts the key
// first, nested a pair per member (RESP3's ZPOPMIN COUNT, and ZMPOP's
// [key, [[member, score] ...]] in both); none found replies nil (nilEmpty)
// or an empty array. It reports whether a key existed (or WRONGTYPE); the
// caller holds the keys' shards.
func (c *conn) zpopFrom(keys [][]byte, fromMin bool, emitKey bool, count int, nested, nilEmpty bool) bool {
	var s *shard
	var e *entry
	var key []byte
	for _, k := range keys {
		s = c.db.shard(k)
		var err error
		if e, err = s.collection(k, kindZSet, false); err != nil {
			c.addError(err.Error())
			return true
		}
		if e != nil {
			key = k
			break
		}
	}
	switch {
	case e == nil && nilEmpty:
		c.addNullArray()
		return false
	case e == nil:
		c.addArray(0)
		return false
	case count == 0:
		c.addArray(0)
		return true
	}
	z := e.obj.(*zset)
	n := z.len()
	if count > 0 {
		n = min(count, n)
	} else {
		n = 1
	}
	switch {
	case !nested && !emitKey:
		c.addArray(2 * n)
	case nested && !emitKey:
		c.addArray(n)
	case !nested:
		c.addArray(2*n + 1)
		c.addBulk(key)
	default:
		c.addArray(2)
		c.addBulk(key)
		c.addArray(n)
	}
	for range n {
		it := zitem{}
		if fromMin {
			it = z.popMin()
		} else {
			it = z.popMax()
		}
		if nested {
			c.addArray(2)
		}
		c.addBulkString(it.member)
		c.addDouble(it.score)
	}
	s.touch(key)
	s.dropIfEmpty(key, e)
	return true
}

// ZPOPMAX key [count] (ZPOPMIN is collections.go's cmdZPopMin).
func cmdZPopMax(c *conn, args [][]byte) {
	count, withCount, ok := parseCount(c, args)
	if !ok {
		return
	}
	if !withCount {
		count = -1
	}
	defer c.lockKeys(args[1:2])()
	c.zpopFrom(args[1:2], false, false, count, c.proto == 3 && withCount, false)
}

// BZPOPMIN / BZPOPMAX key [key ...] timeout
func cmdBZPop(c *conn, args [][]byte) {
	fromMin := args[0][6]|0x20 == 'i'
	timeout, ok := parseTimeout(c, args[len(args)-1])
	if !ok {
		return
	}
	keys := args[1 : len(args)-1]
	defer c.lockKeys(keys)()
	if c.zpopBlocking(keys, fromMin, -1, false) {
		return
	}
	if !c.tryBlock(kindZSet, args, keys, timeout) {
		c.addNullArray()
	}
}

// zpopBlocking is valkey's blockingGenericZpopCommand before it blocks:
// the first of keys that exists is popped; it reports whether one did (or
// WRONGTYPE).
func (c *conn) zpopBlocking(keys [][]byte, fromMin bool, count int, nested bool) bool {
	for _, key := range keys {
		s := c.db.shard(key)
		e, err := s.collection(key, kindZSet, false)
		if err != nil {
			c.addError(err.Error())
			return true
		}
		if e != nil {
			return c.zpopFrom([][]byte{key}, fromMin, true, count, nested, nested)
		}
	}
	return false
}

// ZMPOP numkeys key [key ...] MIN|MAX [COUNT count], and BZMPOP timeout
// numkeys ...
func cmdZMPop(c *conn, args [][]byte) {
	m, blocking, timeout, ok := parseMPopCall(c, args, true)
	if !ok {
		return
	}
	defer c.lockKeys(m.keys)()
	if !blocking {
		c.zpopFrom(m.keys, m.first, true, m.count, true, true)
		return
	}
	if c.zpopBlocking(m.keys, m.first, m.count, true) {
		return
	}
	if !c.tryBlock(kindZSet, args, m.keys, timeout) {
		c.addNullArray()
	}
}
