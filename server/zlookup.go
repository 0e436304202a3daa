package server

import "math/rand/v2"

// Sorted set commands that look members up: ZMSCORE, ZRANK, ZREVRANK and
// ZRANDMEMBER, as valkey 8.0's t_zset.c.

// ZMSCORE key member [member ...]: a score or nil for each.
func cmdZMScore(c *conn, args [][]byte) {
	s := c.db.shard(args[1])
	s.rlock(c)
	defer s.runlock(c)
	e, err := readCollection(s, args[1], kindZSet)
	if err != nil {
		c.addError(err.Error())
		return
	}
	c.addArray(len(args) - 2)
	for _, m := range args[2:] {
		c.addScoreOrNull(e, m)
	}
}

// ZRANK / ZREVRANK key member [WITHSCORE]: the rank (and score) or nil.
func cmdZRank(c *conn, args [][]byte) {
	rev := eqFold(args[0], "zrevrank")
	if len(args) > 4 {
		if rev {
			c.addError("ERR wrong number of arguments for 'zrevrank' command")
		} else {
			c.addError("ERR wrong number of arguments for 'zrank' command")
		}
		return
	}
	withScore := len(args) == 4
	if withScore && !eqFold(args[3], "withscore") {
		c.addError(msgSyntax)
		return
	}
	none := c.addNull
	if withScore {
		none = c.addNullArray
	}
	s := c.db.shard(args[1])
	s.rlock(c)
	defer s.runlock(c)
	e, err := readCollection(s, args[1], kindZSet)
	switch {
	case err != nil:
		c.addError(err.Error())
		return
	case e == nil:
		none()
		return
	}
	z := e.obj.(*zset)
	sc, ok := z.scores[string(args[2])]
	if !ok {
		none()
		return
	}
	it := zitem{sc, string(args[2])}
	rank := z.sl.count(func(x *znode) bool { return x.less(it) })
	if rev {
		rank = z.len() - 1 - rank
	}
	if withScore {
		c.addArray(2)
	}
	c.addInt(int64(rank))
	if withScore {
		c.addDouble(sc)
	}
}

// ZRANDMEMBER key [count [WITHSCORES]], as valkey's zrandmemberCommand:
// the count and option first, then the key. In RESP3 a member and its
// score are a pair of their own.
func cmdZRandMember(c *conn, args [][]byte) {
	s, e, count, withScores := randomFrom(c, args, kindZSet, "withscores")
	if e == nil {
		return
	}
	defer s.runlock(c)
	z := e.obj.(*zset)
	if len(args) < 3 {
		c.addBulkString(z.at(rand.IntN(z.len())).member)
		return
	}
	k, pick := randomPicks(count, z.len())
	if withScores && c.proto == 2 {
		c.addArray(2 * k)
	} else {
		c.addArray(k)
	}
	for j := range k {
		it := z.at(pick(j)).zitem
		if withScores {
			c.addScored(it, true)
		} else {
			c.addBulkString(it.member)
		}
	}
}
