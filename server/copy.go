package server

import (
	"maps"
)

// COPY source destination [DB destination-db] [REPLACE], as valkey 8.0's
// copyCommand: the options, then the keys; the copy keeps the expiry.
func cmdCopy(c *conn, args [][]byte) {
	replace, dbIndex := false, c.dbIndex
	for j := 3; j < len(args); j++ {
		switch {
		case eqFold(args[j], "replace"):
			replace = true
		case eqFold(args[j], "db") && j+1 < len(args):
			i, ok := c.dbIndexArg(args[j+1])
			if !ok {
				return
			}
			if i < 0 || i >= len(c.srv.dbs) {
				c.addError(msgDBRange)
				return
			}
			dbIndex = i
			j++
		default:
			c.addError(msgSyntax)
			return
		}
	}
	if c.srv.cluster != nil && (c.dbIndex != 0 || dbIndex != 0) {
		c.addError("ERR Copying to another database is not allowed in cluster mode")
		return
	}
	key, dst := args[1], args[2]
	if dbIndex == c.dbIndex && string(key) == string(dst) {
		c.addError("ERR source and destination objects are the same")
		return
	}
	src, to := c.db.shard(key), c.database(dbIndex).shard(dst)
	// Locked in the order of (database, shard index), as EXEC, MOVE and
	// RENAME lock theirs.
	first, second := src, to
	if dbIndex < c.dbIndex || dbIndex == c.dbIndex && to.idx < src.idx {
		first, second = to, src
	}
	first.lock(c)
	if second != first {
		second.lock(c)
		defer second.unlock(c)
	}
	defer first.unlock(c)
	e := src.getForWrite(key)
	if e == nil {
		c.addInt(0)
		return
	}
	if old := to.getForWrite(dst); old != nil {
		if !replace {
			c.addInt(0)
			return
		}
		to.drop(dst, old)
	}
	to.add(dst, &entry{kind: e.kind, str: e.str, obj: copyValue(e.obj), expireAt: e.expireAt})
	c.addInt(1)
}

// copyValue returns a copy of a collection that changes apart from v; the
// elements are shared, as stored strings never change in place.
func copyValue(v any) any {
	switch o := v.(type) {
	case *list:
		l := &list{}
		for i := range o.len() {
			l.pushBack(o.at(i))
		}
		return l
	case hashValue:
		return maps.Clone(o)
	case setValue:
		return maps.Clone(o)
	case *zset:
		z := newZSet()
		z.skiplist = o.skiplist
		for x := o.sl.head.next[0].to; x != nil; x = x.next[0].to {
			z.set(x.member, x.score)
		}
		return z
	case *stream:
		return o.clone()
	}
	return v // nil: a string, whose bytes are shared
}
