package server

import "math/bits"

// The bit commands on strings, as valkey 8.0's bitops.c: bit 0 is the
// most significant bit of the first byte.

const msgBitOffset = "ERR bit offset is not an integer or out of range"

// bitOffset parses a bit offset as valkey's getBitOffsetFromArgument:
// from 0 to below proto-max-bulk-len bytes.
func bitOffset(c *conn, b []byte) (int64, bool) {
	n, ok := parseInt(b)
	if !ok || n < 0 || n>>3 >= int64(c.srv.opts.MaxBulkLen) {
		c.addError(msgBitOffset)
		return 0, false
	}
	return n, true
}

// SETBIT key offset value: the bit's old value; the string grows with
// zero bytes to hold it.
func cmdSetBit(c *conn, args [][]byte) {
	offset, ok := bitOffset(c, args[2])
	if !ok {
		return
	}
	on, ok := parseInt(args[3])
	if !ok || on&^1 != 0 {
		c.addError("ERR bit is not an integer or out of range")
		return
	}
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, old, ok := stringForWrite(c, s, key)
	if !ok {
		return
	}
	if e != nil {
		e.enc = encRaw // valkey unshares the value even when the bit does not change
	}
	i, mask := offset>>3, byte(1)<<(7-offset&7)
	was := i < int64(len(old)) && old[i]&mask != 0
	if grows := i >= int64(len(old)); grows || was != (on == 1) {
		// A new array, never the stored one: readers may hold it.
		v := make([]byte, max(int64(len(old)), i+1))
		copy(v, old)
		v[i] = v[i]&^mask | byte(on)<<(7-offset&7)
		if e == nil {
			s.add(key, &entry{kind: kindString, str: v, enc: encRaw})
		} else {
			s.freed += int64(cap(e.str))
			e.str, e.enc = v, encRaw
			s.touch(key)
		}
	}
	c.addInt(boolInt(was))
}

// GETBIT key offset: 0 past the end of the string or of a missing key.
func cmdGetBit(c *conn, args [][]byte) {
	offset, ok := bitOffset(c, args[2])
	if !ok {
		return
	}
	v, _, ok := readString(c, args[1])
	if !ok {
		return
	}
	i := offset >> 3
	c.addInt(boolInt(i < int64(len(v)) && v[i]&(1<<(7-offset&7)) != 0))
}

// bitRange turns BITCOUNT's and BITPOS's start and end, in bytes or in
// bits (isBit), into the bits [from, to] of a string of n bytes, as
// valkey clamps them; empty when none.
func bitRange(start, end int64, isBit bool, n int64) (from, to int64, empty bool) {
	total := n
	if isBit {
		total <<= 3
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	if end >= total {
		end = total - 1
	}
	if start > end {
		return 0, 0, true
	}
	if isBit {
		return start, end, false
	}
	return start << 3, end<<3 + 7, false
}

// rangeUnit reads BITCOUNT's and BITPOS's BYTE or BIT.
func rangeUnit(c *conn, b []byte) (isBit, ok bool) {
	switch {
	case eqFold(b, "bit"):
		return true, true
	case eqFold(b, "byte"):
		return false, true
	}
	c.addError(msgSyntax)
	return false, false
}

func bitAt(v []byte, i int64) bool { return v[i>>3]&(1<<(7-i&7)) != 0 }

// BITCOUNT key [start [end [BYTE | BIT]]]: the bits set in the range;
// both ends negative with start past end counts nothing. Valkey 8.0 takes
// a start without an end, though its docs do not say so.
func cmdBitCount(c *conn, args [][]byte) {
	var start, end int64
	isBit := false
	end = -1 // the end of the string unless given
	switch len(args) {
	case 2:
	case 3, 4, 5: // as BITPOS: start, the unit, end
		var ok bool
		if start, ok = parseInt(args[2]); !ok {
			c.addError(msgNotInteger)
			return
		}
		if len(args) == 5 {
			if isBit, ok = rangeUnit(c, args[4]); !ok {
				return
			}
		}
		if len(args) >= 4 {
			if end, ok = parseInt(args[3]); !ok {
				c.addError(msgNotInteger)
				return
			}
		}
	default:
		c.addError(msgSyntax)
		return
	}
	v, _, ok := readString(c, args[1])
	if !ok {
		return
	}
	if start < 0 && end < 0 && start > end {
		c.addInt(0)
		return
	}
	from, to, empty := bitRange(start, end, isBit, int64(len(v)))
	if empty {
		c.addInt(0)
		return
	}
	n := 0
	for i := from; i <= to; {
		if i&7 == 0 && i+7 <= to { // a whole byte
			n += bits.OnesCount8(v[i>>3])
			i += 8
			continue
		}
		if bitAt(v, i) {
			n++
		}
		i++
	}
	c.addInt(int64(n))
}

// BITPOS key bit [start [end [BYTE | BIT]]]: the first bit of the range
// that is bit, or -1. A string reads as followed by zero bits unless the
// end is given: the first clear bit may be the one after the range.
func cmdBitPos(c *conn, args [][]byte) {
	bit, ok := parseInt(args[2])
	if !ok {
		c.addError(msgNotInteger)
		return
	}
	if bit != 0 && bit != 1 {
		c.addError("ERR The bit argument must be 1 or 0.")
		return
	}
	var start, end int64
	isBit, endGiven := false, len(args) >= 5
	switch len(args) {
	case 3:
	case 4, 5, 6:
		if start, ok = parseInt(args[3]); !ok {
			c.addError(msgNotInteger)
			return
		}
		if len(args) == 6 {
			if isBit, ok = rangeUnit(c, args[5]); !ok {
				return
			}
		}
		if endGiven {
			if end, ok = parseInt(args[4]); !ok {
				c.addError(msgNotInteger)
				return
			}
		}
	default:
		c.addError(msgSyntax)
		return
	}
	v, found, ok := readString(c, args[1])
	if !ok {
		return
	}
	if !found {
		c.addInt(-bit) // zero bits without end: 0 for a clear one, -1 for a set one
		return
	}
	if !endGiven {
		end = -1
	}
	from, to, empty := bitRange(start, end, isBit, int64(len(v)))
	if empty {
		c.addInt(-1)
		return
	}
	for i := from; i <= to; i++ {
		if bitAt(v, i) == (bit == 1) {
			c.addInt(i)
			return
		}
	}
	if bit == 1 || endGiven {
		c.addInt(-1)
		return
	}
	c.addInt(to + 1)
}
