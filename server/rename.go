package server

// RENAME and RENAMENX, as valkey 8.0's renameGenericCommand.

// lockPair locks the shards of two keys of c's database, in the order of
// their indexes: the order EXEC (multi.go) and MOVE (lower database first)
// keep too, so that none of them deadlocks with another. It returns the
// shards and the function that unlocks them.
func lockPair(c *conn, a, b []byte) (sa, sb *shard, unlock func()) {
	sa, sb = c.db.shard(a), c.db.shard(b)
	if sa == sb {
		sa.lock(c)
		return sa, sb, func() { sa.unlock(c) }
	}
	first, second := sa, sb
	if sb.idx < sa.idx {
		first, second = sb, sa
	}
	first.lock(c)
	second.lock(c)
	return sa, sb, func() {
		second.unlock(c)
		first.unlock(c)
	}
}

// RENAME key newkey, RENAMENX key newkey: the value and its expiry move
// to newkey, replacing what it held (RENAME) or only if it holds nothing
// (RENAMENX). A missing key is an error, even when it is newkey.
func cmdRename(c *conn, args [][]byte) {
	nx := eqFold(args[0], "renamenx")
	key, dst := args[1], args[2]
	src, to, unlock := lockPair(c, key, dst)
	defer unlock()
	e := src.getForWrite(key)
	switch {
	case e == nil:
		c.addError("ERR no such key")
		return
	case string(key) == string(dst):
		if nx {
			c.addInt(0)
		} else {
			c.addOK()
		}
		return
	}
	if old := to.getForWrite(dst); old != nil {
		if nx {
			c.addInt(0)
			return
		}
		to.drop(dst, old)
	}
	// Moved, not copied: unlink forgets the expiry, which add sets again.
	at := e.expireAt
	delete(src.m, string(key))
	src.unlink(e)
	src.touch(key)
	e.expireAt = at
	to.add(dst, e)
	if nx {
		c.addInt(1)
	} else {
		c.addOK()
	}
}
