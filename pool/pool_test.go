package pool

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/loader"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
)

// testEngines are the TCP engines that the tests of Pools and Dialers run
// on. Package pool_test's engines_test.go adds gnettcp.Engine, which a
// test of package pool cannot import (gnettcp imports pool).
var testEngines = []TCPEngine{TCPNetpoll}

// newEchoServer serves TCP echo on 127.0.0.1 until the test ends.
func newEchoServer(t *testing.T) *testutil.Server { return testutil.NewServer(t, testutil.Echo) }

func newPool(t *testing.T, o Options) *Pool {
	t.Helper()
	g := runtime.NumGoroutine()
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Close()
		checkGoroutines(t, g)
	})
	return p
}

func checkGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines left behind:\n%s", n-before, buf[:runtime.Stack(buf, true)])
	}
}

func ping(t *testing.T, c net.Conn) {
	t.Helper()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	if _, err := io.ReadFull(c, b); err != nil || string(b) != "ping" {
		t.Fatalf("echo: %q, %v", b, err)
	}
}

func TestPoolLimitAndWait(t *testing.T) {
	s := newEchoServer(t)
	p := newPool(t, Options{Addr: s.Addr(), Policy: TCPOnly, MaxOpen: 2})
	ctx := context.Background()
	a, err := p.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ping(t, a)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := p.Get(short); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrExhausted) {
		t.Fatalf("Get at the limit: %v, want ErrExhausted and context.DeadlineExceeded", err)
	}
	got := make(chan PooledConn, 1)
	go func() {
		c, err := p.Get(ctx)
		if err != nil {
			t.Error(err)
		}
		got <- c
	}()
	for p.Stats().Waits < 2 { // the goroutine is waiting
		time.Sleep(time.Millisecond)
	}
	a.Close()
	c := <-got
	if c.pooled().Conn != a.pooled().Conn {
		t.Errorf("the waiter did not get the returned connection")
	}
	ping(t, c)
	st := p.Stats()
	if st.Open != 2 || st.InUse != 2 || st.Waits != 2 || st.WaitTime <= 0 || st.Dials[TCP] != 2 {
		t.Errorf("stats %+v", st)
	}
	c.Close()
	b.Close()
	if st := p.Stats(); st.Idle != 2 || st.InUse != 0 {
		t.Errorf("after returning both: %+v", st)
	}
}

func TestPoolCloseWakesWaiters(t *testing.T) {
	s := newEchoServer(t)
	p := newPool(t, Options{Addr: s.Addr(), Policy: TCPOnly, MaxOpen: 1})
	c, err := p.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 3)
	for range 3 {
		go func() {
			_, err := p.Get(context.Background())
			errc <- err
		}()
	}
	time.Sleep(30 * time.Millisecond)
	p.Close()
	for range 3 {
		if err := <-errc; !errors.Is(err, ErrClosed) || !errors.Is(err, net.ErrClosed) {
			t.Errorf("waiter after Close: %v", err)
		}
	}
	c.Close() // closed for good: the pool is closed
	if st := p.Stats(); st.Open != 0 {
		t.Errorf("open after Close and return: %d", st.Open)
	}
}

func TestPoolHealthCheck(t *testing.T) {
	s := newEchoServer(t)
	p := newPool(t, Options{Addr: s.Addr(), Policy: TCPOnly})
	c, err := p.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ping(t, c)
	c.Close()
	s.Kill() // the server drops the idle connection
	time.Sleep(50 * time.Millisecond)
	c2, err := p.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	ping(t, c2) // a new, working connection
	if st := p.Stats(); st.Unhealthy != 1 || st.Dials[TCP] != 2 {
		t.Errorf("stats %+v, want 1 unhealthy and 2 dials", st)
	}
}

func TestPoolBrokenConnIsNotReused(t *testing.T) {
	s := newEchoServer(t)
	p := newPool(t, Options{Addr: s.Addr(), Policy: TCPOnly})
	c, err := p.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("read succeeded")
	}
	c.Close()
	if st := p.Stats(); st.Idle != 0 || st.Open != 0 {
		t.Errorf("a connection that timed out was kept: %+v", st)
	}
}

func TestPoolEvictionAndLifetime(t *testing.T) {
	s := newEchoServer(t)
	p := newPool(t, Options{Addr: s.Addr(), Policy: TCPOnly, MaxIdleTime: 50 * time.Millisecond})
	c, _ := p.Get(context.Background())
	c.Close()
	deadline := time.Now().Add(time.Minute)
	for p.Stats().Open != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := p.Stats(); st.Idle != 0 || st.Evicted != 1 || st.Open != 0 {
		t.Errorf("idle connection not evicted: %+v", st)
	}

	p2 := newPool(t, Options{Addr: s.Addr(), Policy: TCPOnly, MaxLifetime: 30 * time.Millisecond})
	c, _ = p2.Get(context.Background())
	time.Sleep(60 * time.Millisecond)
	c.Close() // too old: closed, not kept
	if st := p2.Stats(); st.Idle != 0 || st.Evicted != 1 {
		t.Errorf("old connection kept: %+v", st)
	}
}

func TestPoolMinIdle(t *testing.T) {
	s := newEchoServer(t)
	p := newPool(t, Options{Addr: s.Addr(), Policy: TCPOnly, MinIdle: 3})
	deadline := time.Now().Add(time.Minute)
	for p.Stats().Idle < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if st := p.Stats(); st.Idle != 3 {
		t.Errorf("MinIdle 3, idle %d", st.Idle)
	}
}

func TestPoolDialFailureNoWait(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	p := newPool(t, Options{Addr: addr, Policy: TCPOnly, MinBackoff: time.Minute, MaxBackoff: time.Hour})
	// A Get that waited for the minute's backoff would end at its
	// context's 30 s with the context's error, not the refusal.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for range 3 {
		_, err := p.Get(ctx)
		if !errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Get with nothing listening: %v, want connection refused at once", err)
		}
	}
	if st := p.Stats(); st.DialErrors != 3 || st.Open != 0 {
		t.Errorf("stats %+v", st)
	}
	p.mu.Lock()
	next := p.nextDial
	p.mu.Unlock()
	if time.Until(next) < 30*time.Second {
		t.Errorf("after failed dials the top-up may dial again at %v, want a backoff of a minute", next)
	}
}

// TestPoolMinIdleBacksOff: the background top-up to MinIdle waits out the
// backoff after a failed dial, while a Get dials at once.
func TestPoolMinIdleBacksOff(t *testing.T) {
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	p := newPool(t, Options{Addr: addr, Policy: TCPOnly, MinIdle: 2, MinBackoff: time.Minute, MaxBackoff: time.Hour})
	deadline := time.Now().Add(time.Minute)
	for p.Stats().DialErrors == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the maintainer would dial again now
	if st := p.Stats(); st.DialErrors != 1 {
		t.Errorf("the top-up dialled %d times in its backoff, want once", st.DialErrors)
	}
	if _, err := p.Get(context.Background()); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Get in the top-up's backoff: %v, want it to dial and be refused", err)
	}
}

func TestPoolConcurrent(t *testing.T) {
	s := newEchoServer(t)
	p := newPool(t, Options{Addr: s.Addr(), Policy: TCPOnly, MaxOpen: 4})
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for range 50 {
				c, err := p.Get(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if st := p.Stats(); st.Open > 4 {
					t.Errorf("open %d > MaxOpen", st.Open)
				}
				ping(t, c)
				c.Close()
			}
		})
	}
	wg.Wait()
}

// TestAutoFallsBack: with no RDMA here, Auto dials TCP and says why; RDMA
// only fails with the reason.
func TestAutoFallsBack(t *testing.T) {
	if rdmatest.Available() {
		t.Skip("this machine has RDMA; the fallback from missing RDMA is tested on the host")
	}
	s := newEchoServer(t)
	var hooked []*FallbackError
	var mu sync.Mutex
	p := newPool(t, Options{Addr: s.Addr(), OnFallback: func(fe *FallbackError) {
		mu.Lock()
		hooked = append(hooked, fe)
		mu.Unlock()
	}})
	c, err := p.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.Transport() != TCP {
		t.Errorf("transport %s, want tcp", c.Transport())
	}
	ping(t, c)
	st := p.Stats()
	if st.LastFallback == nil || st.Fallbacks[st.LastFallback.Reason] != 1 || len(hooked) != 1 {
		t.Fatalf("fallback not reported: %+v, hook %v", st, hooked)
	}
	t.Logf("fallback: %v", st.LastFallback)
	c.Close() // idle now: p's maintainer starts before r counts goroutines

	r := newPool(t, Options{Addr: s.Addr(), Policy: RDMAOnly})
	_, err = r.Get(context.Background())
	if err == nil {
		t.Fatal("RDMA only succeeded without RDMA")
	}
	if fallbackReason(err) == "" && !errors.Is(err, loader.ErrUnavailable) {
		t.Errorf("RDMA only: %v, want an error saying RDMA is unavailable", err)
	}
	t.Logf("RDMA only: %v", err)
}

// TestPoolStaleHandle: a PooledConn closed once is spent. Closing or
// discarding it again, once a later Get has the same connection, leaves
// that Get's use alone: the connection does not go idle under it, is not
// handed out twice, and is not closed.
func TestPoolStaleHandle(t *testing.T) {
	s := newEchoServer(t)
	p := newPool(t, Options{Addr: s.Addr(), Policy: TCPOnly, MaxOpen: 2})
	ctx := context.Background()
	a, err := p.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	b, err := p.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b == a || b.pooled().Conn != a.pooled().Conn {
		t.Fatalf("the second Get: handle %p conn %p, first %p conn %p; want a new handle for the same connection", b, b.pooled().Conn, a, a.pooled().Conn)
	}
	a.Close()
	a.Discard()
	if st := p.Stats(); st.Idle != 0 || st.InUse != 1 || st.Open != 1 {
		t.Errorf("after the stale Close and Discard: %+v, want the one connection in use", st)
	}
	c, err := p.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.pooled().Conn == b.pooled().Conn {
		t.Fatal("the connection in use was handed out again")
	}
	if _, err := a.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write on a spent handle: %v, want net.ErrClosed", err)
	}
	if _, err := a.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read on a spent handle: %v, want net.ErrClosed", err)
	}
	if err := a.SetDeadline(time.Now()); !errors.Is(err, net.ErrClosed) {
		t.Errorf("SetDeadline on a spent handle: %v, want net.ErrClosed", err)
	}
	ping(t, b) // untouched by all of the above
	ping(t, c)
	b.Close()
	if st := p.Stats(); st.Idle != 1 || st.InUse != 1 || st.Open != 2 {
		t.Errorf("after b's Close: %+v", st)
	}
}

// TestPoolCloseDuringRead: a Close of a handle whose Read is still running
// (from another goroutine, as on a context's cancel) closes the connection
// for good and ends the Read; it does not go idle for the next Get to share
// with that Read.
func TestPoolCloseDuringRead(t *testing.T) {
	s := newEchoServer(t)
	p := newPool(t, Options{Addr: s.Addr(), Policy: TCPOnly, MaxOpen: 2})
	ctx := context.Background()
	a, err := p.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	readErr := make(chan error, 1)
	go func() {
		_, err := a.Read(make([]byte, 1)) // nothing comes
		readErr <- err
	}()
	for a.pooled().calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	a.Close()
	select {
	case err := <-readErr:
		if !errors.Is(err, net.ErrClosed) {
			t.Errorf("the Read running at Close: %v, want net.ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the Read running at Close did not end")
	}
	if st := p.Stats(); st.Idle != 0 || st.InUse != 0 || st.Open != 0 {
		t.Errorf("after the Close: %+v, want the connection closed", st)
	}
	b, err := p.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.pooled().Conn == a.pooled().Conn {
		t.Fatal("the connection of the running Read was handed out again")
	}
	ping(t, b)
}

// getAsync runs Get on its own goroutine.
func getAsync(p *Pool, ctx context.Context) <-chan error {
	errc := make(chan error, 1)
	go func() {
		c, err := p.Get(ctx)
		if c != nil {
			c.Close()
		}
		errc <- err
	}()
	return errc
}

// wantGetErr waits for the error of a Get (getAsync) that Close should end
// at once, where the test set it to wait an hour otherwise: a minute's
// wait is a hang, not a measurement.
func wantGetErr(t *testing.T, errc <-chan error, what string) {
	t.Helper()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", what, err)
		}
	case <-time.After(time.Minute):
		t.Fatalf("%s still waits a minute after Close", what)
	}
}

// TestPoolCloseCancelsDial: Close cancels a dial under way, whose Get
// returns ErrClosed without counting a dial error.
func TestPoolCloseCancelsDial(t *testing.T) {
	addr := testutil.FullListener(t)
	p := newPool(t, Options{Addr: addr, Policy: TCPOnly, DialTimeout: time.Hour})
	errc := getAsync(p, context.Background())
	time.Sleep(100 * time.Millisecond) // the connect hangs
	p.Close()
	wantGetErr(t, errc, "Get dialling")
	if st := p.Stats(); st.Open != 0 || st.DialErrors != 0 {
		t.Errorf("after Close: %+v", st)
	}
}

// TestPoolCallerCancelNoBackoff: a Get whose own context ends, before or
// during the dial, is no dial error and starts no backoff: the next Get
// dials at once.
func TestPoolCallerCancelNoBackoff(t *testing.T) {
	s := newEchoServer(t)
	// The backoff is an hour and the next Get's context a minute: a Get
	// that waited for a backoff would fail by its context, whatever the
	// machine's speed.
	p := newPool(t, Options{Addr: s.Addr(), Policy: TCPOnly, MinBackoff: time.Hour, MaxBackoff: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if c, err := p.Get(ctx); !errors.Is(err, context.Canceled) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("Get with a cancelled context: %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := p.Get(ctx)
	if err != nil {
		t.Fatalf("Get after another's cancelled Get: %v", err)
	}
	ping(t, c)
	c.Close()

	addr := testutil.FullListener(t)
	q := newPool(t, Options{Addr: addr, Policy: TCPOnly, MinBackoff: time.Hour, MaxBackoff: time.Hour, DialTimeout: time.Hour})
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if _, err := q.Get(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Get cancelled while dialling: %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := q.Get(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Get whose deadline passed while dialling: %v, want context.DeadlineExceeded", err)
	}
	for _, p := range []*Pool{p, q} {
		p.mu.Lock()
		next := p.nextDial
		p.mu.Unlock()
		if st := p.Stats(); st.DialErrors != 0 || !next.IsZero() {
			t.Errorf("after Gets that gave up: %d dial errors, next dial at %v; want none and no backoff", st.DialErrors, next)
		}
	}
}

// TestPoolNewBadPolicy: New rejects a Policy that is none of the three.
func TestPoolNewBadPolicy(t *testing.T) {
	if p, err := New(Options{Addr: "127.0.0.1:1", Policy: Policy(7)}); err == nil {
		p.Close()
		t.Fatal("New accepted Policy(7)")
	}
}

// TestPoolIdleSlotsCleared: taking an idle connection or evicting some
// leaves no pointer to them past the end of the idle slice.
func TestPoolIdleSlotsCleared(t *testing.T) {
	s := newEchoServer(t)
	p := newPool(t, Options{Addr: s.Addr(), Policy: TCPOnly, MaxOpen: 3})
	ctx := context.Background()
	var cs []PooledConn
	for range 3 {
		c, err := p.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	for _, c := range cs {
		c.Close()
	}
	tailClear := func(what string) {
		t.Helper()
		p.mu.Lock()
		defer p.mu.Unlock()
		for i, e := range p.idle[len(p.idle):cap(p.idle)] {
			if e != nil {
				t.Errorf("%s: idle slot %d past the end still holds a connection", what, len(p.idle)+i)
			}
		}
	}
	c, err := p.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tailClear("after Get")
	c.Close()
	p.mu.Lock()
	for _, e := range p.idle[:2] { // the two least recently used
		e.lastUsed = time.Now().Add(-time.Hour)
	}
	p.mu.Unlock()
	p.evictIdle()
	if st := p.Stats(); st.Idle != 1 || st.Evicted != 2 {
		t.Errorf("after evicting two: %+v", st)
	}
	tailClear("after evictIdle")
}

// TestPoolTCPEngineOption: no TCPEngine is TCPNetpoll, and a Pool dials
// its TCP connections with the engine it is given.
func TestPoolTCPEngineOption(t *testing.T) {
	s := newEchoServer(t)
	p := newPool(t, Options{Addr: s.Addr(), Policy: TCPOnly})
	c, err := p.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.SyscallConn(); err != nil { // netpoll's connections have a socket
		t.Errorf("no TCPEngine: SyscallConn: %v, want netpoll's socket", err)
	}
	c.Close()
	if TCPNetpoll.String() != "netpoll" {
		t.Errorf("TCPNetpoll.String() = %q", TCPNetpoll.String())
	}
	e := &countingEngine{}
	p = newPool(t, Options{Addr: s.Addr(), Policy: TCPOnly, TCPEngine: e})
	c, err = p.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ping(t, c)
	c.Close()
	if e.dials.Load() != 1 {
		t.Errorf("the engine dialled %d connections, want 1", e.dials.Load())
	}
}

// countingEngine is TCPNetpoll, counting its dials.
type countingEngine struct{ dials atomic.Int64 }

func (e *countingEngine) String() string { return "counting" }
func (e *countingEngine) DialTCP(ctx context.Context, addr string, nd *net.Dialer) (Conn, error) {
	e.dials.Add(1)
	return TCPNetpoll.DialTCP(ctx, addr, nd)
}

// TestPooledSyscallConn: a netpoll connection hands out its socket, and is
// then closed, not pooled, when it comes back; a spent handle fails.
// (package gnettcp's TestPooledNoSyscallConn: a gnet one has no socket of
// its own.)
func TestPooledSyscallConn(t *testing.T) {
	s := newEchoServer(t)
	p := newPool(t, Options{Addr: s.Addr(), Policy: TCPOnly})
	c, err := p.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	if err := raw.Control(func(s uintptr) { fd = int(s) }); err != nil || fd < 0 {
		t.Fatalf("Control: fd %d, %v", fd, err)
	}
	ping(t, c)
	c.Close()
	if st := p.Stats(); st.Idle != 0 || st.Open != 0 {
		t.Errorf("a connection whose socket was taken was pooled: %+v", st)
	}
	if _, err := c.SyscallConn(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("SyscallConn after Close: %v, want net.ErrClosed", err)
	}
}
