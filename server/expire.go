package server

import (
	"runtime/debug"
	"runtime/metrics"
	"time"
	"unsafe"
)

// Active expiry, as valkey's activeExpireCycle does it: every
// expirePeriod, for at most expireBudget, the background goroutine samples
// expireSample keys with an expiry from one shard after another and deletes
// those whose time has passed, staying on a shard while more than a tenth
// of its sample had expired. It holds a shard's lock for one sample at a
// time, a few microseconds, so a request waits no longer than that for it.
//
// The same goroutine hands memory back to the operating system once much
// has been dropped (see reclaimer), and gives a shard whose map has emptied
// a new, small one.

const (
	expirePeriod = 100 * time.Millisecond // valkey's hz 10
	expireBudget = expirePeriod / 4       // valkey's ACTIVE_EXPIRE_CYCLE_SLOW_TIME_PERC
	expireSample = 20                     // valkey's ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP
	// expireStale: a shard is sampled again while more than this percentage
	// of the last sample had expired (valkey's acceptable stale keys).
	expireStale = 10
)

// setExpire sets e's expiry, at (0: none), keeping the shard's volatile
// keys in step. The caller holds s.mu for writing and e is live under key.
func (s *shard) setExpire(key []byte, e *entry, at int64) {
	if at != 0 && e.vidx == 0 {
		s.setExpireKey(string(key), e, at)
		return
	}
	if at == 0 {
		s.unlink(e)
	}
	e.expireAt = at
}

// setExpireKey is setExpire with the key as the map holds it.
func (s *shard) setExpireKey(key string, e *entry, at int64) {
	if at != 0 && e.vidx == 0 {
		s.volatile = append(s.volatile, volatileKey{key, e})
		e.vidx = int32(len(s.volatile))
	}
	e.expireAt = at
}

// unlink removes e from the volatile keys, if it is there, and clears its
// expiry.
func (s *shard) unlink(e *entry) {
	if e.vidx == 0 {
		return
	}
	i, last := int(e.vidx-1), len(s.volatile)-1
	if i != last {
		s.volatile[i] = s.volatile[last]
		s.volatile[i].e.vidx = int32(i + 1)
	}
	s.volatile[last] = volatileKey{}
	s.volatile = s.volatile[:last]
	e.vidx, e.expireAt = 0, 0
}

// expireSome looks at up to n volatile keys from the cursor on and
// deletes those expired at now. The caller holds s.mu for writing.
func (s *shard) expireSome(n int, now int64) (sampled, expired int) {
	for sampled < n && sampled < len(s.volatile) {
		if s.vcursor >= len(s.volatile) {
			s.vcursor = 0
		}
		v := s.volatile[s.vcursor]
		sampled++
		if v.e.expireAt > now {
			s.vcursor++
			continue
		}
		// unlink moves the last key to the cursor: look there next.
		delete(s.m, v.key)
		s.unlink(v.e)
		s.touchKey(v.key)
		s.freed += keyBytes + int64(len(v.key)) + v.e.bytes()
		expired++
	}
	return sampled, expired
}

// shrink gives a shard whose map holds few keys after it held many a
// new map (and volatile slice) of their size: a Go map keeps its largest
// size. Few enough keys that the copy holds the lock briefly; and an
// eighth of the peak at most, so the copies cost less than the inserts
// that made the peak. From a peak of 256 keys (a map of about 8 KB): 64
// shards that each peaked at a few thousand keys, as 500 000 keys set
// with PX 1 leave them, kept about 2 MB before.
func (s *shard) shrink() {
	const minPeak, maxCopy = 256, 1024
	if s.peak < minPeak || len(s.m) > maxCopy || len(s.m) > s.peak/8 {
		return
	}
	m := make(map[string]*entry, len(s.m))
	for k, e := range s.m {
		m[k] = e
	}
	s.freed += int64(s.peak) * 32 // about what the old map's slots take
	s.m, s.peak = m, len(m)
	if cap(s.volatile) > 2*len(s.volatile)+16 {
		s.freed += int64(cap(s.volatile)) * int64(unsafe.Sizeof(volatileKey{}))
		s.volatile = append([]volatileKey(nil), s.volatile...)
	}
}

// expireCycle runs one cycle of active expiry for at most budget, and
// returns how many keys it deleted.
func (ks *keyspace) expireCycle(budget time.Duration) int {
	start := time.Now()
	deleted := 0
	for range numShards {
		s := &ks.shards[ks.nextShard]
		ks.nextShard = (ks.nextShard + 1) % numShards
		for {
			s.mu.Lock()
			sampled, expired := s.expireSome(expireSample, nowMS())
			s.mu.Unlock()
			deleted += expired
			if time.Since(start) > budget {
				return deleted
			}
			if sampled == 0 || expired*100 <= sampled*expireStale {
				break
			}
		}
	}
	return deleted
}

// expireCycle runs one cycle of active expiry on the databases from
// index next on, for at most budget in all, and returns the index to
// resume from.
func (s *Server) expireCycle(next int, budget time.Duration) int {
	start := time.Now()
	for range len(s.dbs) {
		ks := s.dbs[next].Load()
		next = (next + 1) % len(s.dbs)
		if ks == nil || s.noActiveExpire.Load() {
			continue
		}
		ks.expireCycle(budget - time.Since(start))
		if time.Since(start) > budget {
			break
		}
	}
	s.trk.broadcast()
	return next
}

// collect returns the bytes of keys dropped since the last call, and
// shrinks each shard's map that has emptied.
func (ks *keyspace) collect() int64 {
	var freed int64
	for i := range ks.shards {
		s := &ks.shards[i]
		s.mu.Lock()
		s.shrink()
		freed += s.freed
		s.freed = 0
		s.mu.Unlock()
	}
	return freed
}

// Memory handed back. The Go runtime collects only as the heap grows (or
// every two minutes), which a server that stopped writing does not do:
// after the expiry of many keys or the DEL of a large value it kept their
// memory for minutes, and its scavenger returns a collected heap's pages
// at its own pace. So the background goroutine collects and returns the
// free memory at once (debug.FreeOSMemory) when the keys dropped since the
// last time make up at least reclaimMin bytes (an eighth of it once
// dropping has stopped) and half the heap that stays; no more often than
// every reclaimEvery, and not while the server allocates more than
// reclaimBusy a tick, which would take the memory again at once. The heap
// that stays is the live heap of the last collection less what was
// dropped since, which it still counts.
//
// Each hand-back costs a collection (concurrent, with the runtime's two
// short pauses) and the release of the free pages, which holds the
// background goroutine's P throughout, for longer the more is handed
// back. The ratio to the heap that stays bounds how often during a long
// expiry: each one finds the heap at least a third smaller than the last.
const (
	reclaimMin   = 32 << 20
	reclaimEvery = time.Second
	reclaimBusy  = reclaimMin / 8
)

// heapFigures are what the reclaimer reads of the runtime.
type heapFigures struct {
	live   uint64 // /gc/heap/live:bytes: marked by the last collection
	cycles uint64 // /gc/cycles/total:gc-cycles: collections so far
	allocs uint64 // /gc/heap/allocs:bytes: allocated so far
}

// reclaimer decides when to hand memory back; used by the background
// goroutine alone.
type reclaimer struct {
	pending int64 // bytes dropped since the last reclaim
	sinceGC int64 // of those, dropped since the last collection
	last    time.Time
	prev    heapFigures // at the last tick
	sample  []metrics.Sample
}

// add counts freed bytes and reports whether to reclaim now.
func (r *reclaimer) add(freed int64, flushed bool, now time.Time) bool {
	if r.sample == nil {
		r.sample = []metrics.Sample{
			{Name: "/gc/heap/live:bytes"},
			{Name: "/gc/cycles/total:gc-cycles"},
			{Name: "/gc/heap/allocs:bytes"},
		}
	}
	metrics.Read(r.sample)
	var f [3]uint64
	for i, s := range r.sample {
		if s.Value.Kind() == metrics.KindUint64 {
			f[i] = s.Value.Uint64()
		}
	}
	return r.decide(freed, flushed, now, heapFigures{live: f[0], cycles: f[1], allocs: f[2]})
}

// decide is add with the runtime's figures given.
func (r *reclaimer) decide(freed int64, flushed bool, now time.Time, h heapFigures) bool {
	if h.cycles != r.prev.cycles {
		r.sinceGC = 0 // (this tick's drops are counted as after it)
	}
	r.sinceGC += freed
	busy := h.allocs-r.prev.allocs >= reclaimBusy
	r.prev = h
	r.pending += freed
	if flushed {
		r.pending = max(r.pending, reclaimMin)
	}
	// Once dropping stops (a tick that dropped nothing), less will do.
	least := int64(reclaimMin)
	if freed == 0 {
		least = reclaimMin / 8
	}
	if r.pending < least || now.Sub(r.last) < reclaimEvery || busy {
		return false
	}
	stays := max(int64(h.live)-r.sinceGC, 0)
	if r.pending < stays/2 {
		return false
	}
	r.pending, r.sinceGC, r.last = 0, 0, now
	return true
}

// background runs the expiry cycle every expirePeriod and hands memory
// back, until stop is closed.
func (s *Server) background(stop <-chan struct{}) {
	t := time.NewTicker(expirePeriod)
	defer t.Stop()
	var r reclaimer
	nextDB := 0
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			nextDB = s.expireCycle(nextDB, expireBudget)
			var freed int64
			flushed := false
			for i := range s.dbs {
				if ks := s.dbs[i].Load(); ks != nil {
					freed += ks.collect()
					flushed = ks.flushed.Swap(false) || flushed
				}
			}
			if r.add(freed+s.dropped.Swap(0), flushed, now) {
				debug.FreeOSMemory()
			}
		}
	}
}
