package server

import (
	"fmt"
	"math"
	"strings"
)

// Databases, as valkey's: a connection works on the one SELECT picked
// (conn.db, so a command finds its shard with no lookup of the database),
// 0 at first. A database other than 0 is made by its first use.

// db returns database i, making it if it is not there yet; 0 <= i <
// len(s.dbs).
func (s *Server) db(i int) *keyspace {
	if ks := s.dbs[i].Load(); ks != nil {
		return ks
	}
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	ks := s.dbs[i].Load()
	if ks == nil {
		ks = newKeyspace(s.seed)
		ks.setTracking(s.trk)
		s.dbs[i].Store(ks)
	}
	return ks
}

// dbIndexArg parses a database index as valkey does (a 32-bit integer),
// replying with valkey's error if it is not one.
func (c *conn) dbIndexArg(arg []byte) (int, bool) {
	n, ok := parseInt(arg)
	switch {
	case !ok:
		c.addError(msgNotInteger)
		return 0, false
	case n < math.MinInt32 || n > math.MaxInt32:
		c.addError("ERR value is out of range, value must between -2147483648 and 2147483647")
		return 0, false
	}
	return int(n), true
}

const msgDBRange = "ERR DB index is out of range"

// SELECT index
func cmdSelect(c *conn, args [][]byte) {
	i, ok := c.dbIndexArg(args[1])
	switch {
	case !ok:
	case c.srv.cluster != nil && i != 0:
		c.addError("ERR SELECT is not allowed in cluster mode")
	case i < 0 || i >= len(c.srv.dbs):
		c.addError(msgDBRange)
	default:
		c.db, c.dbIndex = c.database(i), i
		c.addOK()
	}
}

// FLUSHALL / FLUSHDB [ASYNC|SYNC]
func cmdFlush(c *conn, args [][]byte) {
	if len(args) > 2 || len(args) == 2 && !eqFold(args[1], "async") && !eqFold(args[1], "sync") {
		c.addError(msgSyntax)
		return
	}
	if eqFold(args[0], "flushdb") {
		c.db.flush(c)
	} else {
		for i := range c.srv.dbs {
			if ks := c.srv.dbs[i].Load(); ks != nil {
				ks.flush(c)
			}
		}
	}
	c.srv.trk.flushed(c)
	c.addOK()
}

func cmdDBSize(c *conn, _ [][]byte) { c.addInt(int64(c.db.size(c))) }

// keyspaceInfo is INFO's Keyspace section: a line for each database that
// holds keys.
func (s *Server) keyspaceInfo(c *conn, b *strings.Builder) {
	b.WriteString("# Keyspace\r\n")
	for i := range s.dbs {
		ks := s.dbs[i].Load()
		if ks == nil {
			continue
		}
		if keys, expires := ks.counts(c); keys > 0 {
			fmt.Fprintf(b, "db%d:keys=%d,expires=%d,avg_ttl=0\r\n", i, keys, expires)
		}
	}
}

// MOVE key db: moves key, with its expiry, to database db unless a key of
// that name is there.
func cmdMove(c *conn, args [][]byte) {
	if c.srv.cluster != nil {
		c.addError("ERR MOVE is not allowed in cluster mode")
		return
	}
	i, ok := c.dbIndexArg(args[2])
	switch {
	case !ok:
		return
	case i < 0 || i >= len(c.srv.dbs):
		c.addError(msgDBRange)
		return
	case i == c.dbIndex:
		c.addError("ERR source and destination objects are the same")
		return
	}
	key := args[1]
	src, dst := c.db.shard(key), c.database(i).shard(key)
	// Two shards of the same index in two databases: locked in the order
	// of the databases, so two MOVEs the other way round cannot deadlock.
	first, second := src, dst
	if i < c.dbIndex {
		first, second = dst, src
	}
	first.lock(c)
	second.lock(c)
	defer first.unlock(c)
	defer second.unlock(c)
	e := src.getForWrite(key)
	if e == nil || dst.getForWrite(key) != nil {
		c.addInt(0)
		return
	}
	at := e.expireAt
	delete(src.m, string(key))
	src.unlink(e) // clears expireAt
	src.touch(key)
	e.expireAt = at
	dst.add(key, e)
	c.addInt(1)
}

// SWAPDB index1 index2: the two databases' keys change places, for every
// connection.
func cmdSwapDB(c *conn, args [][]byte) {
	if c.srv.cluster != nil {
		c.addError("ERR SWAPDB is not allowed in cluster mode")
		return
	}
	n1, ok1 := parseInt(args[1])
	n2, ok2 := parseInt(args[2])
	switch {
	case !ok1 || n1 < math.MinInt32 || n1 > math.MaxInt32:
		c.addError("ERR invalid first DB index")
		return
	case !ok2 || n2 < math.MinInt32 || n2 > math.MaxInt32:
		c.addError("ERR invalid second DB index")
		return
	case n1 < 0 || n1 >= int64(len(c.srv.dbs)) || n2 < 0 || n2 >= int64(len(c.srv.dbs)):
		c.addError(msgDBRange)
		return
	}
	i, j := int(min(n1, n2)), int(max(n1, n2))
	if i != j {
		a, b := c.database(i), c.database(j)
		for k := range a.shards {
			x, y := &a.shards[k], &b.shards[k]
			x.lock(c)
			y.lock(c)
			// Before the swap, as valkey: a watched key that is in
			// either database is a change, the watches stay.
			x.touchAll(y)
			y.touchAll(x)
			x.m, y.m = y.m, x.m
			x.volatile, y.volatile = y.volatile, x.volatile
			x.vcursor, y.vcursor = y.vcursor, x.vcursor
			x.peak, y.peak = y.peak, x.peak
			x.signalSwapped(y) // blocking.go
			y.signalSwapped(x)
			y.unlock(c)
			x.unlock(c)
		}
	}
	c.addOK()
}
