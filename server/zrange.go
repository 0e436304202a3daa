package server

import "slices"

// The sorted set commands beyond ZADD, ZSCORE, ZCARD, ZREM, ZPOPMIN and
// ZRANGE, as valkey 8.0's t_zset.c.

// The older range commands are ZRANGE with the kind of range and its
// direction given by their names: valkey runs them all through
// zrangeGenericCommand. Their options are WITHSCORES and LIMIT alone, read
// in order; anything else (REV, BYSCORE, BYLEX among them) is a syntax
// error.
func zrangeAlias(implied ...string) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		for j := 4; j < len(args); j++ {
			switch {
			case eqFold(args[j], "withscores"):
			case eqFold(args[j], "limit") && len(args)-j-1 >= 2:
				_, ok1 := parseInt(args[j+1])
				_, ok2 := parseInt(args[j+2])
				if !ok1 || !ok2 {
					c.addError(msgNotInteger)
					return
				}
				j += 2
			default:
				c.addError(msgSyntax)
				return
			}
		}
		full := make([][]byte, 0, len(args)+len(implied))
		full = append(full, []byte("zrange"))
		full = append(full, args[1:]...)
		for _, o := range implied {
			full = append(full, []byte(o))
		}
		cmdZRange(c, full)
	}
}

// ZINCRBY key increment member: ZADD key INCR increment member.
func cmdZIncrBy(c *conn, args [][]byte) {
	cmdZAdd(c, [][]byte{[]byte("zadd"), args[1], []byte("incr"), args[2], args[3]})
}

// ZCOUNT key min max, ZLEXCOUNT key min max: the members in a range of
// scores (members), the range read before the key.
func cmdZCount(c *conn, args [][]byte) {
	var below, upTo func(*znode) bool
	if eqFold(args[0], "zlexcount") {
		r, ok := parseLexRange(args[2], args[3])
		if !ok {
			c.addError("ERR min or max not valid string range item")
			return
		}
		below, upTo = r.below, r.upTo
	} else {
		r, ok := parseScoreRange(args[2], args[3])
		if !ok {
			c.addError("ERR min or max is not a float")
			return
		}
		below, upTo = r.below, r.upTo
	}
	s := c.db.shard(args[1])
	s.rlock(c)
	defer s.runlock(c)
	e, err := readCollection(s, args[1], kindZSet)
	if err != nil || e == nil {
		c.replyErrOrZero(err)
		return
	}
	z := e.obj.(*zset)
	c.addInt(int64(max(z.sl.count(upTo)-z.sl.count(below), 0)))
}

// ZREMRANGEBYRANK key start stop, ZREMRANGEBYSCORE key min max,
// ZREMRANGEBYLEX key min max, as valkey's zremrangeGenericCommand: the
// range read first, then the key; the set deleted once empty.
func cmdZRemRange(c *conn, args [][]byte) {
	var start, stop int64
	var below, upTo func(*znode) bool
	switch {
	case eqFold(args[0], "zremrangebyrank"):
		var ok1, ok2 bool
		start, ok1 = parseInt(args[2])
		stop, ok2 = parseInt(args[3])
		if !ok1 || !ok2 {
			c.addError(msgNotInteger)
			return
		}
	case eqFold(args[0], "zremrangebylex"):
		r, ok := parseLexRange(args[2], args[3])
		if !ok {
			c.addError("ERR min or max not valid string range item")
			return
		}
		below, upTo = r.below, r.upTo
	default:
		r, ok := parseScoreRange(args[2], args[3])
		if !ok {
			c.addError("ERR min or max is not a float")
			return
		}
		below, upTo = r.below, r.upTo
	}
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
	// The members to remove have the ranks [from, to).
	var from, to int
	if below == nil {
		f, t, empty := rangeIndexes(start, stop, z.len())
		if !empty {
			from, to = f, t+1
		}
	} else {
		from, to = z.sl.count(below), z.sl.count(upTo)
	}
	n := max(to-from, 0)
	if n > 0 {
		members := make([]string, 0, n)
		for x := z.at(from); len(members) < n; x = x.next[0].to {
			members = append(members, x.member)
		}
		for _, m := range members {
			z.remove(m)
		}
		s.touch(key)
		s.dropIfEmpty(key, e)
	}
	c.addInt(int64(n))
}

// ZRANGESTORE dst src min max [BYSCORE | BYLEX] [REV] [LIMIT offset
// count]: ZRANGE's members stored as the sorted set dst, replacing what
// it held; an empty range deletes dst. It replies with their number.
func cmdZRangeStore(c *conn, args [][]byte) {
	q, ok := parseZRange(c, args[3:], true)
	if !ok {
		return
	}
	dst, key := args[1], args[2]
	to, src, unlock := lockPair(c, dst, key)
	defer unlock()
	e := src.getForWrite(key)
	if e != nil && e.kind != kindZSet {
		c.addError(msgWrongType)
		return
	}
	var out *zset
	if e != nil {
		z := e.obj.(*zset)
		from, end := q.ranks(z)
		if from < end {
			out = newZSet()
			if q.by == byRank {
				// valkey makes the set for the number of members a range of
				// ranks has: a skip list from the start past 128.
				out.willAdd(end-from, 0)
			}
			// Added in the order of the reply, as valkey does: which
			// members come before the set turns into a skip list matters.
			nodes := make([]*znode, 0, end-from)
			for x := z.at(from); len(nodes) < end-from; x = x.next[0].to {
				nodes = append(nodes, x)
			}
			if q.rev {
				slices.Reverse(nodes)
			}
			for _, x := range nodes {
				out.adding(x.member) // a skip list past valkey's listpack limits
				sc := x.score
				if !out.skiplist {
					sc += 0 // a listpack stores -0 as 0, as in ZADD
				}
				out.set(x.member, sc)
			}
		}
	}
	old := to.getForWrite(dst)
	switch {
	case out == nil:
		if old != nil {
			to.drop(dst, old)
		}
		c.addInt(0)
		return
	case old != nil:
		to.drop(dst, old)
	}
	to.add(dst, &entry{kind: kindZSet, obj: out})
	c.addInt(int64(out.len()))
}
