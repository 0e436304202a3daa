package server

// The older forms of SET (SETEX, PSETEX, SETNX), and the commands that
// read or change part of a string (GETRANGE, SUBSTR, SETRANGE) or take it
// away (GETDEL), as valkey 8.0's t_string.c.

// SETEX key seconds value, PSETEX key milliseconds value: SET key value EX
// (PX), the expiry checked before the key is looked at.
func cmdSetEx(c *conn, args [][]byte) {
	name, flag := "setex", setEX
	if eqFold(args[0], "psetex") {
		name, flag = "psetex", setPX
	}
	at, ok := expiryAt(c, name, flag, args[2], nowMS())
	if !ok {
		return
	}
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	s.storeString(key, s.getForWrite(key), c.rd.take(args[3]), at)
	s.unlock(c)
	c.addOK()
}

// SETNX key value: 1 if it set the key, 0 if the key held a value of any
// type.
func cmdSetNX(c *conn, args [][]byte) {
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	set := s.getForWrite(key) == nil
	if set {
		s.add(key, &entry{kind: kindString, str: c.rd.take(args[2])})
	}
	s.unlock(c)
	c.addInt(boolInt(set))
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// GETRANGE / SUBSTR key start end, as valkey's getrangeCommand: the
// indexes read before the key; negative ones count from the end, both
// negative with start past end is empty, and the range is clamped to the
// string.
func cmdGetRange(c *conn, args [][]byte) {
	start, ok1 := parseInt(args[2])
	end, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		c.addError(msgNotInteger)
		return
	}
	v, _, ok := readString(c, args[1])
	if !ok {
		return
	}
	n := int64(len(v))
	if start < 0 && end < 0 && start > end {
		c.addBulk(nil)
		return
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		c.addBulk(nil)
		return
	}
	c.bulk(v[start : end+1]) // stored strings are immutable: safe after RUnlock
}

// SETRANGE key offset value, as valkey's setrangeCommand: an empty value
// changes nothing (nor creates the key) and replies with the length; the
// gap up to offset is filled with zero bytes.
func cmdSetRange(c *conn, args [][]byte) {
	offset, ok := parseInt(args[2])
	if !ok {
		c.addError(msgNotInteger)
		return
	}
	if offset < 0 {
		c.addError("ERR offset is out of range")
		return
	}
	key, val := args[1], args[3]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, old, ok := stringForWrite(c, s, key)
	if !ok {
		return
	}
	if len(val) == 0 {
		c.addInt(int64(len(old)))
		return
	}
	// valkey's checkStringLength: the sum, and its overflow.
	if total := uint64(offset) + uint64(len(val)); total > uint64(c.srv.opts.MaxBulkLen) {
		c.addError("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return
	}
	// A new array, never the stored one: readers may hold it.
	v := make([]byte, max(len(old), int(offset)+len(val)))
	copy(v, old)
	copy(v[offset:], val)
	if e == nil {
		s.add(key, &entry{kind: kindString, str: v, enc: encRaw})
	} else {
		s.freed += int64(cap(e.str))
		e.str, e.enc = v, encRaw
		s.touch(key)
	}
	c.addInt(int64(len(v)))
}

// GETDEL key: GET, then the key deleted if it held a string.
func cmdGetDel(c *conn, args [][]byte) {
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	e := s.getForWrite(key)
	var v []byte
	wrong := e != nil && e.kind != kindString
	if e != nil && !wrong {
		v = e.str
		s.drop(key, e)
	}
	s.unlock(c)
	switch {
	case e == nil:
		c.addNull()
	case wrong:
		c.addError(msgWrongType)
	default:
		c.bulk(v) // no longer stored: ours alone
	}
}
