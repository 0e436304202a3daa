package server

// GETSET and MSETNX, as valkey 8.0's t_string.c.

// GETSET key value: the old string (or nil); the new one has no expiry.
func cmdGetSet(c *conn, args [][]byte) {
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, old, ok := stringForWrite(c, s, key)
	if !ok {
		return
	}
	s.storeString(key, e, c.rd.take(args[2]), 0)
	if e == nil {
		c.addNull()
	} else {
		c.addBulk(old)
	}
}

// MSETNX key value [key value ...]: 1 after setting every key when none of
// them exists, else 0 and nothing set. Every key's shard is held
// throughout: another client sees all the keys set or none.
func cmdMSetNX(c *conn, args [][]byte) {
	if len(args)%2 != 1 {
		c.addError("ERR wrong number of arguments for 'msetnx' command")
		return
	}
	keys := make([][]byte, 0, len(args)/2)
	for i := 1; i < len(args); i += 2 {
		keys = append(keys, args[i])
	}
	unlock := c.lockKeys(keys)
	defer unlock()
	for _, k := range keys {
		if c.db.shard(k).getForWrite(k) != nil {
			c.addInt(0)
			return
		}
	}
	for i := 1; i < len(args); i += 2 {
		s := c.db.shard(args[i])
		s.storeString(args[i], s.getForWrite(args[i]), c.rd.take(args[i+1]), 0)
	}
	c.addInt(1)
}
