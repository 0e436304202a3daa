package pool

import (
	"context"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/qp"
)

// TestEyeballsKeepRDMA (VM): with a working RDMA path whose setup is
// shorter than FallbackDelay, Auto's happy eyeballs change nothing: every
// dial, one at a time and eight at once (go-redis through a Dialer),
// connects over RDMA. It logs the setup time of RDMA dials without the race
// (FallbackDelay negative), the figure FallbackDelay's default is chosen
// by, and the RDMA share at the default, which under emulation (TCG), with
// 40 connections open, is below 1: setup there often passes 250 ms
// (docs/benchmarks.md).
func TestEyeballsKeepRDMA(t *testing.T) {
	rdmatest.Require(t)
	host := rdmatest.Addr(t).String()
	tg := embedded(t, host)
	ctx := context.Background()
	// A connection held for the whole test keeps the process-wide
	// reactor running, started before each pool's goroutine count
	// (newPool) and still there when it is counted again: else the pool
	// whose dials started it sees it as left behind.
	hold, err := qp.Dial(ctx, net.JoinHostPort(host, strconv.Itoa(tg.rdmaPort)), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hold.Close() }) // after the pools' checks
	// Its answer shows that the server serves it: the server's goroutines
	// for it (started after the dial returns) are there before the
	// count, not counted as left behind.
	respPing(t, hold)
	const serial = 40
	dials := func(p *Pool) []time.Duration {
		t.Helper()
		var took []time.Duration
		var held []PooledConn
		for range serial {
			start := time.Now()
			c, err := p.Get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			took = append(took, time.Since(start))
			held = append(held, c) // held: each Get dials
		}
		for _, c := range held {
			respPing(t, c)
			c.Close()
		}
		slices.Sort(took)
		return took
	}
	// far is a delay far above the setup under emulation (seconds with
	// dials at once), within a dial timeout long enough not to cap it.
	const far, dialTimeout = 20 * time.Second, time.Minute
	for _, delay := range []time.Duration{-1, 0, far} {
		p := newPool(t, Options{Addr: tg.tcp, RDMAPort: tg.rdmaPort, FallbackDelay: delay, DialTimeout: dialTimeout})
		took := dials(p)
		st := p.Stats()
		t.Logf("%d dials one at a time, FallbackDelay %v: setup p50 %v, p90 %v, max %v; dials %v", serial, p.opts.FallbackDelay, took[serial/2], took[serial*9/10], took[serial-1], st.Dials)
		if delay != 0 && (st.Dials[RDMA] != serial || st.Dials[TCP] != 0 || st.LastFallback != nil) {
			t.Errorf("FallbackDelay %v: dials %v, fallback %v; want all %d over RDMA", p.opts.FallbackDelay, st.Dials, st.LastFallback, serial)
		}
		p.Close()
	}

	d := &Dialer{Options: Options{RDMAPort: tg.rdmaPort, FallbackDelay: far, DialTimeout: dialTimeout}}
	defer d.Close()
	const conc = 8
	rdb := redis.NewClient(&redis.Options{Addr: tg.tcp, Dialer: d.DialContext, PoolSize: conc, DialTimeout: dialTimeout})
	defer rdb.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []*redis.Conn
	for range conc {
		wg.Go(func() {
			cn := rdb.Conn() // a connection of its own: the client dials one each
			if err := cn.Ping(ctx).Err(); err != nil {
				t.Error(err)
			}
			mu.Lock()
			conns = append(conns, cn)
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, cn := range conns {
		cn.Close()
	}
	st := d.Stats()[tg.tcp]
	t.Logf("go-redis, %d goroutines at once: dials %v, fallbacks %v", conc, st.Dials, st.Fallbacks)
	if st.Dials[RDMA] == 0 || st.Dials[TCP] != 0 {
		t.Errorf("at once: dials %v, fallbacks %v; want all over RDMA", st.Dials, st.Fallbacks)
	}
}

// BenchmarkAutoDialRDMA (VM): the setup time of an Auto dial over a working
// RDMA path, without happy eyeballs (delay=off: TCP only once RDMA fails,
// the dial as it was before) and with them (delay=default); rdma-share is
// the fraction of dials that connected over RDMA. With -count the two run
// back to back, alternating.
func BenchmarkAutoDialRDMA(b *testing.B) {
	rdmatest.Require(b)
	host := rdmatest.Addr(b).String()
	tg := embedded(b, host)
	for _, bc := range []struct {
		name  string
		delay time.Duration
	}{{"delay=off", -1}, {"delay=default", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			p, err := New(Options{Addr: tg.tcp, RDMAPort: tg.rdmaPort, FallbackDelay: bc.delay})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				c, err := p.Get(ctx)
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				c.Discard()
				b.StartTimer()
			}
			b.StopTimer()
			st := p.Stats()
			b.ReportMetric(float64(st.Dials[RDMA])/float64(st.Dials[RDMA]+st.Dials[TCP]), "rdma-share")
		})
	}
}

// respPing sends PING to the server on c and reads its +PONG.
func respPing(t *testing.T, c net.Conn) {
	t.Helper()
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "+PONG\r\n" {
		t.Fatalf("PING: %q, %v", buf, err)
	}
}
