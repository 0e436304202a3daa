package server

import "math"

// The list commands beyond LPUSH, RPUSH, LPOP, RPOP, LLEN and LRANGE, as
// valkey 8.0's t_list.c.

// elems returns l's elements in order, in a new slice.
func (l *list) elems() [][]byte {
	out := make([][]byte, l.n)
	for i := range out {
		out[i] = l.at(i)
	}
	return out
}

// reset makes l hold items, in order; l keeps the slice.
func (l *list) reset(items [][]byte) {
	l.items, l.head, l.n = items, 0, len(items)
	if len(items) == 0 {
		l.items = nil
	}
}

// set replaces the element at i, which is below len.
func (l *list) set(i int, v []byte) { l.items[(l.head+i)%len(l.items)] = v }

// listIndex turns LINDEX's and LSET's index, which may count from the
// end, into one of an n-element list; false when it is outside.
func listIndex(index int64, n int) (int, bool) {
	if index < 0 {
		index += int64(n)
	}
	if index < 0 || index >= int64(n) {
		return 0, false
	}
	return int(index), true
}

// LINDEX key index: the key first, then the index.
func cmdLIndex(c *conn, args [][]byte) {
	s := c.db.shard(args[1])
	s.rlock(c)
	defer s.runlock(c)
	e, err := readCollection(s, args[1], kindList)
	switch {
	case err != nil:
		c.addError(err.Error())
		return
	case e == nil:
		c.addNull()
		return
	}
	index, ok := parseInt(args[2])
	if !ok {
		c.addError(msgNotInteger)
		return
	}
	l := e.obj.(*list)
	if i, in := listIndex(index, l.len()); in {
		c.addBulk(l.at(i))
	} else {
		c.addNull()
	}
}

// LINSERT key BEFORE | AFTER pivot element: the new length, -1 if the
// pivot is not there, 0 if the list is not.
func cmdLInsert(c *conn, args [][]byte) {
	var after bool
	switch {
	case eqFold(args[2], "after"):
		after = true
	case eqFold(args[2], "before"):
	default:
		c.addError(msgSyntax)
		return
	}
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindList, false)
	if err != nil || e == nil {
		c.replyErrOrZero(err)
		return
	}
	l := e.obj.(*list)
	items := l.elems()
	for i, v := range items {
		if string(v) != string(args[3]) {
			continue
		}
		if after {
			i++
		}
		items = append(items[:i], append([][]byte{c.rd.take(args[4])}, items[i:]...)...)
		l.reset(items)
		s.touch(key)
		c.addInt(int64(l.len()))
		return
	}
	c.addInt(-1)
}

// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len], as
// valkey's lposCommand: the options first, then the key.
func cmdLPos(c *conn, args [][]byte) {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for j := 3; j < len(args); j++ {
		more := j+1 < len(args)
		switch {
		case eqFold(args[j], "rank") && more:
			j++
			n, ok := parseInt(args[j])
			switch {
			case !ok:
				c.addError(msgNotInteger)
				return
			case n == math.MinInt64:
				c.addError("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
				return
			case n == 0:
				c.addError("ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
				return
			}
			rank = n
		case eqFold(args[j], "count") && more:
			j++
			n, ok := parseInt(args[j])
			if !ok || n < 0 {
				c.addError("ERR COUNT can't be negative")
				return
			}
			count = n
		case eqFold(args[j], "maxlen") && more:
			j++
			n, ok := parseInt(args[j])
			if !ok || n < 0 {
				c.addError("ERR MAXLEN can't be negative")
				return
			}
			maxlen = n
		default:
			c.addError(msgSyntax)
			return
		}
	}
	s := c.db.shard(args[1])
	s.rlock(c)
	defer s.runlock(c)
	e, err := readCollection(s, args[1], kindList)
	switch {
	case err != nil:
		c.addError(err.Error())
		return
	case e == nil && count != -1:
		c.addArray(0)
		return
	case e == nil:
		c.addNull()
		return
	}
	l := e.obj.(*list)
	n := l.len()
	reverse := rank < 0
	if reverse {
		rank = -rank
	}
	var found []int64
	matches := int64(0)
	for k := 0; k < n && (maxlen == 0 || int64(k) < maxlen); k++ {
		i := k
		if reverse {
			i = n - 1 - k
		}
		if string(l.at(i)) != string(args[2]) {
			continue
		}
		if matches++; matches >= rank {
			found = append(found, int64(i))
			if count != -1 && count != 0 && int64(len(found)) >= count || count == -1 {
				break
			}
		}
	}
	if count == -1 {
		if len(found) == 0 {
			c.addNull()
		} else {
			c.addInt(found[0])
		}
		return
	}
	c.addArray(len(found))
	for _, i := range found {
		c.addInt(i)
	}
}

// LPUSHX / RPUSHX key element [element ...]: LPUSH and RPUSH of a list
// that exists; 0 for none.
func cmdPushX(c *conn, args [][]byte) { pushElements(c, args, false) }

// LREM key count element: the count first, then the key. A count above 0
// removes from the head, below 0 from the tail, 0 every match.
func cmdLRem(c *conn, args [][]byte) {
	count, ok := parseInt(args[2])
	if !ok {
		c.addError(msgNotInteger)
		return
	}
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindList, false)
	if err != nil || e == nil {
		c.replyErrOrZero(err)
		return
	}
	l := e.obj.(*list)
	items := l.elems()
	limit := count
	if limit < 0 {
		limit = -limit
	}
	removed := int64(0)
	drop := make([]bool, len(items))
	for k := range items {
		i := k
		if count < 0 {
			i = len(items) - 1 - k
		}
		if string(items[i]) == string(args[3]) {
			drop[i] = true
			if removed++; limit != 0 && removed == limit {
				break
			}
		}
	}
	if removed > 0 {
		kept := items[:0]
		for i, v := range items {
			if !drop[i] {
				kept = append(kept, v)
			}
		}
		l.reset(kept)
		s.touch(key)
		s.dropIfEmpty(key, e)
	}
	c.addInt(removed)
}

// LSET key index element: the key first, then the index.
func cmdLSet(c *conn, args [][]byte) {
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindList, false)
	switch {
	case err != nil:
		c.addError(err.Error())
		return
	case e == nil:
		c.addError("ERR no such key")
		return
	}
	index, ok := parseInt(args[2])
	if !ok {
		c.addError(msgNotInteger)
		return
	}
	// Valkey's listTypeReplaceAtIndex takes the index as a C int: it
	// keeps the low 32 bits (4294967296 is 0).
	l := e.obj.(*list)
	i, in := listIndex(int64(int32(index)), l.len())
	if !in {
		c.addError("ERR index out of range")
		return
	}
	l.set(i, c.rd.take(args[3]))
	s.touch(key)
	c.addOK()
}

// LTRIM key start stop: the range first, then the key.
func cmdLTrim(c *conn, args [][]byte) {
	start, ok1 := parseInt(args[2])
	stop, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		c.addError(msgNotInteger)
		return
	}
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindList, false)
	switch {
	case err != nil:
		c.addError(err.Error())
		return
	case e == nil:
		c.addOK()
		return
	}
	l := e.obj.(*list)
	n := l.len()
	from, to, empty := rangeIndexes(start, stop, n)
	if empty {
		l.reset(nil)
	} else if from > 0 || to < n-1 {
		l.reset(l.elems()[from : to+1])
	}
	s.touch(key)
	s.dropIfEmpty(key, e)
	c.addOK()
}
