package pool_test

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/loader"
	"github.com/seed54442f1a/rdmapool/loader/probe"
	"github.com/seed54442f1a/rdmapool/pool"
	"github.com/seed54442f1a/rdmapool/pool/pooltest"
	"github.com/seed54442f1a/rdmapool/qp"
)

// The tests in this file drive Auto's happy eyeballs between RDMA and TCP
// (pooltest decides how each dial ends), the errors of failed dials, and
// the first dial of a fresh process.

// closedBothSides fails t unless every connection n made is closed on
// both sides once p is closed: the client ends at once (Close waits for
// the losing dials), the server ends when their serve has seen the close.
func closedBothSides(t *testing.T, p *pool.Pool, n *pooltest.Network) {
	t.Helper()
	p.Close()
	if open := n.Open(); open != 0 {
		t.Errorf("%d client connections open after Close", open)
	}
	for i := 0; n.Serving() != 0; i++ {
		if i == 1000 {
			t.Fatalf("%d server ends still open 10 s after Close", n.Serving())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEyeballsHungRDMA: with an RDMA dial that hangs, Auto starts TCP after
// FallbackDelay and uses it, cancelling RDMA (ReasonSlow); the next dial
// tries RDMA first again.
func TestEyeballsHungRDMA(t *testing.T) {
	var hooked []*pool.FallbackError
	var mu sync.Mutex
	p, n := newMemPool(t, pool.Options{OnFallback: func(fe *pool.FallbackError) {
		mu.Lock()
		hooked = append(hooked, fe)
		mu.Unlock()
	}}, pooltest.Echo)
	n.OnDial(pool.RDMA, pooltest.Hang)
	ctx := context.Background()
	for i := range 2 {
		c, err := p.Get(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close() // held: each Get dials
		memPing(t, c)
		if c.Transport() != pool.TCP || n.Dials(pool.RDMA) != i+1 || n.Dials(pool.TCP) != i+1 {
			t.Errorf("Get %d: over %s after %d RDMA and %d TCP dials; want TCP, RDMA tried first each time", i, c.Transport(), n.Dials(pool.RDMA), n.Dials(pool.TCP))
		}
	}
	st := p.Stats()
	mu.Lock()
	if len(hooked) != 1 || hooked[0].Reason != pool.ReasonSlow || st.Fallbacks[pool.ReasonSlow] != 2 || st.FallbackConns != 2 || st.Dials[pool.RDMA] != 0 {
		t.Errorf("hook %v, stats %+v; want one call (slow) covering 2 TCP connections", hooked, st)
	}
	mu.Unlock()
	t.Logf("fallback: %v", st.LastFallback)
}

// TestEyeballsLoserClosed: the dial that loses the race is cancelled and,
// when it connects all the same, closed: on both sides nothing is left
// open once the pool closes, whichever transport lost.
func TestEyeballsLoserClosed(t *testing.T) {
	t.Run("rdma-loses", func(t *testing.T) {
		p, n := newMemPool(t, pool.Options{FallbackDelay: time.Millisecond}, pooltest.Echo)
		release := make(chan struct{})
		n.OnDial(pool.RDMA, func(context.Context, string) error { <-release; return nil }) // connects late, whatever ctx says
		c, err := p.Get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		memPing(t, c)
		if c.Transport() != pool.TCP {
			t.Errorf("over %s, want TCP (RDMA had not connected)", c.Transport())
		}
		close(release)
		c.Close()
		closedBothSides(t, p, n)
		if st := p.Stats(); st.Dials[pool.RDMA] != 0 || st.Dials[pool.TCP] != 1 || n.Dials(pool.RDMA) != 1 {
			t.Errorf("stats %+v; want the one TCP connection counted", st)
		}
	})
	t.Run("tcp-loses", func(t *testing.T) {
		p, n := newMemPool(t, pool.Options{FallbackDelay: time.Millisecond}, pooltest.Echo)
		tcpStarted := make(chan struct{})
		n.OnDial(pool.RDMA, func(context.Context, string) error { <-tcpStarted; return nil })
		n.OnDial(pool.TCP, func(ctx context.Context, _ string) error {
			close(tcpStarted)
			<-ctx.Done()
			return nil // connects as it is cancelled
		})
		c, err := p.Get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		memPing(t, c)
		if c.Transport() != pool.RDMA {
			t.Errorf("over %s, want RDMA (it connected first)", c.Transport())
		}
		c.Close()
		closedBothSides(t, p, n)
		if st := p.Stats(); st.Dials[pool.RDMA] != 1 || st.Dials[pool.TCP] != 0 || st.LastFallback != nil || n.Dials(pool.TCP) != 1 {
			t.Errorf("stats %+v; want the one RDMA connection, no fallback", st)
		}
	})
}

// TestEyeballsBothFail: when both dials fail, the error is a *DialError
// with both: TCP's (refused) and RDMA's (its dial timed out), each naming
// its transport.
func TestEyeballsBothFail(t *testing.T) {
	p, n := newMemPool(t, pool.Options{DialTimeout: 100 * time.Millisecond}, pooltest.Echo)
	n.OnDial(pool.RDMA, pooltest.Hang)
	n.OnDial(pool.TCP, pooltest.Refuse)
	_, err := p.Get(context.Background())
	var de *pool.DialError
	var ne net.Error
	if !errors.As(err, &de) || !errors.Is(err, syscall.ECONNREFUSED) || !errors.Is(err, context.DeadlineExceeded) ||
		de.Fallback.Reason != pool.ReasonFailed || !errors.As(err, &ne) || !ne.Timeout() ||
		!strings.Contains(err.Error(), "dial tcp") || !strings.Contains(err.Error(), "dial rdma") {
		t.Errorf("Get: %v; want a *DialError, refused over TCP and timed out over RDMA", err)
	}
	t.Logf("both failed: %v", err)
}

// TestEyeballsNoSuchHost: a name that does not resolve fails under Auto
// with a *DialError naming both transports' errors.
func TestEyeballsNoSuchHost(t *testing.T) {
	p, n := newMemPool(t, pool.Options{Addr: "nonexistent.invalid:6379"}, pooltest.Echo)
	lookup := func(_ context.Context, addr string) error {
		return &net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "nonexistent.invalid", IsNotFound: true}}
	}
	n.OnDial(pool.RDMA, lookup)
	n.OnDial(pool.TCP, lookup)
	_, err := p.Get(context.Background())
	var de *pool.DialError
	var dns *net.DNSError
	if !errors.As(err, &de) || !errors.As(de.TCP, &dns) || !errors.As(de.Fallback.Err, &dns) || !strings.Contains(err.Error(), "dial rdma") || !strings.Contains(err.Error(), "dial tcp") {
		t.Errorf("Get: %v; want a *DialError with both lookups' errors", err)
	}

	// The same on this machine's network, through a zero Dialer.
	var d pool.Dialer
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = d.DialContext(ctx, "tcp", "nonexistent.invalid:6379")
	if !errors.As(err, &de) {
		t.Errorf("zero Dialer, a name that does not resolve: %v; want a *DialError", err)
	}
	t.Logf("zero Dialer: %v", err)
}

// TestPooltestHangNamesTransport: pooltest.Hang's and Refuse's errors name
// the transport dialled.
func TestPooltestHangNamesTransport(t *testing.T) {
	for _, tr := range []pool.Transport{pool.RDMA, pool.TCP} {
		n := pooltest.New(pooltest.Echo)
		n.OnDial(tr, pooltest.Hang)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		var err error
		if tr == pool.RDMA {
			_, err = n.DialRDMA(ctx, "a:1", nil)
		} else {
			_, err = n.DialTCP(ctx, "a:1", nil)
		}
		if err == nil || !strings.HasPrefix(err.Error(), "dial "+string(tr)+" ") {
			t.Errorf("Hang on %s: %v; want it to name %s", tr, err, tr)
		}
		n.OnDial(tr, pooltest.Refuse)
		if tr == pool.RDMA {
			_, err = n.DialRDMA(context.Background(), "a:1", nil)
		} else {
			_, err = n.DialTCP(context.Background(), "a:1", nil)
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || !strings.HasPrefix(err.Error(), "dial "+string(tr)+" ") {
			t.Errorf("Refuse on %s: %v; want it to name %s", tr, err, tr)
		}
		n.Close()
	}
}

// TestRDMAOnlyRemedy: RDMAOnly without a usable device says why and what
// to do, in the words of `rdmapool info`.
func TestRDMAOnlyRemedy(t *testing.T) {
	p, n := newMemPool(t, pool.Options{Policy: pool.RDMAOnly}, pooltest.Echo)
	n.OnDial(pool.RDMA, pooltest.NoDevice)
	_, err := p.Get(context.Background())
	if !errors.Is(err, syscall.ENODEV) || !strings.Contains(err.Error(), "modprobe rdma_rxe") {
		t.Errorf("RDMAOnly, no device: %v; want ENODEV and what to do", err)
	}
	r := probe.Run()
	if r.Usable {
		return
	}
	// This machine: the Dialer's error has the probe's verdict.
	d := pool.Dialer{Options: pool.Options{Policy: pool.RDMAOnly}}
	defer d.Close()
	_, err = d.DialContext(context.Background(), "tcp", "127.0.0.1:1")
	t.Logf("RDMAOnly here: %v", err)
	if len(r.Devices) == 0 && r.LoadErr == nil {
		// What to do: the verdict's last clause ("is the ib_uverbs module
		// loaded?", or "load a NIC driver, or for soft-RoCE: ...").
		todo := r.Verdict[strings.LastIndex(r.Verdict, "; ")+2:]
		if err == nil || !strings.Contains(err.Error(), todo) {
			t.Errorf("RDMAOnly on a machine without a device: %v; want what rdmapool info says to do: %q", err, todo)
		}
	}
}

// TestDropInHungRDMAGoRedis: go-redis with a DialTimeout through a Dialer
// whose RDMA dials hang (as a filtered RDMA port's do) gets a TCP
// connection to valkey-server: one RDMA dial, cancelled, one TCP
// connection, one OnFallback call (ReasonSlow). The Dialer's FallbackDelay
// and DialTimeout are longer than the client's DialTimeout, so TCP starts
// by the delay's cap, half the client's 10 s: that
// leaves the TCP dial 5 s, where a DialTimeout of 100 ms left it 50 ms,
// which a loaded machine could miss. Beside it, go-redis's own dialer; the
// times are logged, not asserted.
func TestDropInHungRDMAGoRedis(t *testing.T) {
	addr := testutil.ValkeyServer(t)
	hung := &hungRDMA{}
	var mu sync.Mutex
	var hooked []*pool.FallbackError
	d := &pool.Dialer{Options: pool.Options{Network: hung, FallbackDelay: time.Hour, DialTimeout: time.Minute, OnFallback: func(fe *pool.FallbackError) {
		mu.Lock()
		hooked = append(hooked, fe)
		mu.Unlock()
	}}}
	defer d.Close()
	ctx := context.Background()
	for _, own := range []bool{true, false} {
		o := &redis.Options{Addr: addr, DialTimeout: 10 * time.Second}
		if !own {
			o.Dialer = d.DialContext
		}
		rdb := redis.NewClient(o)
		start := time.Now()
		err := rdb.Ping(ctx).Err()
		took := time.Since(start)
		rdb.Close()
		t.Logf("own dialer %v: first PING %v, %v", own, took, err)
		if err != nil {
			t.Errorf("own dialer %v: %v", own, err)
		}
	}
	st := d.Stats()[addr]
	mu.Lock()
	defer mu.Unlock()
	if st.Dials[pool.TCP] != 1 || st.Dials[pool.RDMA] != 0 || hung.dials() != 1 || len(hooked) != 1 || hooked[0].Reason != pool.ReasonSlow || st.DialErrors != 0 {
		t.Errorf("stats %+v, %d RDMA dials, hook %v; want 1 TCP connection after 1 RDMA dial, one fallback (slow)", st, hung.dials(), hooked)
	}
}

// hungRDMA is a pool.Network whose RDMA dials hang until cancelled and
// whose TCP dials are net.Dialer's.
type hungRDMA struct {
	mu sync.Mutex
	n  int
}

func (h *hungRDMA) dials() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

func (h *hungRDMA) DialRDMA(ctx context.Context, addr string, _ *qp.Options) (pool.Conn, error) {
	h.mu.Lock()
	h.n++
	h.mu.Unlock()
	return nil, pooltest.Hang(ctx, addr)
}

func (h *hungRDMA) DialTCP(ctx context.Context, addr string, _ *net.Dialer) (pool.Conn, error) {
	var nd net.Dialer
	c, err := nd.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return tcpConn{c.(*net.TCPConn)}, nil
}

type tcpConn struct{ *net.TCPConn }

func (tcpConn) Transport() pool.Transport { return pool.TCP }

// firstDialEnv makes the test binary the child of TestFirstDial: it dials
// the address in the variable once, as the mode after it says, and prints
// what it saw.
const firstDialEnv = "RDMAPOOL_FIRST_DIAL"

func init() {
	v := os.Getenv(firstDialEnv)
	if v == "" {
		return
	}
	mode, addr, _ := strings.Cut(v, ",")
	os.Exit(firstDialChild(mode, addr))
}

// firstDialChild: "dialer", "net" and "net-redis" time one dial through a
// zero Dialer, a zero net.Dialer, and a net.Dialer as go-redis makes its
// own (a 5 s timeout: the net package then watches the context on a
// goroutine, as it does for the Dialer's DialTimeout); "ping-dialer" and "ping-net" a go-redis PING with a 1 ms
// context through either. It prints "µs ok loaded" (loaded: whether the
// RDMA libraries were loaded).
func firstDialChild(mode, addr string) int {
	var d pool.Dialer
	defer d.Close()
	var nd net.Dialer
	if mode == "net-redis" { // as go-redis's own dialer makes it
		nd = net.Dialer{Timeout: 5 * time.Second, KeepAlive: 5 * time.Minute}
	}
	ctx := context.Background()
	var err error
	start := time.Now()
	switch mode {
	case "dialer", "net", "net-redis":
		var c net.Conn
		if mode == "dialer" {
			c, err = d.DialContext(ctx, "tcp", addr)
		} else {
			c, err = nd.DialContext(ctx, "tcp", addr)
		}
		if err == nil {
			c.Close()
		}
	case "ping-dialer", "ping-net":
		o := &redis.Options{Addr: addr, MaxRetries: -1}
		if mode == "ping-dialer" {
			o.Dialer = d.DialContext
		}
		rdb := redis.NewClient(o)
		pctx, cancel := context.WithTimeout(ctx, time.Millisecond)
		err = rdb.Ping(pctx).Err()
		cancel()
		rdb.Close()
	}
	took := time.Since(start)
	os.Stdout.WriteString(strconv.FormatInt(took.Microseconds(), 10) + " " + strconv.FormatBool(err == nil) + " " + strconv.FormatBool(loader.Loaded() != nil) + "\n")
	return 0
}

// TestFirstDial: in a fresh process on a machine with no RDMA device, the
// first dial through a zero Dialer connects over TCP without loading the
// RDMA libraries: the pool's look at the kernel's device list says there
// is none. With RDMAPOOL_FIRST_DIAL_ROUNDS=N it also measures N fresh
// processes of each kind, alternating, and logs the medians: a dial
// through the Dialer beside net.Dialer's, and how many go-redis PINGs with
// a 1 ms context succeed through either.
func TestFirstDial(t *testing.T) {
	if probe.Run().Usable || len(probe.Run().Devices) != 0 {
		t.Skip("skipped: this machine has an RDMA device; the first dial without one is tested on the host")
	}
	addr := testutil.ValkeyServer(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := func(mode string) (us int64, ok, loaded bool) {
		t.Helper()
		cmd := exec.Command(exe, "-test.run", "^$")
		cmd.Env = append(os.Environ(), firstDialEnv+"="+mode+","+addr)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("child %s: %v", mode, err)
		}
		f := strings.Fields(string(out))
		if len(f) != 3 {
			t.Fatalf("child %s: %q", mode, out)
		}
		us, _ = strconv.ParseInt(f[0], 10, 64)
		return us, f[1] == "true", f[2] == "true"
	}
	if _, ok, loaded := run("dialer"); !ok || loaded {
		t.Errorf("first dial in a fresh process: connected %v, RDMA libraries loaded %v; want connected without loading them", ok, loaded)
	}
	rounds, _ := strconv.Atoi(os.Getenv("RDMAPOOL_FIRST_DIAL_ROUNDS"))
	if rounds == 0 {
		return
	}
	modes := []string{"dialer", "net", "net-redis", "ping-dialer", "ping-net"}
	times := map[string][]int64{}
	oks := map[string]int{}
	for i := range rounds {
		for j := range modes {
			m := modes[(i+j)%len(modes)]
			us, ok, _ := run(m)
			times[m] = append(times[m], us)
			if ok {
				oks[m]++
			}
		}
	}
	med := func(m string) int64 { s := slices.Clone(times[m]); slices.Sort(s); return s[len(s)/2] }
	t.Logf("%d fresh processes each: first dial p50 %d µs through a zero Dialer, %d µs with a zero net.Dialer (%.2f×), %d µs with go-redis's (%.2f×)",
		rounds, med("dialer"), med("net"), float64(med("dialer"))/float64(med("net")),
		med("net-redis"), float64(med("dialer"))/float64(med("net-redis")))
	t.Logf("go-redis PING, 1 ms context: %d of %d succeed through a zero Dialer (p50 %d µs), %d of %d on its own dialer (p50 %d µs)",
		oks["ping-dialer"], rounds, med("ping-dialer"), oks["ping-net"], rounds, med("ping-net"))
}

// TestEyeballsLearnSetup: with the default FallbackDelay, an RDMA dial
// that TCP beat is left to finish, and its setup time sets the next
// dials' delay: an RDMA path slower than DefaultFallbackDelay loses the
// first dial and wins the next. The first RDMA setup is held for a second
// or more (the delay becomes twice that, capped at 2 s: asserted as the
// pool's delay, not as a race of timers); the second takes 600 ms, and
// connects over RDMA.
func TestEyeballsLearnSetup(t *testing.T) {
	ended := make(chan struct{}, 4)
	p, n := newMemPool(t, pool.Options{}, func(c net.Conn) {
		io.Copy(c, c)
		ended <- struct{}{}
	})
	gate := make(chan struct{})
	n.OnDial(pool.RDMA, func(ctx context.Context, _ string) error {
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	first, err := p.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if first.Transport() != pool.TCP {
		t.Fatalf("first dial over %s, want TCP (RDMA held past the delay)", first.Transport())
	}
	time.AfterFunc(time.Second, func() { close(gate) })
	// The held RDMA dial finishes, teaches its setup and is closed: the
	// only connection to end so far.
	<-ended
	if d := pool.FallbackDelayOf(p); d != 2*time.Second {
		t.Errorf("the delay after a setup of a second or more is %v, want 2 s (twice it, capped)", d)
	}
	// The second dial: its RDMA setup takes 600 ms, more than
	// DefaultFallbackDelay, and its TCP dial, if the pool starts one,
	// hangs, so that RDMA wins whatever the timers do on a loaded machine.
	n.OnDial(pool.TCP, pooltest.Hang)
	n.OnDial(pool.RDMA, func(ctx context.Context, _ string) error {
		select {
		case <-time.After(600 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	second, err := p.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if second.Transport() != pool.RDMA {
		t.Errorf("second dial over %s, want RDMA (the delay learnt the first setup)", second.Transport())
	}
	first.Close()
	second.Close()
}
