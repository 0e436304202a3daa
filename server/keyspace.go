package server

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"
)

// The keyspace is a map from key to entry split into shards, each with its
// own lock, so that connections working on different keys rarely wait for
// each other. A command that names several keys (MSET, DEL a b c) locks one
// shard at a time: it is atomic per key, not across keys.
//
// An entry whose time has passed is treated as missing by every read and
// removed by the next write to its key, or by the active expiry cycle
// (expire.go), which samples each shard's keys with an expiry, as valkey's
// does.

const numShards = 64

type kind uint8

const (
	kindString kind = iota + 1
	kindList
	kindHash
	kindSet
	kindZSet
	kindStream
)

// typeName is what TYPE replies.
func (k kind) typeName() string {
	switch k {
	case kindString:
		return "string"
	case kindList:
		return "list"
	case kindHash:
		return "hash"
	case kindSet:
		return "set"
	case kindZSet:
		return "zset"
	case kindStream:
		return "stream"
	}
	return "none"
}

// entry is the value stored under one key.
//
// A string value (str) is never modified once stored: a write stores a new
// slice. So a reader may keep the slice it got under the shard's lock and
// write it to its connection after releasing the lock. Collections (obj)
// change in place and are only read under the lock.
type entry struct {
	kind kind
	// enc is how valkey would encode a string value (OBJECT ENCODING),
	// which depends on the command that made it.
	enc strEnc
	// vidx is 1 + the entry's index in its shard's volatile keys; 0 while
	// it has no expiry. Set only through setExpire and unlink.
	vidx     int32
	expireAt int64  // Unix time in milliseconds; 0: no expiry
	str      []byte // kindString
	obj      any    // *list, hashValue, setValue, *zset, *stream
}

// strEnc is how valkey would encode a string: as tryObjectEncoding does
// (an integer, embstr, raw by its content), raw (a string changed in
// place: APPEND, SETRANGE, SETBIT, BITFIELD, BITOP, the HyperLogLog
// commands), or never as an integer (INCRBYFLOAT's result).
type strEnc uint8

const (
	encByContent strEnc = iota
	encRaw
	encNoInt
)

func (e *entry) expired(nowMS int64) bool { return e.expireAt != 0 && e.expireAt <= nowMS }

type (
	hashValue map[string][]byte
	setValue  map[string]struct{}
)

type shard struct {
	mu sync.RWMutex
	m  map[string]*entry
	// volatile holds the keys of m with an expiry, for the expiry cycle to
	// sample; vcursor is where its next sample starts. peak is the most
	// keys m has held since it was made (a Go map does not shrink).
	volatile []volatileKey
	vcursor  int
	peak     int
	// freed counts the bytes of string values dropped (deleted, expired,
	// replaced) since the background goroutine last collected it.
	freed int64
	// watched are the connections that WATCH a key of the shard, by key
	// (multi.go); nil while none does.
	watched map[string][]*watcher
	// blocked are the clients blocked on a key of the shard (BLPOP...),
	// by key, in the order they blocked (blocking.go); nil while none is.
	blocked map[string][]*blocker
	// trk is the server's tracking table; cur the connection whose
	// command holds the lock (lock to unlock), nil for none: a change is
	// told to its own connection after the reply (tracking.go).
	trk *tracking
	cur *conn
	idx uint8    // the shard's index in its keyspace
	_   [15]byte // pad to 128 bytes: shards on separate cache lines
}

// lock, unlock, rlock and runlock take s's lock for a command of c (nil:
// for no connection's command). Inside
// EXEC they do nothing: the transaction holds the lock of every shard it
// may touch (multi.go), which mustHold checks.
func (s *shard) lock(c *conn) {
	if c != nil && c.tx.running {
		c.tx.mustHold(s)
		s.cur = c
		return
	}
	s.mu.Lock()
	s.cur = c
}

func (s *shard) unlock(c *conn) {
	s.cur = nil
	if c == nil || !c.tx.running {
		s.mu.Unlock()
	}
}

func (s *shard) rlock(c *conn) {
	if c != nil && c.tx.running {
		c.tx.mustHold(s)
		return
	}
	s.mu.RLock()
}

func (s *shard) runlock(c *conn) {
	if c == nil || !c.tx.running {
		s.mu.RUnlock()
	}
}

type volatileKey struct {
	key string
	e   *entry
}

// keyspace is one database (SELECT's index). The databases of a Server
// share a seed, so that a key's shard has the same index in each: SWAPDB
// swaps them shard by shard.
type keyspace struct {
	seed   maphash.Seed
	shards [numShards]shard
	// flushed is set by FLUSHALL and FLUSHDB, which drop everything at once.
	flushed atomic.Bool
	// nextShard is where the expiry cycle resumes; used by its goroutine
	// alone.
	nextShard int
}

// setTracking has ks's shards tell t of their changes (tracking.go).
func (ks *keyspace) setTracking(t *tracking) {
	for i := range ks.shards {
		ks.shards[i].trk = t
	}
}

func newKeyspace(seed maphash.Seed) *keyspace {
	ks := &keyspace{seed: seed}
	for i := range ks.shards {
		ks.shards[i].m = make(map[string]*entry)
		ks.shards[i].idx = uint8(i)
	}
	return ks
}

func (ks *keyspace) shard(key []byte) *shard {
	return &ks.shards[shardIndex(ks.seed, key)]
}

// shardIndex is the index of key's shard, the same in every database.
func shardIndex(seed maphash.Seed, key []byte) int {
	return int(maphash.Bytes(seed, key) % numShards)
}

func nowMS() int64 { return time.Now().UnixMilli() }

// get returns the live entry under key, or nil. The caller holds s.mu,
// for reading or writing.
func (s *shard) get(key []byte) *entry {
	e := s.m[string(key)] // no allocation: the compiler converts in place for a lookup
	if e == nil || (e.expireAt != 0 && e.expired(nowMS())) {
		return nil
	}
	return e
}

// getForWrite is get for a caller that holds s.mu for writing: an expired
// entry is removed.
func (s *shard) getForWrite(key []byte) *entry {
	e := s.m[string(key)]
	if e != nil && e.expireAt != 0 && e.expired(nowMS()) {
		s.drop(key, e) // as valkey's lazy expiry, a change WATCH sees
		return nil
	}
	return e
}

// add stores a new entry under key, which holds none, with the expiry
// e.expireAt. The caller holds s.mu for writing.
func (s *shard) add(key []byte, e *entry) {
	k := string(key)
	s.m[k] = e
	s.peak = max(s.peak, len(s.m))
	if e.expireAt != 0 {
		s.setExpireKey(k, e, e.expireAt)
	}
	s.touch(key)
}

// remove deletes key; it reports whether a live entry was there.
func (s *shard) remove(key []byte) bool {
	e := s.getForWrite(key)
	if e == nil {
		return false
	}
	s.drop(key, e)
	return true
}

// drop deletes the entry e under key. The caller holds s.mu for writing.
func (s *shard) drop(key []byte, e *entry) {
	delete(s.m, string(key))
	s.touch(key)
	s.unlink(e)
	s.freed += keyBytes + int64(len(key)) + e.bytes()
}

// keyBytes is about what a key takes beside its name and value: its entry,
// its slots in the map and the volatile keys.
const keyBytes = 128

// bytes estimates the memory of e's value: a string's length, and for a
// collection its elements', each with elemBytes more, summed over up to
// sampleElems of them and scaled to all (a DEL stays quick).
func (e *entry) bytes() int64 {
	const elemBytes, sampleElems = 48, 256
	n, sum, seen := 0, 0, 0
	add := func(b int) bool {
		sum += b + elemBytes
		seen++
		return seen < sampleElems
	}
	switch o := e.obj.(type) {
	case nil:
		return int64(cap(e.str))
	case *list:
		n = o.len()
		for i := 0; i < n && add(cap(o.at(i))); i++ {
		}
	case hashValue:
		n = len(o)
		for f, v := range o {
			if !add(len(f) + cap(v)) {
				break
			}
		}
	case setValue:
		n = len(o)
		for m := range o {
			if !add(len(m)) {
				break
			}
		}
	case *zset:
		n = o.len()
		for m := range o.scores {
			if !add(2*len(m) + elemBytes) { // the map's key and the node's
				break
			}
		}
	case *stream:
		n = len(o.entries)
		for _, en := range o.entries {
			b := 0
			for _, f := range en.fields {
				b += cap(f) + 24
			}
			if !add(b) {
				break
			}
		}
	}
	if seen == 0 {
		return 0
	}
	return int64(sum) * int64(n) / int64(seen)
}

// collection returns the entry of kind k under key for a write, creating an
// empty one if there is none (when create is set). It returns errWrongType if
// the key holds another kind. The caller holds s.mu for writing.
func (s *shard) collection(key []byte, k kind, create bool) (*entry, error) {
	e := s.getForWrite(key)
	if e == nil {
		if !create {
			return nil, nil
		}
		e = &entry{kind: k, obj: newCollection(k)}
		s.add(key, e)
		return e, nil
	}
	if e.kind != k {
		return nil, errWrongType
	}
	return e, nil
}

// dropIfEmpty deletes key when its collection has become empty, as valkey
// does. The caller holds s.mu for writing.
func (s *shard) dropIfEmpty(key []byte, e *entry) {
	empty := false
	switch o := e.obj.(type) {
	case *list:
		empty = o.len() == 0
	case hashValue:
		empty = len(o) == 0
	case setValue:
		empty = len(o) == 0
	case *zset:
		empty = o.len() == 0
	}
	if empty {
		s.drop(key, e)
	}
}

func newCollection(k kind) any {
	switch k {
	case kindList:
		return &list{}
	case kindHash:
		return hashValue{}
	case kindSet:
		return setValue{}
	case kindZSet:
		return newZSet()
	case kindStream:
		return &stream{}
	}
	panic("server: no collection of kind " + k.typeName())
}

// size counts the keys, expired ones not yet removed included (as valkey's
// DBSIZE does).
func (ks *keyspace) size(c *conn) int {
	n := 0
	for i := range ks.shards {
		s := &ks.shards[i]
		s.rlock(c)
		n += len(s.m)
		s.runlock(c)
	}
	return n
}

// counts returns the number of keys and of keys with an expiry.
func (ks *keyspace) counts(c *conn) (keys, expires int) {
	for i := range ks.shards {
		s := &ks.shards[i]
		s.rlock(c)
		keys += len(s.m)
		expires += len(s.volatile)
		s.runlock(c)
	}
	return keys, expires
}

// flush drops every key, for FLUSHDB and FLUSHALL: a change for each
// connection that watches a key there (valkey's touchAllWatchedKeysInDb).
func (ks *keyspace) flush(c *conn) {
	for i := range ks.shards {
		s := &ks.shards[i]
		s.lock(c)
		s.touchAll(nil)
		if s.blocked != nil {
			s.signalSwapped(nil) // blocking.go: XREADGROUP's keys are gone
		}
		s.m = make(map[string]*entry)
		s.volatile, s.vcursor, s.peak = nil, 0, 0
		s.unlock(c)
	}
	ks.flushed.Store(true)
}

// list is a double-ended queue in a ring buffer.
type list struct {
	items [][]byte
	head  int // index of the first element in items
	n     int
}

func (l *list) len() int { return l.n }

func (l *list) at(i int) []byte { return l.items[(l.head+i)%len(l.items)] }

func (l *list) grow() {
	if l.n < len(l.items) {
		return
	}
	items := make([][]byte, max(8, 2*len(l.items)))
	for i := 0; i < l.n; i++ {
		items[i] = l.at(i)
	}
	l.items, l.head = items, 0
}

func (l *list) pushFront(v []byte) {
	l.grow()
	l.head = (l.head - 1 + len(l.items)) % len(l.items)
	l.items[l.head] = v
	l.n++
}

func (l *list) pushBack(v []byte) {
	l.grow()
	l.items[(l.head+l.n)%len(l.items)] = v
	l.n++
}

func (l *list) popFront() []byte {
	v := l.items[l.head]
	l.items[l.head] = nil
	l.head = (l.head + 1) % len(l.items)
	l.n--
	return v
}

func (l *list) popBack() []byte {
	i := (l.head + l.n - 1) % len(l.items)
	v := l.items[i]
	l.items[i] = nil
	l.n--
	return v
}
