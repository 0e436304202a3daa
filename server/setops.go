package server

// The set algebra: SUNION, SINTER, SDIFF, their STORE forms and
// SINTERCARD, as valkey 8.0's sinterGenericCommand and
// sunionDiffGenericCommand. A command locks the shards of all its keys at
// once (lockKeys): the sets it reads and the one it stores are one state
// for the other clients.

// setOp is an operation of the set algebra.
type setOp uint8

const (
	setUnion setOp = iota
	setInter
	setDiff
)

// readSets returns the sets under keys (nil for a missing key), or
// errWrongType if one holds another kind: every key is checked before
// any is used, as valkey does. The caller holds the keys' shards.
func readSets(c *conn, keys [][]byte) ([]setValue, error) {
	sets := make([]setValue, len(keys))
	for i, k := range keys {
		e, err := readCollection(c.db.shard(k), k, kindSet)
		if err != nil {
			return nil, err
		}
		if e != nil {
			sets[i] = e.obj.(setValue)
		}
	}
	return sets, nil
}

// combineSets applies op to sets (a nil one is empty); limit above 0
// stops an intersection once it has that many members.
func combineSets(op setOp, sets []setValue, limit int) setValue {
	out := setValue{}
	switch op {
	case setUnion:
		for _, s := range sets {
			for m := range s {
				out[m] = struct{}{}
			}
		}
	case setDiff:
	diff:
		for m := range sets[0] {
			for _, s := range sets[1:] {
				if _, ok := s[m]; ok {
					continue diff
				}
			}
			out[m] = struct{}{}
		}
	case setInter:
		smallest := sets[0]
		for _, s := range sets {
			if len(s) < len(smallest) {
				smallest = s
			}
		}
	inter:
		for m := range smallest {
			for _, s := range sets {
				if _, ok := s[m]; !ok {
					continue inter
				}
			}
			out[m] = struct{}{}
			if limit > 0 && len(out) >= limit {
				break
			}
		}
	}
	return out
}

// setAlgebra returns SUNION, SINTER or SDIFF key [key ...], or with store
// their STORE forms destination key [key ...]: the result replaces the
// destination whatever its type, or deletes it when empty.
func setAlgebra(op setOp, store bool) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		keys, dst := args[1:], []byte(nil)
		if store {
			keys, dst = args[2:], args[1]
		}
		unlock := c.lockKeys(args[1:])
		defer unlock()
		sets, err := readSets(c, keys)
		if err != nil {
			c.addError(err.Error())
			return
		}
		out := combineSets(op, sets, 0)
		if store {
			storeSet(c, dst, out)
			c.addInt(int64(len(out)))
			return
		}
		c.addSet(len(out))
		for m := range out {
			c.addBulkString(m)
		}
	}
}

// storeSet stores set under dst, or deletes dst if set is empty. The
// caller holds dst's shard.
func storeSet(c *conn, dst []byte, set setValue) {
	s := c.db.shard(dst)
	if len(set) == 0 {
		s.remove(dst)
		return
	}
	s.storeObject(dst, kindSet, set)
}

// SINTERCARD numkeys key [key ...] [LIMIT limit]: the options first, as
// valkey's sinterCardCommand.
func cmdSInterCard(c *conn, args [][]byte) {
	numKeys, ok := parseInt(args[1])
	if !ok || numKeys < 1 {
		c.addError("ERR numkeys should be greater than 0")
		return
	}
	if numKeys > int64(len(args)-2) {
		c.addError("ERR Number of keys can't be greater than number of args")
		return
	}
	keys := args[2 : 2+numKeys]
	limit := int64(0)
	for j := 2 + int(numKeys); j < len(args); j++ {
		if !eqFold(args[j], "limit") || j+1 >= len(args) {
			c.addError(msgSyntax)
			return
		}
		j++
		if limit, ok = parseInt(args[j]); !ok || limit < 0 {
			c.addError("ERR LIMIT can't be negative")
			return
		}
	}
	unlock := c.lockKeys(keys)
	defer unlock()
	sets, err := readSets(c, keys)
	if err != nil {
		c.addError(err.Error())
		return
	}
	c.addInt(int64(len(combineSets(setInter, sets, int(min(limit, 1<<31))))))
}
