package server

import (
	"math"
	"strconv"
	"strings"
)

// Commands on keys of any type, and on strings.

// DEL / UNLINK key [key ...]
func cmdDel(c *conn, args [][]byte) {
	n := 0
	for _, key := range args[1:] {
		s := c.db.shard(key)
		s.lock(c)
		if s.remove(key) {
			n++
		}
		s.unlock(c)
	}
	c.addInt(int64(n))
}

// EXISTS key [key ...]: a key named twice counts twice.
func cmdExists(c *conn, args [][]byte) {
	n := 0
	for _, key := range args[1:] {
		s := c.db.shard(key)
		s.rlock(c)
		if s.get(key) != nil {
			n++
		}
		s.runlock(c)
	}
	c.addInt(int64(n))
}

func cmdType(c *conn, args [][]byte) {
	s := c.db.shard(args[1])
	s.rlock(c)
	t := "none"
	if e := s.get(args[1]); e != nil {
		t = e.kind.typeName()
	}
	s.runlock(c)
	c.addSimple(t)
}

// EXPIRE key seconds, PEXPIRE key milliseconds, EXPIREAT key
// unix-seconds, PEXPIREAT key unix-milliseconds, each [NX | XX | GT | LT]:
// as valkey's expireGenericCommand. A time that has passed deletes the key.
func cmdExpire(c *conn, args [][]byte) {
	name := strings.ToLower(string(args[0]))
	opts, n := leadingOptions(args[3:], "nx", "xx", "gt", "lt")
	if 3+n < len(args) {
		c.addError("ERR Unsupported option " + string(args[3+n]))
		return
	}
	nx, xx, gt, lt := opts[0], opts[1], opts[2], opts[3]
	if nx && (xx || gt || lt) {
		c.addError("ERR NX and XX, GT or LT options at the same time are not compatible")
		return
	}
	if gt && lt {
		c.addError("ERR GT and LT options at the same time are not compatible")
		return
	}
	when, ok := parseInt(args[2])
	if !ok {
		c.addError(msgNotInteger)
		return
	}
	if name == "expire" || name == "expireat" {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			c.addError("ERR invalid expire time in '" + name + "' command")
			return
		}
		when *= 1000
	}
	now := nowMS()
	if name == "expire" || name == "pexpire" {
		if when > math.MaxInt64-now {
			c.addError("ERR invalid expire time in '" + name + "' command")
			return
		}
		when += now
	}
	s := c.db.shard(args[1])
	s.lock(c)
	defer s.unlock(c)
	e := s.getForWrite(args[1])
	cur := e != nil && e.expireAt != 0
	switch {
	case e == nil,
		nx && cur, xx && !cur,
		gt && (!cur || when <= e.expireAt),
		lt && cur && when >= e.expireAt:
		c.addInt(0)
	case when <= now: // a time that has passed deletes the key
		s.drop(args[1], e)
		c.addInt(1)
	default:
		s.setExpire(args[1], e, when)
		s.touch(args[1])
		c.addInt(1)
	}
}

// TTL / PTTL key: -2 no key, -1 no expiry.
func cmdTTL(c *conn, args [][]byte) {
	s := c.db.shard(args[1])
	s.rlock(c)
	e := s.get(args[1])
	var ttl int64 = -2
	if e != nil {
		ttl = -1
		if e.expireAt != 0 {
			ttl = max(e.expireAt-nowMS(), 0)
			if eqFold(args[0], "ttl") {
				ttl = (ttl + 500) / 1000
			}
		}
	}
	s.runlock(c)
	c.addInt(ttl)
}

func cmdPersist(c *conn, args [][]byte) {
	s := c.db.shard(args[1])
	s.lock(c)
	e := s.getForWrite(args[1])
	n := 0
	if e != nil && e.expireAt != 0 {
		s.setExpire(args[1], e, 0)
		s.touch(args[1])
		n = 1
	}
	s.unlock(c)
	c.addInt(int64(n))
}

func cmdGet(c *conn, args [][]byte) {
	s := c.db.shard(args[1])
	s.rlock(c)
	e := s.get(args[1])
	var v []byte
	wrong := e != nil && e.kind != kindString
	if e != nil {
		v = e.str
	}
	s.runlock(c)
	switch {
	case e == nil:
		c.addNull()
	case wrong:
		c.addError(msgWrongType)
	default:
		c.bulk(v) // stored strings are immutable: safe after RUnlock
	}
}

// storeString stores v as the string under key, in the entry there is if
// any, with the expiry expireAt; v is the caller's to give up (a copy, or a big
// argument taken from the reader). The caller holds s.mu for writing and
// has checked that e, the live entry under key, is nil or what it
// replaces.
func (s *shard) storeString(key []byte, e *entry, v []byte, expireAt int64) {
	if e == nil {
		s.add(key, &entry{kind: kindString, str: v, expireAt: expireAt})
		return
	}
	s.freed += e.bytes()
	e.kind, e.str, e.obj, e.enc = kindString, v, nil, encByContent
	s.setExpire(key, e, expireAt)
	s.touch(key)
}

// The options of SET and GETEX, as flags.
const (
	setNX = 1 << iota
	setXX
	setGet
	setKeepTTL
	setPersist // GETEX
	setEX
	setPX
	setEXAT
	setPXAT
	setExpiry = setEX | setPX | setEXAT | setPXAT
)

// setExpiryOption returns the flag of an option that an expiry follows, or
// 0.
func setExpiryOption(a []byte) int {
	switch {
	case eqFold(a, "ex"):
		return setEX
	case eqFold(a, "px"):
		return setPX
	case eqFold(a, "exat"):
		return setEXAT
	case eqFold(a, "pxat"):
		return setPXAT
	}
	return 0
}

// stringOptions parses the options of SET (set) or GETEX, as valkey's
// parseExtendedStringArgumentsOrReply: an option may be repeated, the last
// expiry counts, and the expiry's value is read later (expiryAt). It
// replies with the error and returns false.
func stringOptions(c *conn, args [][]byte, set bool) (flags int, expire []byte, ok bool) {
	from := 2
	if set {
		from = 3
	}
	for i := from; i < len(args); i++ {
		a := args[i]
		switch f := setExpiryOption(a); {
		case set && eqFold(a, "nx") && flags&setXX == 0:
			flags |= setNX
		case set && eqFold(a, "xx") && flags&setNX == 0:
			flags |= setXX
		case set && eqFold(a, "get"):
			flags |= setGet
		case set && eqFold(a, "keepttl") && flags&setExpiry == 0:
			flags |= setKeepTTL
		case !set && eqFold(a, "persist") && flags&setExpiry == 0:
			flags |= setPersist
		case f != 0 && flags&(setKeepTTL|setPersist|setExpiry&^f) == 0 && i+1 < len(args):
			flags |= f
			i++
			expire = args[i]
		default:
			c.addError(msgSyntax)
			return 0, nil, false
		}
	}
	return flags, expire, true
}

// expiryAt returns the Unix time in milliseconds of the expiry given with
// flags, as valkey's getExpireMillisecondsOrReply; it replies with the
// error of command name and returns false.
func expiryAt(c *conn, name string, flags int, expire []byte, now int64) (int64, bool) {
	n, ok := parseInt(expire)
	if !ok {
		c.addError(msgNotInteger)
		return 0, false
	}
	var at int64
	switch {
	case flags&setEX != 0:
		at, ok = mulMS(n, 1000, now)
	case flags&setPX != 0:
		at, ok = mulMS(n, 1, now)
	case flags&setEXAT != 0:
		at, ok = mulMS(n, 1000, 0)
	default:
		at, ok = mulMS(n, 1, 0)
	}
	if !ok {
		c.addError("ERR invalid expire time in '" + name + "' command")
	}
	return at, ok
}

// SET key value [NX | XX] [GET] [EX seconds | PX milliseconds |
// EXAT unix-seconds | PXAT unix-milliseconds | KEEPTTL], as valkey's
// setGenericCommand. An expiry that has passed deletes the key.
func cmdSet(c *conn, args [][]byte) {
	flags, expire, ok := stringOptions(c, args, true)
	if !ok {
		return
	}
	var expireAt int64
	now := nowMS()
	if expire != nil {
		if expireAt, ok = expiryAt(c, "set", flags, expire, now); !ok {
			return
		}
	}
	key, val := args[1], args[2]
	s := c.db.shard(key)
	s.lock(c)
	e := s.getForWrite(key)
	get := flags&setGet != 0
	if get && e != nil && e.kind != kindString {
		s.unlock(c)
		c.addError(msgWrongType)
		return
	}
	var old []byte
	if e != nil {
		old = e.str
	}
	doSet := !(flags&setNX != 0 && e != nil) && !(flags&setXX != 0 && e == nil)
	switch {
	case !doSet:
	case expire != nil && expireAt <= now:
		if e != nil {
			s.drop(key, e)
		}
	default:
		if flags&setKeepTTL != 0 && e != nil {
			expireAt = e.expireAt
		}
		s.storeString(key, e, c.rd.take(val), expireAt)
	}
	s.unlock(c)
	switch {
	case get && e == nil:
		c.addNull()
	case get:
		c.bulk(old)
	case doSet:
		c.addOK()
	default:
		c.addNull()
	}
}

// GETEX key [EX seconds | PX milliseconds | EXAT unix-seconds |
// PXAT unix-milliseconds | PERSIST], as valkey's getexCommand: the
// expiry's value is checked once the key is found to hold a string; a
// Unix time that has passed deletes it.
func cmdGetEx(c *conn, args [][]byte) {
	flags, expire, ok := stringOptions(c, args, false)
	if !ok {
		return
	}
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	e := s.getForWrite(key)
	var v []byte
	var at int64
	now := nowMS()
	switch {
	case e == nil:
	case e.kind != kindString:
		ok = false
		c.addError(msgWrongType)
	case expire != nil:
		at, ok = expiryAt(c, "getex", flags, expire, now)
	}
	if e != nil && ok {
		v = e.str
		switch {
		case flags&(setEXAT|setPXAT) != 0 && at <= now:
			s.drop(key, e)
		case expire != nil:
			s.setExpire(key, e, at)
			s.touch(key)
		case flags&setPersist != 0 && e.expireAt != 0:
			s.setExpire(key, e, 0)
			s.touch(key)
		}
	}
	s.unlock(c)
	switch {
	case !ok:
	case e == nil:
		c.addNull()
	default:
		c.bulk(v) // stored strings are immutable: safe after Unlock
	}
}

// mulMS returns base + n*unit, the Unix time in milliseconds of an expiry,
// and whether it is valid: n > 0 and no overflow.
func mulMS(n, unit, base int64) (int64, bool) {
	if n <= 0 || n > (math.MaxInt64-base)/unit {
		return 0, false
	}
	return base + n*unit, true
}

// MGET key [key ...]: nil for a missing key or one not holding a string.
func cmdMGet(c *conn, args [][]byte) {
	c.addArray(len(args) - 1)
	for _, key := range args[1:] {
		s := c.db.shard(key)
		s.rlock(c)
		e := s.get(key)
		var v []byte
		ok := e != nil && e.kind == kindString
		if ok {
			v = e.str
		}
		s.runlock(c)
		if ok {
			c.bulk(v)
		} else {
			c.addNull()
		}
	}
}

// MSET key value [key value ...]
func cmdMSet(c *conn, args [][]byte) {
	if len(args)%2 != 1 {
		c.addError("ERR wrong number of arguments for 'mset' command")
		return
	}
	for i := 1; i < len(args); i += 2 {
		s := c.db.shard(args[i])
		s.lock(c)
		s.storeString(args[i], s.getForWrite(args[i]), c.rd.take(args[i+1]), 0)
		s.unlock(c)
	}
	c.addOK()
}

// INCR / DECR key, INCRBY / DECRBY key n
func cmdIncr(c *conn, args [][]byte) {
	by := int64(1)
	if len(args) == 3 {
		n, ok := parseInt(args[2])
		if !ok {
			c.addError(msgNotInteger)
			return
		}
		by = n
	}
	if args[0][0]|0x20 == 'd' { // DECR, DECRBY
		if by == math.MinInt64 {
			c.addError("ERR decrement would overflow")
			return
		}
		by = -by
	}
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	e := s.getForWrite(key)
	var cur int64
	if e != nil {
		if e.kind != kindString {
			s.unlock(c)
			c.addError(msgWrongType)
			return
		}
		n, ok := parseInt(e.str)
		if !ok {
			s.unlock(c)
			c.addError(msgNotInteger)
			return
		}
		cur = n
	}
	if by > 0 && cur > math.MaxInt64-by || by < 0 && cur < math.MinInt64-by {
		s.unlock(c)
		c.addError("ERR increment or decrement would overflow")
		return
	}
	cur += by
	expireAt := int64(0)
	if e != nil {
		expireAt = e.expireAt
	}
	s.storeString(key, e, strconv.AppendInt(make([]byte, 0, 20), cur, 10), expireAt)
	s.unlock(c)
	c.addInt(cur)
}

// APPEND key value: stores a new string (stored strings never change).
func cmdAppend(c *conn, args [][]byte) {
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	e := s.getForWrite(key)
	if e != nil && e.kind != kindString {
		s.unlock(c)
		c.addError(msgWrongType)
		return
	}
	var v []byte
	if e != nil {
		v = e.str
	}
	if len(v)+len(args[2]) > c.srv.opts.MaxBulkLen {
		s.unlock(c)
		c.addError("ERR string exceeds maximum allowed size (proto-max-bulk-len)")
		return
	}
	v = append(v[:len(v):len(v)], args[2]...) // a new array, never the stored one
	if e == nil {
		s.add(key, &entry{kind: kindString, str: v})
	} else {
		s.freed += int64(cap(e.str))
		e.str, e.enc = v, encRaw
		s.touch(key)
	}
	s.unlock(c)
	c.addInt(int64(len(v)))
}

func cmdStrlen(c *conn, args [][]byte) {
	s := c.db.shard(args[1])
	s.rlock(c)
	e := s.get(args[1])
	n, wrong := 0, e != nil && e.kind != kindString
	if e != nil {
		n = len(e.str)
	}
	s.runlock(c)
	if wrong {
		c.addError(msgWrongType)
		return
	}
	c.addInt(int64(n))
}

// readString returns the string under key and whether there is one, or
// replies WRONGTYPE and returns false.
func readString(c *conn, key []byte) (v []byte, found, ok bool) {
	s := c.db.shard(key)
	s.rlock(c)
	e := s.get(key)
	wrong := e != nil && e.kind != kindString
	if e != nil {
		v = e.str
	}
	s.runlock(c)
	if wrong {
		c.addError(msgWrongType)
		return nil, false, false
	}
	return v, e != nil, true // stored strings are immutable: safe after RUnlock
}

// stringForWrite returns the live entry under key (nil if there is none)
// and the string it holds, or replies WRONGTYPE and returns false when key
// holds another type. The caller holds s's lock for writing.
func stringForWrite(c *conn, s *shard, key []byte) (e *entry, old []byte, ok bool) {
	e = s.getForWrite(key)
	if e != nil && e.kind != kindString {
		c.addError(msgWrongType)
		return nil, nil, false
	}
	if e != nil {
		old = e.str
	}
	return e, old, true
}
