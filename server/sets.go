package server

import "math/rand/v2"

// The set commands beyond SADD, SREM, SPOP, SCARD, SISMEMBER and
// SMEMBERS, and the set algebra (setops.go), as valkey 8.0's t_set.c.

// SMISMEMBER key member [member ...]: 1 or 0 for each.
func cmdSMIsMember(c *conn, args [][]byte) {
	s := c.db.shard(args[1])
	s.rlock(c)
	defer s.runlock(c)
	e, err := readCollection(s, args[1], kindSet)
	if err != nil {
		c.addError(err.Error())
		return
	}
	c.addArray(len(args) - 2)
	for _, m := range args[2:] {
		c.addIsMember(e, m)
	}
}

// SMOVE source destination member, as valkey's smoveCommand: 0 for a
// missing source, the types of both checked, a no-op for the same set.
func cmdSMove(c *conn, args [][]byte) {
	src, dst, member := args[1], args[2], args[3]
	ss, ds, unlock := lockPair(c, src, dst)
	defer unlock()
	se, err1 := readCollection(ss, src, kindSet)
	de, err2 := readCollection(ds, dst, kindSet)
	switch {
	case se == nil && err1 == nil:
		c.addInt(0)
		return
	case err1 != nil || err2 != nil:
		c.addError(msgWrongType)
		return
	}
	from := se.obj.(setValue)
	_, in := from[string(member)]
	if se == de || !in {
		if in {
			c.addInt(1)
		} else {
			c.addInt(0)
		}
		return
	}
	delete(from, string(member))
	ss.touch(src)
	ss.dropIfEmpty(src, se)
	if de == nil {
		de = &entry{kind: kindSet, obj: setValue{}}
		ds.add(dst, de)
	}
	to := de.obj.(setValue)
	if _, ok := to[string(member)]; !ok {
		to[string(member)] = struct{}{}
		ds.touch(dst)
	}
	c.addInt(1)
}

// SRANDMEMBER key [count], as valkey's srandmemberCommand: without a
// count a member or nil; with one, the count first, then the key, and an
// array (in RESP3 too).
func cmdSRandMember(c *conn, args [][]byte) {
	if len(args) > 3 {
		c.addError(msgSyntax)
		return
	}
	s, e, count, _ := randomFrom(c, args, kindSet, "")
	if e == nil {
		return
	}
	defer s.runlock(c)
	set := e.obj.(setValue)
	members := make([]string, 0, len(set))
	for m := range set {
		members = append(members, m)
	}
	if len(args) == 2 {
		c.addBulkString(members[rand.IntN(len(members))])
		return
	}
	k, pick := randomPicks(count, len(members))
	c.addArray(k)
	for j := range k {
		c.addBulkString(members[pick(j)])
	}
}
