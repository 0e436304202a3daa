package server

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
)

// SORT and SORT_RO, as valkey 8.0's sortCommandGeneric.
//
// SORT key [BY pattern] [LIMIT offset count] [GET pattern [GET pattern
// ...]] [ASC | DESC] [ALPHA] [STORE destination]
//
// A pattern names other keys through the element sorted: its first "*"
// is replaced by the element, and "->field" after it reads a hash's
// field instead of a string. A command with such patterns reads keys it
// learns only as it runs, so it locks every shard of the database (and
// EXEC every shard, by its row's key specs: keyspec findUnknown).

// sortItem is an element to sort and what it is sorted by.
type sortItem struct {
	elem  []byte
	score float64
	by    []byte // ALPHA with BY: the value, nil if there is none
}

func cmdSort(c *conn, args [][]byte) {
	readonly := eqFold(args[0], "sort_ro")
	var (
		desc, alpha, dontSort bool
		start, count          = int64(0), int64(-1)
		store, by             []byte
		gets                  [][]byte
		lookups               bool // a BY or GET pattern that reads keys
	)
	for j := 2; j < len(args); j++ {
		left := len(args) - j - 1
		switch a := args[j]; {
		case eqFold(a, "asc"):
			desc = false
		case eqFold(a, "desc"):
			desc = true
		case eqFold(a, "alpha"):
			alpha = true
		case eqFold(a, "limit") && left >= 2:
			var ok1, ok2 bool
			start, ok1 = parseInt(args[j+1])
			if ok1 {
				count, ok2 = parseInt(args[j+2])
			}
			if !ok1 || !ok2 {
				c.addError(msgNotInteger)
				return
			}
			j += 2
		case !readonly && eqFold(a, "store") && left >= 1:
			store = args[j+1]
			j++
		case eqFold(a, "by") && left >= 1:
			by = args[j+1]
			if bytes.IndexByte(by, '*') < 0 {
				dontSort = true
			} else {
				if c.srv.cluster != nil && patternSlot(by) != keySlot(args[1]) {
					c.addError("ERR BY option of SORT denied in Cluster mode when keys formed by the pattern may be in different slots.")
					return
				}
				lookups = true
			}
			j++
		case eqFold(a, "get") && left >= 1:
			p := args[j+1]
			if string(p) != "#" {
				if c.srv.cluster != nil && patternSlot(p) != keySlot(args[1]) {
					c.addError("ERR GET option of SORT denied in Cluster mode when keys formed by the pattern may be in different slots.")
					return
				}
				lookups = true
			}
			gets = append(gets, p)
			j++
		default:
			c.addError(msgSyntax)
			return
		}
	}
	var unlock func()
	switch {
	case lookups:
		unlock = lockAllShards(c)
	case store != nil:
		unlock = c.lockKeys([][]byte{args[1], store})
	default:
		unlock = c.lockKeys(args[1:2])
	}
	defer unlock()
	e := c.db.shard(args[1]).get(args[1])
	var n int
	if e != nil {
		switch o := e.obj.(type) {
		case *list:
			n = o.len()
		case setValue:
			n = len(o)
		case *zset:
			n = o.len()
			// As valkey's zsetConvert for SORT: a skip list from now on.
			o.skiplist = true
		default:
			c.addError(msgWrongType)
			return
		}
	}
	if dontSort && e != nil && e.kind == kindSet && store != nil {
		// A set's order is its own: sorted, for a result stored.
		dontSort, alpha, by = false, true, nil
	}
	// LIMIT, as valkey clamps it.
	start = min(max(start, 0), int64(n))
	count = min(max(count, -1), int64(n))
	end := int64(n) - 1
	if count >= 0 {
		end = start + count - 1
	}
	if start >= int64(n) {
		start, end = int64(n)-1, int64(n)-2
	}
	end = min(end, int64(n)-1)

	items := sortElements(e, dontSort, desc, &start, &end)
	convErr := false
	if !dontSort {
		for i := range items {
			it := &items[i]
			val := it.elem
			if by != nil {
				v, ok := c.sortLookup(by, it.elem)
				if !ok {
					continue
				}
				val = v
			}
			if alpha {
				if by != nil {
					it.by = val
				}
				continue
			}
			score, ok := sortScore(val)
			if !ok {
				convErr = true
			}
			it.score = score
		}
		slices.SortFunc(items, func(a, b sortItem) int {
			cmp := 0
			switch {
			case !alpha:
				switch {
				case a.score > b.score:
					cmp = 1
				case a.score < b.score:
					cmp = -1
				default:
					cmp = bytes.Compare(a.elem, b.elem)
				}
			case by != nil:
				switch {
				case a.by == nil && b.by == nil:
				case a.by == nil:
					cmp = -1
				case b.by == nil:
					cmp = 1
				default:
					cmp = bytes.Compare(a.by, b.by)
				}
			default:
				cmp = bytes.Compare(a.elem, b.elem)
			}
			if desc {
				return -cmp
			}
			return cmp
		})
	}
	if convErr {
		c.addError("ERR One or more scores can't be converted into double")
		return
	}
	var out [][]byte // with nil for a GET of nothing
	for j := start; j <= end; j++ {
		elem := items[j].elem
		if len(gets) == 0 {
			out = append(out, elem)
			continue
		}
		for _, p := range gets {
			v, _ := c.sortLookup(p, elem)
			out = append(out, v)
		}
	}
	if store == nil {
		c.addArray(len(out))
		for _, v := range out {
			if v == nil {
				c.addNull()
			} else {
				c.addBulk(v)
			}
		}
		return
	}
	ds := c.db.shard(store)
	if len(out) == 0 {
		ds.remove(store)
		c.addInt(0)
		return
	}
	l := &list{}
	for _, v := range out {
		if v == nil {
			v = []byte{}
		}
		l.pushBack(v)
	}
	ds.storeObject(store, kindList, l)
	c.addInt(int64(len(out)))
}

// sortElements returns the elements of e (nil: none) to sort. Unsorted
// (dontSort), a list or a sorted set gives only the range [start, end],
// in its order or reversed (desc), and the range is moved to start at 0;
// a set its members in no order.
func sortElements(e *entry, dontSort, desc bool, start, end *int64) []sortItem {
	var items []sortItem
	if e == nil {
		return items
	}
	switch o := e.obj.(type) {
	case setValue:
		for m := range o {
			items = append(items, sortItem{elem: []byte(m)})
		}
	case *list:
		n := int64(o.len())
		if !dontSort {
			for i := range o.len() {
				items = append(items, sortItem{elem: o.at(i)})
			}
			return items
		}
		if *end >= *start {
			for k := *start; k <= *end; k++ {
				i := k
				if desc {
					i = n - 1 - k
				}
				items = append(items, sortItem{elem: o.at(int(i))})
			}
			*end -= *start
			*start = 0
		}
	case *zset:
		n := int64(o.len())
		if !dontSort {
			for m := range o.scores {
				items = append(items, sortItem{elem: []byte(m)})
			}
			return items
		}
		if *end >= *start {
			for k := *start; k <= *end; k++ {
				i := k
				if desc {
					i = n - 1 - k
				}
				items = append(items, sortItem{elem: []byte(o.at(int(i)).member)})
			}
			*end -= *start
			*start = 0
		}
	}
	return items
}

// sortLookup is valkey's lookupKeyByPattern: "#" is elem itself; else
// the string under the key the pattern makes with elem in place of its
// first "*", or with "->field" after it the field of the hash there.
// False when there is none (or the pattern has no "*").
func (c *conn) sortLookup(pattern, elem []byte) ([]byte, bool) {
	if string(pattern) == "#" {
		return elem, true
	}
	star := bytes.IndexByte(pattern, '*')
	if star < 0 {
		return nil, false
	}
	var field []byte
	post := pattern[star+1:]
	if f := bytes.Index(post, []byte("->")); f >= 0 && f+2 < len(post) {
		field, post = post[f+2:], post[:f]
	}
	key := make([]byte, 0, len(pattern)+len(elem))
	key = append(append(append(key, pattern[:star]...), elem...), post...)
	e := c.db.shard(key).get(key)
	switch {
	case e == nil:
		return nil, false
	case field != nil:
		if e.kind != kindHash {
			return nil, false
		}
		v, ok := e.obj.(hashValue)[string(field)]
		return v, ok
	case e.kind != kindString:
		return nil, false
	}
	return e.str, true
}

// sortScore reads v as SORT does, with C's strtod: all of it, not NaN,
// not out of range (an overflow, or an underflow to 0 or a denormal, as
// glibc's ERANGE); "" is 0.
func sortScore(v []byte) (float64, bool) {
	s := string(v)
	t := strings.TrimLeft(s, " \t\n\v\f\r")
	if s == "" {
		return 0, true
	}
	if t == "" || strings.IndexByte(t, '_') >= 0 {
		return 0, false
	}
	unsigned := strings.TrimLeft(t, "+-")
	if len(t)-len(unsigned) > 1 {
		return 0, false
	}
	hex := len(unsigned) > 1 && unsigned[0] == '0' && unsigned[1]|0x20 == 'x'
	if hex && !strings.ContainsAny(t, "pP") {
		t += "p0"
	}
	f, err := strconv.ParseFloat(t, 64)
	switch {
	case errors.Is(err, strconv.ErrRange), err != nil, math.IsNaN(f):
		return 0, false
	case f != 0 && math.Abs(f) < 0x1p-1022: // a denormal: glibc's ERANGE
		return 0, false
	case f == 0 && strings.ContainsAny(mantissa(t, hex), "123456789abcdefABCDEF"):
		return 0, false
	}
	return f, true
}

// patternSlot is valkey's patternHashSlot: the slot of every key a SORT
// pattern can make, or -1 if they may be in several.
func patternSlot(p []byte) int {
	open := -1
	for i, ch := range p {
		switch {
		case ch == '*' || ch == '?' || ch == '[' || ch == '\\':
			return -1
		case open == -1 && ch == '{':
			open = i
		case open >= 0 && ch == '}' && i == open+1:
			open = -2
		case open >= 0 && ch == '}':
			return keySlot(p[open+1 : i])
		}
	}
	return keySlot(p)
}
