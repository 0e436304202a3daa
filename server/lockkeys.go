package server

import "slices"

// lockKeys locks the shards of keys of c's database, each once, in the
// order of their indexes (as lockPair, EXEC and MOVE do), so that a
// command on several keys (SUNIONSTORE, ZUNIONSTORE, SMOVE) is atomic
// for the other clients. It returns the function that unlocks them.
func lockKeys(c *conn, keys ...[]byte) (unlock func()) {
	var held [numShards]bool
	for _, k := range keys {
		held[c.db.shard(k).idx] = true
	}
	return lockShards(c, &held)
}

// lockAllShards locks every shard of c's database, for a command that
// reads keys it learns only as it runs (SORT's BY and GET).
func lockAllShards(c *conn) (unlock func()) {
	var held [numShards]bool
	for i := range held {
		held[i] = true
	}
	return lockShards(c, &held)
}

func lockShards(c *conn, held *[numShards]bool) (unlock func()) {
	locked := make([]*shard, 0, 4)
	for i := range held {
		if held[i] {
			s := &c.db.shards[i]
			s.lock(c)
			locked = append(locked, s)
		}
	}
	return func() {
		for _, s := range slices.Backward(locked) {
			s.unlock(c)
		}
	}
}

// storeObject stores the collection obj of kind k under key, replacing
// what is there and its expiry, as valkey's setKey: one change for WATCH
// and tracking. The caller holds s's lock for writing.
func (s *shard) storeObject(key []byte, k kind, obj any) {
	e := s.getForWrite(key)
	if e == nil {
		s.add(key, &entry{kind: k, obj: obj})
		return
	}
	s.freed += e.bytes()
	e.kind, e.str, e.obj = k, nil, obj
	s.setExpire(key, e, 0)
	s.touch(key)
}
