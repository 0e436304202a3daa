package server

import (
	"math"
	"math/rand/v2"
	"strconv"
)

// The hash commands beyond HSET, HGET, HDEL, HLEN and HGETALL, as valkey
// 8.0's t_hash.c.

// HMGET key field [field ...]: nil for each field missing, all nil for a
// missing key.
func cmdHMGet(c *conn, args [][]byte) {
	s := c.db.shard(args[1])
	s.rlock(c)
	defer s.runlock(c)
	e, err := readCollection(s, args[1], kindHash)
	if err != nil {
		c.addError(err.Error())
		return
	}
	c.addArray(len(args) - 2)
	for _, f := range args[2:] {
		if e != nil {
			if v, ok := e.obj.(hashValue)[string(f)]; ok {
				c.addBulk(v)
				continue
			}
		}
		c.addNull()
	}
}

// HSETNX key field value: 1 if it set the field, 0 if it was there.
func cmdHSetNX(c *conn, args [][]byte) {
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
	if _, ok := h[string(args[2])]; ok {
		c.addInt(0)
		return
	}
	h[string(args[2])] = c.rd.take(args[3])
	s.touch(key)
	c.addInt(1)
}

// HSTRLEN key field: the length of the field's value, 0 if there is none.
func cmdHStrlen(c *conn, args [][]byte) {
	s := c.db.shard(args[1])
	s.rlock(c)
	defer s.runlock(c)
	e, err := readCollection(s, args[1], kindHash)
	if err != nil || e == nil {
		c.replyErrOrZero(err)
		return
	}
	c.addInt(int64(len(e.obj.(hashValue)[string(args[2])])))
}

// HINCRBY key field increment, as valkey's hincrbyCommand: the increment
// read first, then the hash (made if missing), then the field's value.
func cmdHIncrBy(c *conn, args [][]byte) {
	incr, ok := parseInt(args[3])
	if !ok {
		c.addError(msgNotInteger)
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
	var cur int64
	if v, found := h[string(args[2])]; found {
		if cur, ok = parseInt(v); !ok {
			c.addError("ERR hash value is not an integer")
			return
		}
	}
	if incr < 0 && cur < 0 && incr < math.MinInt64-cur || incr > 0 && cur > 0 && incr > math.MaxInt64-cur {
		c.addError("ERR increment or decrement would overflow")
		return
	}
	cur += incr
	h[string(args[2])] = strconv.AppendInt(nil, cur, 10)
	s.touch(key)
	c.addInt(cur)
}

// HINCRBYFLOAT key field increment: INCRBYFLOAT on a field; the
// increment must be finite.
func cmdHIncrByFloat(c *conn, args [][]byte) {
	incr, ok := parseLongDouble(args[3])
	if !ok {
		c.addError(msgNotFloat)
		return
	}
	if incr.inf != 0 {
		c.addError("ERR value is NaN or Infinity")
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
	cur := ldZero()
	if v, found := h[string(args[2])]; found {
		if cur, ok = parseLongDouble(v); !ok {
			c.addError("ERR hash value is not a float")
			return
		}
	}
	sum, ok := ldAdd(cur, incr)
	if !ok {
		c.addError("ERR increment would produce NaN or Infinity")
		return
	}
	v := ldFormat(sum)
	h[string(args[2])] = v
	s.touch(key)
	c.addBulk(v)
}

// HEXISTS key field
func cmdHExists(c *conn, args [][]byte) {
	s := c.db.shard(args[1])
	s.rlock(c)
	defer s.runlock(c)
	e, err := readCollection(s, args[1], kindHash)
	if err != nil || e == nil {
		c.replyErrOrZero(err)
		return
	}
	if _, ok := e.obj.(hashValue)[string(args[2])]; ok {
		c.addInt(1)
	} else {
		c.addInt(0)
	}
}

// HKEYS key, HVALS key: an array in RESP3 too.
func cmdHKeysVals(c *conn, args [][]byte) {
	vals := eqFold(args[0], "hvals")
	s := c.db.shard(args[1])
	s.rlock(c)
	defer s.runlock(c)
	e, err := readCollection(s, args[1], kindHash)
	if err != nil {
		c.addError(err.Error())
		return
	}
	if e == nil {
		c.addArray(0)
		return
	}
	h := e.obj.(hashValue)
	c.addArray(len(h))
	for f, v := range h {
		if vals {
			c.addBulk(v)
		} else {
			c.addBulkString(f)
		}
	}
}

// randomFrom begins HRANDFIELD, SRANDMEMBER and ZRANDMEMBER: the count
// and its option withOpt first (when given), then the collection of kind k
// under args[1]; a missing key gets nil, or an empty array with a count.
// It returns the entry with its shard read-locked (the caller unlocks it),
// or a nil entry when it has replied.
func randomFrom(c *conn, args [][]byte, k kind, withOpt string) (s *shard, e *entry, count int64, with bool) {
	if len(args) >= 3 {
		var ok bool
		if count, with, ok = randomCount(c, args, withOpt); !ok {
			return nil, nil, 0, false
		}
	}
	s = c.db.shard(args[1])
	s.rlock(c)
	e, err := readCollection(s, args[1], k)
	if err == nil && e != nil {
		return s, e, count, with
	}
	s.runlock(c)
	switch {
	case err != nil:
		c.addError(err.Error())
	case len(args) >= 3:
		c.addArray(0)
	default:
		c.addNull()
	}
	return nil, nil, 0, false
}

// randomCount parses the count of HRANDFIELD, SRANDMEMBER and
// ZRANDMEMBER (valkey's range -LONG_MAX to LONG_MAX) and, when withOpt is
// given, its option (WITHVALUES, WITHSCORES), with which the count must
// lie within half that range. It replies with the error and returns false.
func randomCount(c *conn, args [][]byte, withOpt string) (count int64, with, ok bool) {
	n, valid := parseInt(args[2])
	switch {
	case !valid:
		c.addError(msgNotInteger)
		return 0, false, false
	case n == math.MinInt64:
		c.addError("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		return 0, false, false
	case withOpt == "" && len(args) > 3,
		len(args) > 4, len(args) == 4 && !eqFold(args[3], withOpt):
		c.addError(msgSyntax)
		return 0, false, false
	case len(args) == 4 && (n < -math.MaxInt64/2 || n > math.MaxInt64/2):
		c.addError("ERR value is out of range")
		return 0, false, false
	}
	return n, len(args) == 4, true
}

// randomPicks says how many elements a random command with count picks
// from an n-element collection, and pick returns the index of each in
// turn: for count > 0 distinct ones, up to n (all of them in their order
// when count covers them); below 0, -count of them (at most 2^31-1),
// repeats allowed, drawn as they are replied.
func randomPicks(count int64, n int) (k int, pick func(i int) int) {
	switch {
	case count < 0:
		return int(min(-count, math.MaxInt32)), func(int) int { return rand.IntN(n) }
	case count >= int64(n):
		return n, func(i int) int { return i }
	}
	perm := rand.Perm(n)
	return int(count), func(i int) int { return perm[i] }
}

// HRANDFIELD key [count [WITHVALUES]], as valkey's hrandfieldCommand: the
// count and option first, then the key. In RESP3 a field and its value
// are a pair of their own.
func cmdHRandField(c *conn, args [][]byte) {
	s, e, count, withValues := randomFrom(c, args, kindHash, "withvalues")
	if e == nil {
		return
	}
	defer s.runlock(c)
	h := e.obj.(hashValue)
	fields := make([]string, 0, len(h))
	for f := range h {
		fields = append(fields, f)
	}
	if len(args) < 3 {
		c.addBulkString(fields[rand.IntN(len(fields))])
		return
	}
	k, pick := randomPicks(count, len(fields))
	if withValues && c.proto == 2 {
		c.addArray(2 * k)
	} else {
		c.addArray(k)
	}
	for j := range k {
		i := pick(j)
		if withValues && c.proto == 3 {
			c.addArray(2)
		}
		c.addBulkString(fields[i])
		if withValues {
			c.addBulk(h[fields[i]])
		}
	}
}
