package server

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
