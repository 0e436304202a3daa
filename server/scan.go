package server

import (
	"hash/maphash"
	"math"
	"slices"
	"strconv"
)

// HSCAN, SSCAN and ZSCAN: SCAN over a key's collection, as valkey 8.0's
// scanGenericCommand. A collection valkey would hold in a listpack (up to
// 128 elements) is returned whole in one call, cursor 0, as valkey
// does; a sorted set in its order. A larger one (or a sorted set valkey
// holds as a skip list) is walked in the order of
// its members' hashes: the cursor is the hash the next call starts from,
// and a call returns the members of whole hash values, at least COUNT of
// them. So, as in valkey, every element there from the first call to the
// last is returned once, and one added or removed meanwhile may or may
// not be.

// scanSeed hashes the members of a collection for its cursors; the same
// for the life of the process, so that a cursor stays valid.
var scanSeed = maphash.MakeSeed()

// scanWhole is the most elements a scan returns in one call whatever
// its COUNT, as valkey does for a listpack.
const scanWhole = 128

// cmdKeyScan returns HSCAN, SSCAN or ZSCAN (of collections of kind k) key
// cursor [MATCH pattern] [COUNT count] [NOVALUES | NOSCORES]: the cursor,
// then the key, then the options.
func cmdKeyScan(k kind) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		cursor, err := strconv.ParseUint(string(args[2]), 10, 64)
		if err != nil {
			c.addError("ERR invalid cursor")
			return
		}
		s := c.db.shard(args[1])
		s.rlock(c)
		defer s.runlock(c)
		e, err := readCollection(s, args[1], k)
		switch {
		case err != nil:
			c.addError(err.Error())
			return
		case e == nil:
			c.addArray(2)
			c.addBulkString("0")
			c.addArray(0)
			return
		}
		count, pat, noValues := 10, "", false
		for i := 3; i < len(args); i++ {
			more := i+1 < len(args)
			switch a := args[i]; {
			case eqFold(a, "count") && more:
				n, ok := parseInt(args[i+1])
				if !ok {
					c.addError(msgNotInteger)
					return
				}
				if n < 1 {
					c.addError(msgSyntax)
					return
				}
				count = int(min(n, 1<<30))
				i++
			case eqFold(a, "match") && more:
				pat = string(args[i+1])
				if pat == "*" {
					pat = ""
				}
				i++
			case eqFold(a, "novalues"):
				if k != kindHash {
					c.addError("ERR NOVALUES option can only be used in HSCAN")
					return
				}
				noValues = true
			case eqFold(a, "noscores"):
				if k != kindZSet {
					c.addError("ERR NOSCORES option can only be used in ZSCAN")
					return
				}
				noValues = true
			default:
				c.addError(msgSyntax)
				return
			}
		}
		var names []string
		switch o := e.obj.(type) {
		case hashValue:
			for f := range o {
				names = append(names, f)
			}
		case setValue:
			for m := range o {
				names = append(names, m)
			}
		case *zset:
			for x := o.sl.head.next[0].to; x != nil; x = x.next[0].to {
				names = append(names, x.member)
			}
		}
		next := uint64(0)
		if z, ok := e.obj.(*zset); len(names) > scanWhole || ok && z.skiplist {
			names, next = scanStep(names, cursor, count)
		}
		if pat != "" {
			names = slices.DeleteFunc(names, func(n string) bool { return !globMatch(pat, n) })
		}
		c.addArray(2)
		c.addBulkString(strconv.FormatUint(next, 10))
		switch o := e.obj.(type) {
		case hashValue:
			if noValues {
				c.addArray(len(names))
			} else {
				c.addArray(2 * len(names))
			}
			for _, f := range names {
				c.addBulkString(f)
				if !noValues {
					c.addBulk(o[f])
				}
			}
		case setValue:
			c.addArray(len(names))
			for _, m := range names {
				c.addBulkString(m)
			}
		case *zset:
			if noValues {
				c.addArray(len(names))
			} else {
				c.addArray(2 * len(names))
			}
			for _, m := range names {
				c.addBulkString(m)
				if !noValues {
					c.addBulk(scanScore(o, o.scores[m]))
				}
			}
		}
	}
}

// scanScore formats a score as ZSCAN does: of a listpack as stored
// there (valkey's d2string, -0 stored as 0); of a skip list as
// ld2string's "%.17Lg".
func scanScore(z *zset, sc float64) []byte {
	var num [32]byte
	switch {
	case !z.skiplist:
		return appendFloat(num[:0], sc+0)
	case math.IsInf(sc, 0) || sc == 0:
		return appendFloat(num[:0], sc)
	}
	return strconv.AppendFloat(num[:0], sc, 'g', 17, 64)
}

// scanStep returns the names a call with cursor returns, at least count
// of them (or all that are left), and the next cursor (0: done).
func scanStep(names []string, cursor uint64, count int) ([]string, uint64) {
	type hashed struct {
		h    uint64
		name string
	}
	var left []hashed
	for _, n := range names {
		if h := maphash.String(scanSeed, n) >> 2; h >= cursor {
			left = append(left, hashed{h, n})
		}
	}
	slices.SortFunc(left, func(a, b hashed) int {
		switch {
		case a.h < b.h:
			return -1
		case a.h > b.h:
			return 1
		}
		return 0
	})
	end := min(count, len(left))
	for end < len(left) && left[end].h == left[end-1].h {
		end++
	}
	out := make([]string, end)
	for i := range out {
		out[i] = left[i].name
	}
	if end == len(left) {
		return out, 0
	}
	return out, left[end-1].h + 1
}
