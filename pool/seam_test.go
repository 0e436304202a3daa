package pool_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/loader"
	"github.com/seed54442f1a/rdmapool/pool"
	"github.com/seed54442f1a/rdmapool/pool/pooltest"
	"github.com/seed54442f1a/rdmapool/qp"
)

// The tests in this file dial through pooltest's in-memory Network: every
// fallback, failure and limit is decided by the test, so they run the same
// on a machine with RDMA and without.

func newMemPool(t *testing.T, o pool.Options, serve func(net.Conn)) (*pool.Pool, *pooltest.Network) {
	t.Helper()
	n := pooltest.New(serve)
	o.Network = n
	if o.Addr == "" {
		o.Addr = "10.0.0.1:6379"
	}
	p, err := pool.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		n.Close()
		if open := n.Open(); open != 0 {
			t.Errorf("%d connections left open", open)
		}
	})
	return p, n
}

var memPing = pool.Ping // the echo check of the package's own tests

// TestSeamFallbackReasons: each way RDMA can be unavailable makes Auto
// connect over TCP and report it with its reason; any other RDMA error
// makes it connect over TCP too (ReasonFailed), and try RDMA again on the
// next dial; RDMAOnly returns the RDMA error, with what to do about it.
func TestSeamFallbackReasons(t *testing.T) {
	for _, tc := range []struct {
		f    pooltest.DialFunc
		want pool.FallbackReason
	}{
		{pooltest.NoLibraries, pool.ReasonLibraries},
		{pooltest.NoDevice, pool.ReasonNoDevice},
		{pooltest.Refuse, pool.ReasonRefused},
		{pooltest.Fail(fmt.Errorf("resolve: %w", syscall.EHOSTUNREACH)), pool.ReasonNoRoute},
		{pooltest.Fail(fmt.Errorf("poll: %w", qp.ErrDeviceRemoved)), pool.ReasonDeviceRemoved},
	} {
		t.Run(string(tc.want), func(t *testing.T) {
			var hooked []*pool.FallbackError
			p, n := newMemPool(t, pool.Options{OnFallback: func(fe *pool.FallbackError) { hooked = append(hooked, fe) }}, pooltest.Echo)
			n.OnDial(pool.RDMA, tc.f)
			c, err := p.Get(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			memPing(t, c)
			st := p.Stats()
			if c.Transport() != pool.TCP || st.Fallbacks[tc.want] != 1 || len(hooked) != 1 || hooked[0].Reason != tc.want || st.LastFallback != hooked[0] {
				t.Errorf("over %s, stats %+v, hook %v; want TCP with one fallback for %s", c.Transport(), st, hooked, tc.want)
			}

			r, rn := newMemPool(t, pool.Options{Policy: pool.RDMAOnly}, pooltest.Echo)
			rn.OnDial(pool.RDMA, tc.f)
			if _, err := r.Get(context.Background()); err == nil || rn.Dials(pool.TCP) != 0 {
				t.Errorf("RDMAOnly: %v, %d TCP dials; want the RDMA error and none", err, rn.Dials(pool.TCP))
			}
		})
	}
	t.Run("other", func(t *testing.T) {
		p, n := newMemPool(t, pool.Options{}, pooltest.Echo)
		proto := errors.New("rdma: protocol error")
		n.OnDial(pool.RDMA, pooltest.Fail(proto))
		for i := range 2 {
			c, err := p.Get(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close() // held: each Get dials
			if st := p.Stats(); c.Transport() != pool.TCP || st.LastFallback == nil || st.LastFallback.Reason != pool.ReasonFailed ||
				!errors.Is(st.LastFallback, proto) || n.Dials(pool.RDMA) != i+1 {
				t.Errorf("Get %d: over %s, fallback %v, %d RDMA dials; want TCP, ReasonFailed with the RDMA error, RDMA tried each time", i, c.Transport(), st.LastFallback, n.Dials(pool.RDMA))
			}
		}
	})
}

// TestSeamRetryInterval: after a fallback, Auto dials TCP without trying
// RDMA (Skipped) for RDMARetryInterval, then tries RDMA again and uses it
// once it works.
func TestSeamRetryInterval(t *testing.T) {
	var mu sync.Mutex
	var hooked []*pool.FallbackError
	p, n := newMemPool(t, pool.Options{RDMARetryInterval: 100 * time.Millisecond, OnFallback: func(fe *pool.FallbackError) {
		mu.Lock()
		hooked = append(hooked, fe)
		mu.Unlock()
	}}, pooltest.Echo)
	n.OnDial(pool.RDMA, pooltest.NoDevice)
	ctx := context.Background()
	var held []pool.PooledConn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	get := func(want pool.Transport) {
		t.Helper()
		c, err := p.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c) // held: each Get dials
		if c.Transport() != want {
			t.Fatalf("over %s, want %s", c.Transport(), want)
		}
	}
	get(pool.TCP)
	get(pool.TCP)
	if st := p.Stats(); n.Dials(pool.RDMA) != 1 || len(hooked) != 1 || hooked[0].Skipped || !st.LastFallback.Skipped || st.FallbackConns != 2 {
		t.Errorf("within the interval: %d RDMA dials, hook %v, last %v, covering %d; want 1 RDMA dial, one call covering 2, the second skipped",
			n.Dials(pool.RDMA), hooked, st.LastFallback, st.FallbackConns)
	}
	n.OnDial(pool.RDMA, nil) // RDMA works now
	time.Sleep(150 * time.Millisecond)
	get(pool.RDMA)
	if st := p.Stats(); st.Dials[pool.RDMA] != 1 || st.Dials[pool.TCP] != 2 {
		t.Errorf("dials %v", st.Dials)
	}
}

// TestSeamFallbackOncePerChange: OnFallback is told once per change of
// reason, not per connection: three connections for one reason are one
// call (the later two Skipped, in Stats), another reason is another call,
// and so is the same reason again after an RDMA connection. Stats counts
// every connection, and FallbackConns those the last call covers.
func TestSeamFallbackOncePerChange(t *testing.T) {
	var hooked []*pool.FallbackError
	var mu sync.Mutex
	p, n := newMemPool(t, pool.Options{OnFallback: func(fe *pool.FallbackError) {
		mu.Lock()
		hooked = append(hooked, fe)
		mu.Unlock()
	}}, pooltest.Echo)
	calls := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(hooked)
	}
	get := func(want pool.Transport) {
		t.Helper()
		c, err := p.Get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() }) // held: each Get dials
		if c.Transport() != want {
			t.Fatalf("transport %s, want %s", c.Transport(), want)
		}
	}
	n.OnDial(pool.RDMA, pooltest.NoLibraries)
	for range 3 {
		get(pool.TCP)
	}
	st := p.Stats()
	if calls() != 1 || hooked[0].Reason != pool.ReasonLibraries || hooked[0].Skipped || st.Fallbacks[pool.ReasonLibraries] != 3 ||
		st.FallbackConns != 3 || !st.LastFallback.Skipped || st.Dials[pool.TCP] != 3 || n.Dials(pool.RDMA) != 1 {
		t.Errorf("3 connections, no libraries: hook %v, stats %+v, %d RDMA dials; want one call covering 3, one RDMA dial", hooked, st, n.Dials(pool.RDMA))
	}

	// Another reason: RDMA fails otherwise, tried again each dial.
	q, qn := newMemPool(t, pool.Options{OnFallback: func(fe *pool.FallbackError) {
		mu.Lock()
		hooked = append(hooked, fe)
		mu.Unlock()
	}}, pooltest.Echo)
	hooked = nil
	p, n = q, qn
	n.OnDial(pool.RDMA, pooltest.Fail(errors.New("rdma: protocol error")))
	get(pool.TCP)
	get(pool.TCP)
	n.OnDial(pool.RDMA, pooltest.NoDevice)
	get(pool.TCP)
	if st := p.Stats(); calls() != 2 || hooked[1].Reason != pool.ReasonNoDevice || st.FallbackConns != 1 || st.Fallbacks[pool.ReasonFailed] != 2 {
		t.Errorf("failed twice, then no device: hook %v, stats %+v; want 2 calls, the last covering 1", hooked, st)
	}
	n.OnDial(pool.RDMA, nil)
	p.Close() // a new pool forgets the no-device; RDMA connects, then fails again
	r, rn := newMemPool(t, pool.Options{OnFallback: func(fe *pool.FallbackError) {
		mu.Lock()
		hooked = append(hooked, fe)
		mu.Unlock()
	}}, pooltest.Echo)
	hooked = nil
	p, n = r, rn
	n.OnDial(pool.RDMA, pooltest.Fail(errors.New("rdma: protocol error")))
	get(pool.TCP)
	n.OnDial(pool.RDMA, nil)
	get(pool.RDMA)
	n.OnDial(pool.RDMA, pooltest.Fail(errors.New("rdma: protocol error")))
	get(pool.TCP)
	get(pool.TCP)
	if st := p.Stats(); calls() != 2 || st.FallbackConns != 2 || st.Fallbacks[pool.ReasonFailed] != 3 || st.Dials[pool.RDMA] != 1 {
		t.Errorf("failed, RDMA, failed twice: hook %v, stats %+v; want 2 calls, the last covering 2", hooked, st)
	}
}

// TestSeamServerDown: with the server down, a Get fails at once with the
// TCP error (connection refused) and the RDMA reason both; with it back,
// the next Get connects at once, whatever failed before.
func TestSeamServerDown(t *testing.T) {
	// The pool backs off for an hour: a Get that waited for a backoff
	// would end at its context (a minute), with the context's error, and
	// fail the test by what it returned, not by how long it took.
	p, n := newMemPool(t, pool.Options{MinBackoff: time.Hour}, pooltest.Echo)
	n.OnDial(pool.RDMA, pooltest.NoDevice)
	n.OnDial(pool.TCP, pooltest.Refuse)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i := range 5 {
		_, err := p.Get(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Get %d waited for a backoff: %v", i, err)
		}
		var de *pool.DialError
		var fe *pool.FallbackError
		if !errors.Is(err, syscall.ECONNREFUSED) || !errors.As(err, &de) || !errors.As(err, &fe) || fe.Reason != pool.ReasonNoDevice ||
			!strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "no-device") {
			t.Fatalf("Get %d: %v, want connection refused with the RDMA reason", i, err)
		}
		if i == 0 {
			t.Logf("server down: %v", err)
		}
	}
	n.OnDial(pool.TCP, nil) // the server is back
	c, err := p.Get(ctx)
	if err != nil {
		t.Fatalf("the first Get with the server back: %v", err)
	}
	defer c.Close()
	memPing(t, c)
	if st := p.Stats(); st.DialErrors != 5 {
		t.Errorf("dial errors %d, want 5", st.DialErrors)
	}
}

// TestSeamDialTimeout: a dial that hangs ends at DialTimeout, as a timeout,
// and counts as a dial error; one the caller gives up on does not.
func TestSeamDialTimeout(t *testing.T) {
	p, n := newMemPool(t, pool.Options{Policy: pool.TCPOnly, DialTimeout: 50 * time.Millisecond}, pooltest.Echo)
	n.OnDial(pool.TCP, pooltest.Hang)
	// Only DialTimeout can end this Get before its context's minute: a
	// timeout that is not the context's is DialTimeout's.
	wait, cancelWait := context.WithTimeout(context.Background(), time.Minute)
	defer cancelWait()
	start := time.Now()
	_, err := p.Get(wait)
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || wait.Err() != nil {
		t.Errorf("Get: %v, want DialTimeout's timeout", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("the dial ended after %v, before DialTimeout (50 ms)", d)
	}
	// The caller gives up while the dial runs: the dial cancels the
	// Get's context as it starts (not a timer racing DialTimeout's).
	ctx, cancel := context.WithCancel(context.Background())
	n.OnDial(pool.TCP, func(dctx context.Context, addr string) error {
		cancel()
		return pooltest.Hang(dctx, addr)
	})
	if _, err := p.Get(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Get: %v", err)
	}
	if st := p.Stats(); st.DialErrors != 1 {
		t.Errorf("dial errors %d, want 1 (not the cancelled one)", st.DialErrors)
	}
}

// TestSeamLimits: with no MaxOpen, any number of connections are open at
// once; with one, a Get at the bound fails with ErrExhausted after
// WaitTimeout even on a background context, or when its context ends
// first, and gets a connection that comes back meanwhile.
func TestSeamLimits(t *testing.T) {
	t.Run("unbounded", func(t *testing.T) {
		p, n := newMemPool(t, pool.Options{Policy: pool.TCPOnly}, pooltest.Echo)
		var cs []pool.PooledConn
		for range 200 {
			c, err := p.Get(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
		}
		if n.Open() != 200 {
			t.Errorf("%d open, want 200", n.Open())
		}
		for _, c := range cs {
			c.Close()
		}
	})
	t.Run("bounded", func(t *testing.T) {
		// WaitTimeout ends a Get at the bound on a background context.
		p, _ := newMemPool(t, pool.Options{Policy: pool.TCPOnly, MaxOpen: 2, WaitTimeout: 100 * time.Millisecond}, pooltest.Echo)
		ctx := context.Background()
		a, _ := p.Get(ctx)
		b, _ := p.Get(ctx)
		start := time.Now()
		_, err := p.Get(ctx)
		if d := time.Since(start); !errors.Is(err, pool.ErrExhausted) || errors.Is(err, context.DeadlineExceeded) || d < 100*time.Millisecond {
			t.Errorf("Get at the bound, background context: %v after %v; want ErrExhausted at WaitTimeout (100 ms)", err, d)
		}
		a.Close()
		b.Close()
		if st := p.Stats(); st.Waits != 1 || st.Open != 2 {
			t.Errorf("stats %+v", st)
		}

		// With a WaitTimeout no Get reaches, its context ends it, and a
		// connection that comes back while it waits is its.
		q, _ := newMemPool(t, pool.Options{Policy: pool.TCPOnly, MaxOpen: 2, WaitTimeout: time.Hour}, pooltest.Echo)
		a, _ = q.Get(ctx)
		b, _ = q.Get(ctx)
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		if _, err := q.Get(short); !errors.Is(err, pool.ErrExhausted) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Get at the bound, short context: %v; want ErrExhausted and DeadlineExceeded", err)
		}
		wait, cancelWait := context.WithTimeout(ctx, time.Minute) // a hang, not a measurement
		defer cancelWait()
		go func() {
			for q.Stats().Waits < 2 && wait.Err() == nil { // the next Get waits
				time.Sleep(time.Millisecond)
			}
			a.Close()
		}()
		c, err := q.Get(wait)
		if err != nil {
			t.Fatalf("Get as one comes back: %v", err)
		}
		memPing(t, c)
		c.Close()
		b.Close()
		if st := q.Stats(); st.Waits != 2 || st.Open != 2 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestSeamForwarding: a PooledConn implements the zero-copy interfaces and
// HealthChecker exactly when its connection does, and they work through
// it.
func TestSeamForwarding(t *testing.T) {
	for _, tr := range []pool.Transport{pool.RDMA, pool.TCP} {
		t.Run(string(tr), func(t *testing.T) {
			policy := map[pool.Transport]pool.Policy{pool.RDMA: pool.RDMAOnly, pool.TCP: pool.TCPOnly}[tr]
			p, n := newMemPool(t, pool.Options{Policy: policy}, pooltest.Echo)
			c, err := p.Get(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			_, zr := c.(pool.ZeroCopyReader)
			_, zw := c.(pool.ZeroCopyWriter)
			hc, h := c.(pool.HealthChecker)
			if zr != (tr == pool.RDMA) || zw != (tr == pool.RDMA) || !h {
				t.Fatalf("over %s: ZeroCopyReader %v, ZeroCopyWriter %v, HealthChecker %v", tr, zr, zw, h)
			}
			if !hc.Healthy() {
				t.Error("a fresh connection is not healthy")
			}
			if tr == pool.TCP {
				c.Close()
				return
			}
			w := c.(pool.ZeroCopyWriter)
			b, err := w.Reserve(4)
			if err != nil {
				t.Fatal(err)
			}
			copy(b, "ping")
			if err := w.Commit(4); err != nil { // returns once the echo has read it; its reply waits for our Lease
				t.Fatal(err)
			}
			r := c.(pool.ZeroCopyReader)
			got, err := r.Lease()
			if err != nil || len(got) == 0 {
				t.Fatalf("Lease: %q, %v", got, err)
			}
			m := len(got)
			if err := r.Release(m); err != nil {
				t.Fatal(err)
			}
			if m < 4 {
				rest := make([]byte, 4-m)
				io.ReadFull(c, rest)
			}
			c.Close() // the exchange is complete: back to the pool
			if st := p.Stats(); st.Idle != 1 {
				t.Errorf("after a complete zero-copy exchange: %+v, want it idle", st)
			}

			// A Close with a Lease held closes the connection.
			c, err = p.Get(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
			if _, err := c.(pool.ZeroCopyReader).Lease(); err != nil {
				t.Fatal(err)
			}
			c.Close()
			c.(pool.ZeroCopyReader).Release(1)
			if st := p.Stats(); st.Idle != 0 || st.Open != 0 || n.Open() != 0 {
				t.Errorf("after a Close with a Lease held: %+v, %d open; want it closed", st, n.Open())
			}
			if c.(pool.HealthChecker).Healthy() {
				t.Error("a spent PooledConn says it is healthy")
			}
		})
	}
}

// TestSeamStaleReply: a caller that writes a request and closes its
// PooledConn without reading the reply does not leave that reply for the
// next caller: the connection is closed, not pooled.
func TestSeamStaleReply(t *testing.T) {
	slowEcho := func(c net.Conn) { // replies a moment after each request
		b := make([]byte, 8)
		for {
			if _, err := io.ReadFull(c, b); err != nil {
				return
			}
			time.Sleep(200 * time.Microsecond)
			if _, err := c.Write(b); err != nil {
				return
			}
		}
	}
	p, _ := newMemPool(t, pool.Options{Policy: pool.TCPOnly}, slowEcho)
	ctx := context.Background()
	stale := 0
	for i := range 200 {
		c, err := p.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		req := fmt.Appendf(nil, "%08d", i)
		c.SetDeadline(time.Now().Add(time.Second))
		if i%2 == 0 { // gives up on the reply
			if _, err := c.Write(req); err != nil { // returns once the server has it
				t.Fatal(err)
			}
			c.Close()
			continue
		}
		got := make([]byte, len(req))
		_, err = c.Write(req)
		if err == nil {
			_, err = io.ReadFull(c, got)
		}
		if err != nil || string(got) != string(req) {
			// A pipe is synchronous: over a pooled connection whose reply
			// is still to come, the Write can wait for the server, which
			// waits for the reply to be read.
			stale++
		}
		c.Close()
	}
	if stale != 0 {
		t.Errorf("%d of 100 callers read another's reply", stale)
	}
	if st := p.Stats(); st.Dials[pool.TCP] < 100 {
		t.Errorf("%d dials for 100 abandoned requests: connections with a reply on its way were pooled", st.Dials[pool.TCP])
	}
}

// TestSeamErrorsNoPanic: the environment's errors are values; a Network
// that fails every way leaves the pool usable.
func TestSeamErrorsNoPanic(t *testing.T) {
	p, n := newMemPool(t, pool.Options{}, pooltest.Echo)
	n.OnDial(pool.RDMA, pooltest.NoLibraries)
	n.OnDial(pool.TCP, pooltest.Fail(os.ErrPermission))
	_, err := p.Get(context.Background())
	if !errors.Is(err, os.ErrPermission) || !errors.Is(err, loader.ErrUnavailable) {
		t.Errorf("Get: %v, want both errors", err)
	}
}
