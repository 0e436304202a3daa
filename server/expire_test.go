package server

import (
	"hash/maphash"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestActiveExpiry: keys whose time passes are deleted without a command
// touching them; keys without an expiry, or with a later one, stay.
func TestActiveExpiry(t *testing.T) {
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	const n = 20000
	var b strings.Builder
	for i := range n {
		b.WriteString(encode("set", "short:"+strconv.Itoa(i), "v", "px", "1"))
	}
	for i := range 100 {
		b.WriteString(encode("set", "long:"+strconv.Itoa(i), "v", "ex", "1000"))
		b.WriteString(encode("set", "forever:"+strconv.Itoa(i), "v"))
	}
	b.WriteString(encode("set", "later", "v", "px", "300"))
	sent := time.Now()
	rc.send(b.String())
	for range n + 201 {
		rc.expect("+OK\r\n")
	}
	// The deadline only bounds the wait for the deletions (a hang); how
	// long they took is not asserted.
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		if size := rc.do("dbsize"); size == ":201\r\n" || size == ":200\r\n" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	rc.expectReply(t, []string{"exists", "long:7", "forever:7"}, ":2\r\n")
	// "later" is deleted in its time, not before; on a slow machine the
	// short keys may take longer than its 300 ms to go, so it is not
	// asserted to be there still.
	if rc.do("exists", "later") == ":0\r\n" {
		if d := time.Since(sent); d < 300*time.Millisecond {
			t.Errorf("later (px 300) deleted %v after it was set", d)
		}
	}
	for time.Now().Before(deadline) && rc.do("dbsize") != ":200\r\n" {
		time.Sleep(20 * time.Millisecond)
	}
	rc.expectReply(t, []string{"dbsize"}, ":200\r\n")
	info := rc.do("info")
	if !strings.Contains(info, "db0:keys=200,expires=100,") {
		t.Errorf("INFO keyspace: %q", info)
	}
}

// TestPastExpiryDeletes: an expiry given in the past deletes the key at
// once, as in valkey; SET still replies OK, or the old value with GET.
func TestPastExpiryDeletes(t *testing.T) {
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	for _, tc := range [][]string{
		{"set", "k", "v", "exat", "1"},
		{"set", "k", "v", "pxat", "1"},
		{"expireat", "k", "1"},
		{"pexpireat", "k", "1000"},
		{"expire", "k", "-1"},
		{"pexpire", "k", "0"},
	} {
		rc.expectReply(t, []string{"set", "k", "old"}, "+OK\r\n")
		want := "+OK\r\n"
		if tc[0] != "set" {
			want = ":1\r\n"
		}
		rc.expectReply(t, tc, want)
		rc.expectReply(t, []string{"dbsize"}, ":0\r\n")
	}
	rc.expectReply(t, []string{"set", "k", "old"}, "+OK\r\n")
	rc.expectReply(t, []string{"set", "k", "new", "get", "exat", "1"}, "$3\r\nold\r\n")
	rc.expectReply(t, []string{"dbsize"}, ":0\r\n")
	rc.expectReply(t, []string{"set", "k", "new", "pxat", "1"}, "+OK\r\n")
	rc.expectReply(t, []string{"dbsize"}, ":0\r\n")
	rc.expectReply(t, []string{"set", "k", "old"}, "+OK\r\n")
	rc.expectReply(t, []string{"getex", "k", "ex", "100"}, "$3\r\nold\r\n")
	rc.expectReply(t, []string{"ttl", "k"}, ":100\r\n")
	rc.expectReply(t, []string{"getex", "k", "persist"}, "$3\r\nold\r\n")
	rc.expectReply(t, []string{"ttl", "k"}, ":-1\r\n")
	rc.expectReply(t, []string{"getex", "k", "exat", "1"}, "$3\r\nold\r\n")
	rc.expectReply(t, []string{"dbsize"}, ":0\r\n")
}

// TestExpireCycleBounded: a cycle stops at its budget, holds a shard's
// lock for one small sample at a time, and in the end deletes every
// expired key and no other.
func TestExpireCycleBounded(t *testing.T) {
	ks := newKeyspace(maphash.MakeSeed())
	const n = 200000
	past, future := nowMS()-1, nowMS()+3600_000
	for i := range n {
		key := []byte("k" + strconv.Itoa(i))
		at := past
		if i%10 == 0 {
			at = future
		}
		s := ks.shard(key)
		s.mu.Lock()
		s.add(key, &entry{kind: kindString, str: []byte("v"), expireAt: at})
		s.mu.Unlock()
	}
	if _, expires := ks.counts(nil); expires != n {
		t.Fatalf("%d keys with an expiry, want %d", expires, n)
	}
	// A cycle stops once its budget has passed: with 180,000 expired keys
	// and a budget of 2 ms it deletes some, but not all of them. How long
	// it ran past the budget depends on the machine's load (a preemption
	// inside a sample stretches it), so it is not asserted here.
	const budget = 2 * time.Millisecond
	if first := ks.expireCycle(budget); first == 0 || first == n*9/10 {
		t.Errorf("a cycle of budget %v deleted %d of %d expired keys, want some but not all", budget, first, n*9/10)
	}

	// The lock is held for one sample: a bounded amount of work, at most
	// expireSample keys looked at (and deleted), whatever the keyspace's
	// size, as the cycle takes them.
	for rounds := 0; ks.size(nil) > n/10 && rounds < 10000; rounds++ {
		for i := range ks.shards {
			s := &ks.shards[i]
			s.mu.Lock()
			sampled, expired := s.expireSome(expireSample, nowMS())
			s.mu.Unlock()
			if sampled > expireSample || expired > sampled {
				t.Fatalf("one sample under the lock looked at %d keys and expired %d; want at most %d", sampled, expired, expireSample)
			}
		}
	}
	if got := ks.size(nil); got != n/10 {
		t.Errorf("%d keys left, want %d", got, n/10)
	}
	if ks.collect() < int64(n*9/10)*keyBytes {
		t.Errorf("freed bytes not counted")
	}
	for i := range ks.shards {
		s := &ks.shards[i]
		if len(s.volatile) != len(s.m) {
			t.Fatalf("shard %d: %d volatile keys, %d keys", i, len(s.volatile), len(s.m))
		}
		for j, v := range s.volatile {
			if int(v.e.vidx) != j+1 || s.m[v.key] != v.e {
				t.Fatalf("shard %d: volatile key %d (%q) is out of step", i, j, v.key)
			}
		}
	}
}

// TestShrinkAfterExpiry: a shard whose keys have expired gets a small map.
func TestShrinkAfterExpiry(t *testing.T) {
	ks := newKeyspace(maphash.MakeSeed())
	s := &ks.shards[0]
	for i := range 10000 {
		s.add([]byte("k"+strconv.Itoa(i)), &entry{kind: kindString, expireAt: 1})
	}
	s.add([]byte("stays"), &entry{kind: kindString})
	for len(s.volatile) > 0 {
		s.expireSome(expireSample, nowMS())
	}
	ks.collect()
	if s.peak != 1 || len(s.m) != 1 || s.m["stays"] == nil || cap(s.volatile) > 16 {
		t.Errorf("after the expiry: peak %d, %d keys, volatile cap %d", s.peak, len(s.m), cap(s.volatile))
	}
}

// TestReclaimer: memory is handed back once enough was dropped, not more
// often than every reclaimEvery.
func TestReclaimer(t *testing.T) {
	var r reclaimer
	now := time.Now()
	if r.add(reclaimMin/2, false, now) {
		t.Error("reclaimed after half of reclaimMin")
	}
	if !r.add(0, false, now) {
		t.Error("no reclaim once dropping stopped")
	}
	if r.add(reclaimMin/16, false, now.Add(reclaimEvery)) || r.add(0, false, now.Add(reclaimEvery)) {
		t.Error("reclaimed after reclaimMin/16")
	}
	now = now.Add(2 * reclaimEvery)
	if !r.add(reclaimMin, false, now) {
		t.Error("no reclaim after reclaimMin and more")
	}
	if r.add(reclaimMin, false, now.Add(reclaimEvery/2)) {
		t.Error("reclaimed again within reclaimEvery")
	}
	if !r.add(0, false, now.Add(reclaimEvery)) {
		t.Error("no reclaim after reclaimEvery")
	}
	if !r.add(0, true, now.Add(3*reclaimEvery)) {
		t.Error("no reclaim after FLUSHALL")
	}
}

// TestReclaimerFigures: the heap that stays is the last collection's live
// heap less what was dropped since; no hand-back while the server
// allocates fast; each hand-back needs the drops to be half of what stays.
func TestReclaimerFigures(t *testing.T) {
	const mb = 1 << 20
	var r reclaimer
	now := time.Now()
	h := heapFigures{live: 600 * mb, cycles: 10, allocs: 1000 * mb}
	r.decide(0, false, now, h)
	// 400 MB dropped after the collection that found 600 MB live: 200 MB
	// stays, and 400 is more than half of it (the live figure alone, 600,
	// would have asked for 300 and still been met; 250 MB would not).
	now = now.Add(reclaimEvery)
	if !r.decide(400*mb, false, now, h) {
		t.Error("no hand-back after 400 MB dropped of 600 live")
	}
	// After it (its collection: cycles 11) found 180 MB live, 40 MB
	// dropped: less than half of the 140 that stays.
	h = heapFigures{live: 180 * mb, cycles: 11, allocs: 1000 * mb}
	now = now.Add(reclaimEvery)
	if r.decide(40*mb, false, now, h) || r.decide(0, false, now.Add(reclaimEvery), h) {
		t.Error("hand-back with 40 MB dropped and 140 MB staying")
	}
	// 40 MB more: 80 dropped, 100 stays.
	if !r.decide(40*mb, false, now.Add(2*reclaimEvery), h) {
		t.Error("no hand-back with 80 MB dropped and 100 MB staying")
	}
	r = reclaimer{}
	h = heapFigures{live: 60 * mb, cycles: 3, allocs: 0}
	r.decide(0, false, now, h)
	// 40 MB dropped since the collection that found 60 live: 20 stays.
	// Yet the server allocates 10 MB a tick (a load that reuses it).
	for i := range 5 {
		now = now.Add(reclaimEvery)
		h.allocs += 10 * mb
		if r.decide(8*mb, false, now, h) {
			t.Fatalf("hand-back while allocating, tick %d", i)
		}
	}
	now = now.Add(reclaimEvery)
	if !r.decide(0, false, now, h) {
		t.Error("no hand-back once allocation stopped")
	}
}
