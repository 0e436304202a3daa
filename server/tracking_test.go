package server

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// trackingScript is run by TestTrackingDifferential: connection 0 tracks
// (RESP3), 1 writes, 2 is a RESP2 subscriber of __redis__:invalidate.
var trackingScript = []scriptStep{
	{2, []string{"subscribe", "__redis__:invalidate"}},
	{0, []string{"client", "caching", "yes"}},
	{0, []string{"client", "tracking", "on", "optin", "optout"}},
	{0, []string{"client", "tracking", "on", "prefix", "a"}},
	{0, []string{"client", "tracking", "on", "redirect", "999999"}},
	{0, []string{"client", "tracking", "maybe"}},
	{0, []string{"client", "trackinginfo"}},
	{0, []string{"client", "getredir"}},
	{0, []string{"client", "tracking", "on"}},
	{0, []string{"client", "trackinginfo"}},
	{0, []string{"client", "getredir"}},
	{0, []string{"get", "k"}},
	{1, []string{"set", "k", "v"}},
	{1, []string{"set", "k", "v2"}}, // told once: the read is forgotten
	{0, []string{"get", "k"}},
	{0, []string{"set", "k", "v3"}}, // its own change: after the reply
	{0, []string{"mget", "a", "b", "c"}},
	{1, []string{"del", "a", "c"}},
	{0, []string{"get", "b"}},
	{1, []string{"flushall"}},
	{0, []string{"get", "k"}},
	{0, []string{"flushdb"}},
	{0, []string{"client", "tracking", "on", "optout"}}, // on already, not optin: allowed
	{0, []string{"client", "tracking", "off"}},
	{0, []string{"client", "tracking", "on", "optin"}},
	{0, []string{"get", "x"}},
	{1, []string{"set", "x", "1"}},
	{0, []string{"client", "caching", "no"}},
	{0, []string{"client", "caching", "yes"}},
	{0, []string{"client", "trackinginfo"}},
	{0, []string{"get", "x"}},
	{1, []string{"set", "x", "2"}},
	{0, []string{"client", "caching", "yes"}},
	{0, []string{"multi"}},
	{0, []string{"pttl", "y"}},
	{0, []string{"get", "y"}},
	{0, []string{"exec"}},
	{1, []string{"set", "y", "1"}},
	{0, []string{"client", "tracking", "on", "optout"}},
	{0, []string{"client", "tracking", "off"}},
	{0, []string{"client", "tracking", "on", "optout", "noloop"}},
	{0, []string{"get", "z"}},
	{0, []string{"set", "z", "mine"}},
	{0, []string{"get", "z"}},
	{1, []string{"set", "z", "theirs"}},
	{0, []string{"client", "caching", "no"}},
	{0, []string{"get", "w"}},
	{1, []string{"set", "w", "1"}},
	{0, []string{"client", "tracking", "off"}},
	{0, []string{"client", "tracking", "on", "redirect", "$ID2"}},
	{0, []string{"get", "r"}},
	{1, []string{"set", "r", "1"}},
	{0, []string{"get", "r"}},
	{0, []string{"incr", "r"}},
	{1, []string{"flushdb"}},
	{0, []string{"client", "tracking", "off"}},
	{0, []string{"get", "q"}},
	{1, []string{"set", "q", "1"}},
	{0, []string{"client", "tracking", "on", "bcast", "prefix", "a", "prefix", "ab"}},
	{0, []string{"client", "tracking", "on", "bcast", "optin"}},
	{0, []string{"client", "tracking", "on", "bcast", "prefix", "a", "prefix", "b", "noloop"}},
	{0, []string{"client", "trackinginfo"}},
	{0, []string{"client", "tracking", "on"}},
	{0, []string{"client", "tracking", "on", "bcast", "prefix", "bc"}},
	{1, []string{"mset", "a2", "1", "b1", "1", "a1", "1", "c1", "1", "x", "1"}},
	{0, []string{"set", "a3", "1"}},
	{0, []string{"get", "a3"}},
	{1, []string{"set", "a3", "2"}},
	{0, []string{"client", "tracking", "on", "bcast", "prefix", "c"}},
	{0, []string{"client", "trackinginfo"}},
	{0, []string{"set", "a4", "1"}},
	{1, []string{"del", "c1", "a1"}},
	{1, []string{"flushall"}},
	{0, []string{"client", "tracking", "off"}},
	{0, []string{"client", "tracking", "on", "bcast"}},
	{0, []string{"client", "trackinginfo"}},
	{1, []string{"set", "zz", "1"}},
	{0, []string{"client", "tracking", "off"}},
	{1, []string{"set", "zz", "2"}},
}

// TestTrackingDifferential compares the replies and invalidations of
// trackingScript with valkey-server's.
func TestTrackingDifferential(t *testing.T) {
	theirs := testutil.ValkeyServer(t)
	_, ours := startServer(t, nil)
	compareScript(t, ours, theirs, [3]string{"3", "3", "2"}, trackingScript)
}

// TestTrackingExpiry: a key read by a tracking client is invalidated
// when it expires (the active expiry cycle deletes it).
func TestTrackingExpiry(t *testing.T) {
	_, addr := startServer(t, nil)
	rc, w := dialRaw(t, addr), dialRaw(t, addr)
	rc.do("hello", "3")
	rc.send(encode("client", "tracking", "on"))
	rc.expect("+OK\r\n")
	w.send(encode("set", "e", "v", "px", "50"))
	w.expect("+OK\r\n")
	rc.send(encode("get", "e"))
	rc.expect("$1\r\nv\r\n")
	// Nothing else happens to e: only its expiry can send this.
	rc.expect(">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\ne\r\n")
}

// TestTrackingValkeyGo: valkey-go's client with its default options (a
// client-side cache, CLIENT TRACKING ON OPTIN) caches a GET, and sees
// another client's SET at the next DoCache: the invalidation arrived and
// emptied its cache.
func TestTrackingValkeyGo(t *testing.T) {
	_, addr := startServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cached, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, DisableRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cached.Close()
	other := valkeyGo(t, addr, false)
	if err := other.Do(ctx, other.B().Set().Key("k").Value("v1").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	get := func() (string, bool) {
		r := cached.DoCache(ctx, cached.B().Get().Key("k").Cache(), time.Minute)
		v, err := r.ToString()
		if err != nil {
			t.Fatal(err)
		}
		return v, r.IsCacheHit()
	}
	if v, hit := get(); v != "v1" || hit {
		t.Fatalf("first DoCache: %q, hit %v; want v1 from the server", v, hit)
	}
	if v, hit := get(); v != "v1" || !hit {
		t.Fatalf("second DoCache: %q, hit %v; want v1 from the cache", v, hit)
	}
	if err := other.Do(ctx, other.B().Set().Key("k").Value("v2").Build()).Error(); err != nil {
		t.Fatal(err)
	}
	// The invalidation is pushed after the SET's reply; DoCache is served
	// from the cache until it has arrived, then from the server.
	for {
		v, hit := get()
		if !hit {
			if v != "v2" {
				t.Fatalf("DoCache after the invalidation: %q, want v2", v)
			}
			break
		}
		if v != "v1" {
			t.Fatalf("a cache hit of %q, want v1", v)
		}
		if ctx.Err() != nil {
			t.Fatal("no invalidation arrived")
		}
		time.Sleep(time.Millisecond)
	}
	if v, hit := get(); v != "v2" || !hit {
		t.Fatalf("DoCache after: %q, hit %v; want v2 from the cache", v, hit)
	}
}

// TestTrackingNotPubsubLimited: a client that tracks keys but subscribes
// to nothing is a normal client, which PubsubLimit does not bound: an
// invalidation that comes while a large reply waits unread does not
// close it.
func TestTrackingNotPubsubLimited(t *testing.T) {
	srv, addr := startServer(t, &Options{PubsubLimit: OutputLimit{Hard: 1 << 20, Soft: -1}})
	rc, w := dialRaw(t, addr), dialRaw(t, addr)
	rc.do("hello", "3")
	rc.send(encode("client", "tracking", "on"))
	rc.expect("+OK\r\n")
	big := strings.Repeat("b", 8<<20)
	w.send(encode("set", "big", big))
	w.expect("+OK\r\n")
	rc.send(encode("get", "k"))
	rc.expect("_\r\n")
	rc.send(encode("get", "big") + encode("get", "big"))
	// The replies wait unread while the invalidation is posted (before
	// or after them: the GETs may not have run yet).
	for range 2 {
		w.send(encode("set", "k", "v"))
		w.expect("+OK\r\n")
	}
	bigs, pushes := 0, 0
	for range 3 {
		switch r := rc.reply(); {
		case r == ">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n":
			pushes++
		case len(r) == len(big)+len("$8388608\r\n\r\n"):
			bigs++
		default:
			t.Fatalf("reply of %d bytes", len(r))
		}
	}
	if bigs != 2 || pushes != 1 {
		t.Errorf("%d GET replies and %d invalidations, want 2 and 1", bigs, pushes)
	}
	if n := srv.Stats().OutputLimitClosed; n != 0 {
		t.Errorf("OutputLimitClosed = %d, want 0", n)
	}
}

// TestTrackingConcurrent: valkey-go clients with their caches read keys
// while others write them; once the writers stop, each client's DoCache
// converges to the last value written (no invalidation was lost between
// a read's record and a write). Run it with -race.
func TestTrackingConcurrent(t *testing.T) {
	_, addr := startServer(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const readers, writers, rounds, nkeys = 4, 2, 300, 8
	key := func(i int) string { return "ck" + strconv.Itoa(i%nkeys) }
	var cls []valkey.Client
	for range readers {
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, DisableRetry: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cls = append(cls, c)
	}
	w := valkeyGo(t, addr, false)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				if err := w.Do(ctx, w.B().Set().Key(key(r+i)).Value(strconv.Itoa(r)).Build()).Error(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for _, c := range cls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				if err := c.DoCache(ctx, c.B().Get().Key(key(r)).Cache(), time.Minute).Error(); err != nil && !valkey.IsValkeyNil(err) {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// The final values, written after everything else.
	for k := range nkeys {
		if err := w.Do(ctx, w.B().Set().Key(key(k)).Value("final").Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range cls {
		for k := range nkeys {
			for {
				v, err := c.DoCache(ctx, c.B().Get().Key(key(k)).Cache(), time.Minute).ToString()
				if err == nil && v == "final" {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("client %d, %s: %q, %v: an invalidation was lost", i, key(k), v, err)
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
}
