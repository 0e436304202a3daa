package server

import (
	"math/rand/v2"
	"strconv"
	"time"
)

// TOUCH, the absolute expiry times, RANDOMKEY and the server's clock.

// TOUCH key [key ...]: how many of the keys exist. Valkey updates their
// access time, which this server does not keep.
func cmdTouch(c *conn, args [][]byte) { cmdExists(c, args) }

// EXPIRETIME / PEXPIRETIME key: the Unix time of the key's expiry, in
// seconds (rounded, as valkey's ttlGenericCommand) or milliseconds; -2 no
// key, -1 no expiry.
func cmdExpireTime(c *conn, args [][]byte) {
	s := c.db.shard(args[1])
	s.rlock(c)
	e := s.get(args[1])
	var at int64 = -2
	if e != nil {
		at = -1
		if e.expireAt != 0 {
			at = e.expireAt
			if eqFold(args[0], "expiretime") {
				// (at + 500) / 1000 without its overflow near the
				// largest PXAT: valkey's reply there is the true quotient.
				at = at/1000 + (at%1000+500)/1000
			}
		}
	}
	s.runlock(c)
	c.addInt(at)
}

// TIME: the Unix time in seconds and the microseconds within it, as two
// bulk strings.
func cmdTime(c *conn, _ [][]byte) {
	now := time.Now().UnixMicro()
	var b [20]byte
	c.addArray(2)
	c.addBulk(strconv.AppendInt(b[:0], now/1e6, 10))
	c.addBulk(strconv.AppendInt(b[:0], now%1e6, 10))
}

// RANDOMKEY: a key of the database picked at random, nil when it has
// none. Expired keys are passed over, not picked.
func cmdRandomKey(c *conn, _ [][]byte) {
	start := rand.IntN(numShards)
	for i := range numShards {
		s := &c.db.shards[(start+i)%numShards]
		s.rlock(c)
		now := nowMS()
		for k, e := range s.m { // Go's map order starts at a random place
			if !e.expired(now) {
				s.runlock(c)
				c.addBulkString(k)
				return
			}
		}
		s.runlock(c)
	}
	c.addNull()
}
