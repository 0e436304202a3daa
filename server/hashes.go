package server

import (
	"math"
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
