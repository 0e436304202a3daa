package server

import "math"

// BITOP, BITFIELD and BITFIELD_RO, as valkey 8.0's bitops.c.

// BITOP AND | OR | XOR | NOT destkey key [key ...]: stores the bitwise
// result, as long as the longest source (missing bytes are zeros), and
// replies its length; an empty result deletes destkey.
func cmdBitOp(c *conn, args [][]byte) {
	op := args[1]
	switch {
	case eqFold(op, "and"), eqFold(op, "or"), eqFold(op, "xor"):
	case eqFold(op, "not"):
		if len(args) != 4 {
			c.addError("ERR BITOP NOT must be called with a single source key.")
			return
		}
	default:
		c.addError(msgSyntax)
		return
	}
	unlock := c.lockKeys(args[2:])
	defer unlock()
	srcs := make([][]byte, 0, len(args)-3)
	maxLen := 0
	for _, k := range args[3:] {
		e := c.db.shard(k).get(k)
		if e == nil {
			srcs = append(srcs, nil)
			continue
		}
		if e.kind != kindString {
			c.addError(msgWrongType)
			return
		}
		srcs = append(srcs, e.str)
		maxLen = max(maxLen, len(e.str))
	}
	dst := args[2]
	ds := c.db.shard(dst)
	if maxLen == 0 {
		ds.remove(dst)
		c.addInt(0)
		return
	}
	at := func(v []byte, i int) byte {
		if i < len(v) {
			return v[i]
		}
		return 0
	}
	res := make([]byte, maxLen)
	kind := op[0] | 0x20
	for i := range res {
		out := at(srcs[0], i)
		if kind == 'n' {
			out = ^out
		}
		for _, v := range srcs[1:] {
			b := at(v, i)
			switch kind {
			case 'a':
				out &= b
			case 'o':
				out |= b
			case 'x':
				out ^= b
			}
		}
		res[i] = out
	}
	ds.storeString(dst, ds.getForWrite(dst), res, 0)
	ds.m[string(dst)].enc = encRaw
	c.addInt(int64(maxLen))
}

// The overflow behaviours of BITFIELD.
const (
	bfWrap = iota
	bfSat
	bfFail
)

const (
	bfGet = iota
	bfSet
	bfIncrBy
)

type bitfieldOp struct {
	offset uint64
	i64    int64
	op     int
	ow     int
	bits   int
	signed bool
}

const msgBitfieldType = "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is."

// bitfieldType parses i1..i64 or u1..u63.
func bitfieldType(c *conn, b []byte) (signed bool, bits int, ok bool) {
	if len(b) == 0 || (b[0] != 'i' && b[0] != 'u') {
		c.addError(msgBitfieldType)
		return false, 0, false
	}
	signed = b[0] == 'i'
	n, ok := parseInt(b[1:])
	if !ok || n < 1 || signed && n > 64 || !signed && n > 63 {
		c.addError(msgBitfieldType)
		return false, 0, false
	}
	return signed, int(n), true
}

// bitfieldOffset parses an offset, in bits or, after '#', in fields of
// bits each.
func bitfieldOffset(c *conn, b []byte, bits int) (uint64, bool) {
	hash := len(b) > 0 && b[0] == '#'
	if hash {
		b = b[1:]
	}
	n, ok := parseInt(b)
	if ok && hash {
		n *= int64(bits) // wraps as valkey's does
	}
	if !ok || n < 0 || n>>3 >= int64(c.srv.opts.MaxBulkLen) {
		c.addError(msgBitOffset)
		return 0, false
	}
	return uint64(n), true
}

// BITFIELD key [GET type offset | SET type offset value | INCRBY type
// offset increment | OVERFLOW WRAP | SAT | FAIL ...], and BITFIELD_RO key
// [GET type offset ...].
func cmdBitfield(c *conn, args [][]byte) {
	ro := eqFold(args[0], "bitfield_ro")
	var ops []bitfieldOp
	ow := bfWrap
	readonly := true
	var highest uint64
	for j := 2; j < len(args); j++ {
		rem := len(args) - j - 1
		sub := args[j]
		var op int
		switch {
		case eqFold(sub, "get") && rem >= 2:
			op = bfGet
		case eqFold(sub, "set") && rem >= 3:
			op = bfSet
		case eqFold(sub, "incrby") && rem >= 3:
			op = bfIncrBy
		case eqFold(sub, "overflow") && rem >= 1:
			j++
			switch t := args[j]; {
			case eqFold(t, "wrap"):
				ow = bfWrap
			case eqFold(t, "sat"):
				ow = bfSat
			case eqFold(t, "fail"):
				ow = bfFail
			default:
				c.addError("ERR Invalid OVERFLOW type specified")
				return
			}
			continue
		default:
			c.addError(msgSyntax)
			return
		}
		signed, bits, ok := bitfieldType(c, args[j+1])
		if !ok {
			return
		}
		offset, ok := bitfieldOffset(c, args[j+2], bits)
		if !ok {
			return
		}
		var v int64
		if op != bfGet {
			readonly = false
			highest = max(highest, offset+uint64(bits)-1)
			if v, ok = parseInt(args[j+3]); !ok {
				c.addError(msgNotInteger)
				return
			}
		}
		ops = append(ops, bitfieldOp{offset: offset, i64: v, op: op, ow: ow, bits: bits, signed: signed})
		if op == bfGet {
			j += 2
		} else {
			j += 3
		}
	}
	key := args[1]
	if readonly {
		v, _, ok := readString(c, key)
		if !ok {
			return
		}
		c.addArray(len(ops))
		for _, o := range ops {
			c.addInt(bitfieldGet(v, o))
		}
		return
	}
	if ro {
		c.addError("ERR BITFIELD_RO only supports the GET subcommand")
		return
	}
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, old, ok := stringForWrite(c, s, key)
	if !ok {
		return
	}
	if e != nil {
		e.enc = encRaw // valkey unshares the value before any change
	}
	// A copy, grown with zeros to hold the highest bit written: stored
	// strings never change.
	v := make([]byte, max(uint64(len(old)), highest>>3+1))
	copy(v, old)
	dirty := e == nil || len(v) != len(old)
	changes := 0
	c.addArray(len(ops))
	for _, o := range ops {
		if o.op == bfGet {
			c.addInt(bitfieldGet(v, o))
			continue
		}
		bits := uint64(o.bits)
		oldv := getBitfield(v, o.offset, bits)
		var newv, ret uint64
		var overflow bool
		if o.signed {
			sold := signExtend(oldv, bits)
			var limit int64
			var n int64
			if o.op == bfIncrBy {
				overflow = signedOverflow(sold, o.i64, bits, o.ow, &limit)
				n = sold + o.i64
				if overflow {
					n = limit
				}
				ret = uint64(n)
			} else {
				n = o.i64
				if overflow = signedOverflow(n, 0, bits, o.ow, &limit); overflow {
					n = limit
				}
				ret = uint64(sold)
			}
			newv = uint64(n)
		} else {
			var limit uint64
			if o.op == bfIncrBy {
				newv = oldv + uint64(o.i64)
				if overflow = unsignedOverflow(oldv, o.i64, bits, o.ow, &limit); overflow {
					newv = limit
				}
				ret = newv
			} else {
				newv = uint64(o.i64)
				if overflow = unsignedOverflow(newv, 0, bits, o.ow, &limit); overflow {
					newv = limit
				}
				ret = oldv
			}
		}
		if overflow && o.ow == bfFail {
			c.addNull()
			continue
		}
		c.addInt(int64(ret))
		setBitfield(v, o.offset, bits, newv)
		if dirty || oldv != newv&mask(bits) {
			changes++
		}
	}
	if dirty || changes > 0 {
		at := int64(0)
		if e != nil {
			at = e.expireAt
		}
		s.storeString(key, e, v, at)
		s.m[string(key)].enc = encRaw
	}
}

func mask(bits uint64) uint64 {
	if bits == 64 {
		return math.MaxUint64
	}
	return 1<<bits - 1
}

func signExtend(v, bits uint64) int64 {
	if bits < 64 && v&(1<<(bits-1)) != 0 {
		v |= math.MaxUint64 << bits
	}
	return int64(v)
}

// bitfieldGet reads a field of v, zeros past its end.
func bitfieldGet(v []byte, o bitfieldOp) int64 {
	u := getBitfield(v, o.offset, uint64(o.bits))
	if o.signed {
		return signExtend(u, uint64(o.bits))
	}
	return int64(u)
}

func getBitfield(p []byte, offset, bits uint64) uint64 {
	var v uint64
	for range bits {
		b := offset >> 3
		bit := uint64(0)
		if b < uint64(len(p)) {
			bit = uint64(p[b]>>(7-offset&7)) & 1
		}
		v = v<<1 | bit
		offset++
	}
	return v
}

func setBitfield(p []byte, offset, bits, value uint64) {
	for j := range bits {
		bit := byte(value>>(bits-1-j)) & 1
		b, sh := offset>>3, 7-offset&7
		p[b] = p[b]&^(1<<sh) | bit<<sh
		offset++
	}
}

// unsignedOverflow is valkey's checkUnsignedBitfieldOverflow: 1 (true)
// on overflow or underflow, with *limit what WRAP or SAT store.
func unsignedOverflow(value uint64, incr int64, bits uint64, ow int, limit *uint64) bool {
	mx := mask(bits)
	maxIncr := int64(mx - value)
	minIncr := int64(-value)
	switch {
	case value > mx || incr > 0 && incr > maxIncr:
		if ow == bfSat {
			*limit = mx
		}
	case incr < 0 && incr < minIncr:
		if ow == bfSat {
			*limit = 0
		}
	default:
		return false
	}
	if ow == bfWrap {
		*limit = (value + uint64(incr)) & mx
	}
	return true
}

// signedOverflow is valkey's checkSignedBitfieldOverflow.
func signedOverflow(value, incr int64, bits uint64, ow int, limit *int64) bool {
	mx := int64(math.MaxInt64)
	if bits != 64 {
		mx = 1<<(bits-1) - 1
	}
	mn := -mx - 1
	maxIncr := int64(uint64(mx) - uint64(value))
	minIncr := mn - value
	switch {
	case value > mx || bits != 64 && incr > maxIncr || value >= 0 && incr > 0 && incr > maxIncr:
		if ow == bfSat {
			*limit = mx
		}
	case value < mn || bits != 64 && incr < minIncr || value < 0 && incr < 0 && incr < minIncr:
		if ow == bfSat {
			*limit = mn
		}
	default:
		return false
	}
	if ow == bfWrap {
		c := uint64(value) + uint64(incr)
		if bits < 64 {
			m := uint64(math.MaxUint64) << bits
			if c&(1<<(bits-1)) != 0 {
				c |= m
			} else {
				c &^= m
			}
		}
		*limit = int64(c)
	}
	return true
}
