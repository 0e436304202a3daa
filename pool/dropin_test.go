package pool_test

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/pool"
	"github.com/seed54442f1a/rdmapool/pool/pooltest"
	"github.com/seed54442f1a/rdmapool/server"
)

// The tests in this file are the drop-in promise, with go-redis and
// valkey-go themselves: through a zero-value Dialer they are never worse
// than with their own dialers.

// TestDropInNoCap: go-redis with a pool of 50 and 50 busy goroutines, and
// valkey-go with 20 BLPOPs blocked at once (each on a dedicated
// connection), through a zero-value Dialer: the Dialer adds no cap below
// the client's own pool, so nothing waits on it.
func TestDropInNoCap(t *testing.T) {
	addr := testutil.ValkeyServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Run("go-redis", func(t *testing.T) {
		var d pool.Dialer
		defer d.Close()
		rdb := redis.NewClient(&redis.Options{Addr: addr, Dialer: d.DialContext, PoolSize: 50})
		defer rdb.Close()
		if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var wg sync.WaitGroup
		var failed atomic.Int32
		for range 50 {
			wg.Go(func() {
				for range 200 {
					if v, err := rdb.Get(ctx, "k").Result(); err != nil || v != "v" {
						failed.Add(1)
						t.Errorf("GET: %q, %v", v, err)
						return
					}
				}
			})
		}
		wg.Wait()
		t.Logf("50 goroutines x 200 GETs: %v; dialer %+v", time.Since(start), d.Stats()[addr])
		if failed.Load() > 0 {
			t.Errorf("%d of 50 goroutines failed", failed.Load())
		}
	})
	t.Run("valkey-go", func(t *testing.T) {
		var d pool.Dialer
		defer d.Close()
		vk := newValkey(t, addr, &d)
		const n = 20
		errc := make(chan error, n)
		for i := range n {
			go func() {
				_, err := vk.Do(ctx, vk.B().Blpop().Key(fmt.Sprint("list", i)).Timeout(0).Build()).AsStrSlice()
				errc <- err
			}()
		}
		waitBlocked(t, ctx, vk, n)
		for i := range n {
			if err := vk.Do(ctx, vk.B().Rpush().Key(fmt.Sprint("list", i)).Element("x").Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}
		for range n {
			if err := <-errc; err != nil {
				t.Errorf("BLPOP: %v", err)
			}
		}
	})
}

// newValkey returns a valkey-go client of addr through d, closed when the
// test ends.
func newValkey(t *testing.T, addr string, d *pool.Dialer) valkey.Client {
	t.Helper()
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, DialCtxFn: d.DialValkey, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vk.Close)
	return vk
}

// waitBlocked waits until valkey-server has n clients blocked.
func waitBlocked(t *testing.T, ctx context.Context, vk valkey.Client, n int) {
	t.Helper()
	for {
		info, err := vk.Do(ctx, vk.B().Info().Section("clients").Build()).ToString()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(info, fmt.Sprintf("blocked_clients:%d\r", n)) {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("never %d blocked clients: %s", n, info)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestDropInLimitFails: a limit the user sets (MaxOpen) never hangs a
// client: a dial past it fails after WaitTimeout with ErrExhausted, and
// the client says so.
func TestDropInLimitFails(t *testing.T) {
	addr := testutil.ValkeyServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	t.Run("valkey-go", func(t *testing.T) {
		d := &pool.Dialer{Options: pool.Options{MaxOpen: 3, WaitTimeout: 200 * time.Millisecond}}
		defer d.Close()
		vk := newValkey(t, addr, d)
		errc := make(chan error, 4)
		for i := range 4 { // the client's own connection and 2 dedicated ones fill MaxOpen 3
			go func() {
				errc <- vk.Do(ctx, vk.B().Blpop().Key(fmt.Sprint("limit", i)).Timeout(2).Build()).Error()
			}()
		}
		exhausted := 0
		for range 4 {
			err := <-errc
			switch {
			case errors.Is(err, pool.ErrExhausted):
				exhausted++
			case valkey.IsValkeyNil(err):
			default:
				t.Errorf("BLPOP: %v", err)
			}
		}
		if exhausted != 2 {
			t.Errorf("%d BLPOPs failed with ErrExhausted, want 2", exhausted)
		}
	})
	t.Run("go-redis", func(t *testing.T) {
		d := &pool.Dialer{Options: pool.Options{MaxOpen: 2, WaitTimeout: 200 * time.Millisecond}}
		defer d.Close()
		rdb := redis.NewClient(&redis.Options{Addr: addr, Dialer: d.DialContext, PoolSize: 4, MaxRetries: -1})
		defer rdb.Close()
		errc := make(chan error, 4)
		for i := range 4 {
			go func() { errc <- rdb.BLPop(ctx, time.Second, fmt.Sprint("glimit", i)).Err() }()
		}
		exhausted := 0
		for range 4 {
			err := <-errc
			switch {
			case errors.Is(err, pool.ErrExhausted):
				exhausted++
			case errors.Is(err, redis.Nil):
			default:
				t.Errorf("BLPOP: %v", err)
			}
		}
		if exhausted != 2 {
			t.Errorf("%d BLPOPs failed with ErrExhausted, want 2", exhausted)
		}
	})
}

// TestDropInServerDown: with nothing listening, the first command fails
// as with the client's own dialer, and says connection refused: the
// Dialer makes one dial for each of the client's, and waits for nothing
// (its backoff is an hour, which no dial may wait for: one that did would
// end at the client's dial timeout instead). How long each took is logged,
// not compared: a loaded machine may slow either.
func TestDropInServerDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx := context.Background()
	// compare runs first on the client's own dialer, then through a
	// Dialer, counting the client's dials in dials.
	compare := func(t *testing.T, first func(own bool, d *pool.Dialer, dials *atomic.Int64) (time.Duration, error)) {
		t.Helper()
		d := &pool.Dialer{Options: pool.Options{MinBackoff: time.Hour, MaxBackoff: time.Hour}}
		defer d.Close()
		var dials atomic.Int64
		own, ownErr := first(true, d, &dials)
		ours, err := first(false, d, &dials)
		t.Logf("own dialer: %v, %v; Dialer: %v, %v", own, ownErr, ours, err)
		if !errors.Is(err, syscall.ECONNREFUSED) || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("through the Dialer: %v, want connection refused", err)
		}
		if st := d.Stats()[addr]; dials.Load() == 0 || st.DialErrors != uint64(dials.Load()) {
			t.Errorf("through the Dialer: %d dials by the client, %d failed dials by the Dialer (stats %+v); want one each", dials.Load(), st.DialErrors, st)
		}
	}
	t.Run("go-redis", func(t *testing.T) {
		compare(t, func(own bool, d *pool.Dialer, dials *atomic.Int64) (time.Duration, error) {
			o := &redis.Options{Addr: addr}
			if !own {
				o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
					dials.Add(1)
					return d.DialContext(ctx, network, addr)
				}
			}
			rdb := redis.NewClient(o)
			defer rdb.Close()
			start := time.Now()
			err := rdb.Ping(ctx).Err() // go-redis retries the dial 5 times
			return time.Since(start), err
		})
	})
	t.Run("valkey-go", func(t *testing.T) {
		compare(t, func(own bool, d *pool.Dialer, dials *atomic.Int64) (time.Duration, error) {
			o := valkey.ClientOption{InitAddress: []string{addr}, DisableCache: true}
			if !own {
				o.DialCtxFn = func(ctx context.Context, dst string, nd *net.Dialer, cfg *tls.Config) (net.Conn, error) {
					dials.Add(1)
					return d.DialValkey(ctx, dst, nd, cfg)
				}
			}
			start := time.Now()
			vk, err := valkey.NewClient(o)
			if err == nil {
				vk.Close()
			}
			return time.Since(start), err
		})
	})
}

// memServer serves the embedded server over a pooltest Network whose RDMA
// has no device, so that Auto falls back; the test sets how TCP dials end.
func memServer(t *testing.T) (*pool.Dialer, *pooltest.Network, *[]pool.FallbackReason) {
	t.Helper()
	srv := server.New(nil)
	l := pooltest.NewListener()
	go srv.Serve(l)
	n := pooltest.New(l.Serve)
	n.OnDial(pool.RDMA, pooltest.NoDevice)
	var mu sync.Mutex
	var reasons []pool.FallbackReason
	d := &pool.Dialer{Options: pool.Options{Network: n, OnFallback: func(fe *pool.FallbackError) {
		mu.Lock()
		reasons = append(reasons, fe.Reason)
		mu.Unlock()
	}}}
	t.Cleanup(func() {
		d.Close()
		srv.Close()
		n.Close()
	})
	return d, n, &reasons
}

// TestDropInServerBack (in memory): with the server down, each client's
// command fails at once with connection refused and the RDMA reason; with
// it back, the next command succeeds without waiting for the pool's
// backoff. The Dialer adds no backoff to the client's own.
func TestDropInServerBack(t *testing.T) {
	const memAddr = "10.0.0.1:6379"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	check := func(t *testing.T, n *pooltest.Network, do func() error) {
		t.Helper()
		n.OnDial(pool.TCP, pooltest.Refuse)
		start := time.Now()
		err := do()
		var fe *pool.FallbackError
		if !errors.Is(err, syscall.ECONNREFUSED) || !errors.As(err, &fe) || fe.Reason != pool.ReasonNoDevice {
			t.Errorf("server down: %v, want connection refused with the RDMA reason", err)
		}
		t.Logf("server down: failed after %v: %v", time.Since(start), err)
		n.OnDial(pool.TCP, nil)
		start = time.Now()
		// The Dialer's pools back off for an hour after a failed dial (see
		// noBackoffWait), so a Get that waited for the backoff would not
		// return within ctx: no timed bound is needed to catch one.
		if err := do(); err != nil {
			t.Fatalf("server back: %v", err)
		}
		t.Logf("server back: the first command took %v", time.Since(start))
	}
	// noBackoffWait makes any backoff decisive: the pools' top-up waits an
	// hour after a failed dial, which no Get may wait for.
	noBackoffWait := func(d *pool.Dialer) {
		d.Options.MinBackoff, d.Options.MaxBackoff = time.Hour, time.Hour
	}
	t.Run("go-redis", func(t *testing.T) {
		d, n, reasons := memServer(t)
		noBackoffWait(d)
		rdb := redis.NewClient(&redis.Options{Addr: memAddr, Dialer: d.DialContext, MaxRetries: -1})
		defer rdb.Close()
		check(t, n, func() error { return rdb.Ping(ctx).Err() })
		if len(*reasons) == 0 {
			t.Error("the fallback to TCP was not reported")
		}
	})
	t.Run("valkey-go", func(t *testing.T) {
		d, n, _ := memServer(t)
		noBackoffWait(d)
		check(t, n, func() error {
			vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{memAddr}, DialCtxFn: d.DialValkey, DisableCache: true})
			if err != nil {
				return err
			}
			defer vk.Close()
			return vk.Do(ctx, vk.B().Ping().Build()).Error()
		})
	})
}

// TestDropInMemRDMA (in memory): go-redis and valkey-go over the Dialer
// with RDMA working use it, and with RDMA gone fall back to TCP, say why,
// and keep working.
func TestDropInMemRDMA(t *testing.T) {
	const memAddr = "10.0.0.1:6379"
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, rdma := range []bool{true, false} {
		t.Run(fmt.Sprintf("rdma=%v", rdma), func(t *testing.T) {
			d, n, reasons := memServer(t)
			if rdma {
				n.OnDial(pool.RDMA, nil)
			}
			rdb := redis.NewClient(&redis.Options{Addr: memAddr, Dialer: d.DialContext})
			defer rdb.Close()
			if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			vk := newValkey(t, memAddr, d)
			if v, err := vk.Do(ctx, vk.B().Get().Key("k").Build()).ToString(); err != nil || v != "v" {
				t.Fatalf("GET: %q, %v", v, err)
			}
			st := d.Stats()[memAddr]
			want, other := pool.TCP, pool.RDMA
			if rdma {
				want, other = pool.RDMA, pool.TCP
			}
			if st.Dials[want] == 0 || st.Dials[other] != 0 {
				t.Errorf("dials %v, want all over %s", st.Dials, want)
			}
			if !rdma && (len(*reasons) == 0 || st.Fallbacks[pool.ReasonNoDevice] == 0) {
				t.Errorf("fell back without saying why: %+v", st)
			}
		})
	}
}

// TestDropInNoStaleReply: go-redis and valkey-go through a Dialer, with
// timeouts short enough that requests are abandoned mid-flight, never read
// another request's reply: a connection the client gives up on is closed,
// not handed to anyone.
func TestDropInNoStaleReply(t *testing.T) {
	addr := testutil.ValkeyServer(t)
	ctx := context.Background()
	const keys = 50
	seed := redis.NewClient(&redis.Options{Addr: addr})
	for i := range keys {
		if err := seed.Set(ctx, fmt.Sprint("stale", i), fmt.Sprint("stale", i), 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	seed.Close()
	run := func(t *testing.T, get func(ctx context.Context, k string) (string, error)) {
		var wrong, failed, ok atomic.Int32
		var wg sync.WaitGroup
		for g := range 20 {
			wg.Go(func() {
				for i := range 200 {
					k := fmt.Sprint("stale", (g*200+i)%keys)
					tctx, cancel := context.WithTimeout(ctx, time.Duration(10<<(i%9))*time.Microsecond) // 10 µs to 2.6 ms
					v, err := get(tctx, k)
					cancel()
					switch {
					case err != nil:
						failed.Add(1)
					case v != k:
						wrong.Add(1)
					default:
						ok.Add(1)
					}
				}
			})
		}
		wg.Wait()
		t.Logf("%d answered, %d timed out or failed, %d wrong", ok.Load(), failed.Load(), wrong.Load())
		if wrong.Load() != 0 {
			t.Errorf("%d replies were another request's", wrong.Load())
		}
		if failed.Load() == 0 {
			t.Log("no request timed out: the test did not abandon any")
		}
	}
	t.Run("go-redis", func(t *testing.T) {
		var d pool.Dialer
		defer d.Close()
		rdb := redis.NewClient(&redis.Options{Addr: addr, Dialer: d.DialContext, PoolSize: 20, MaxRetries: -1, ContextTimeoutEnabled: true})
		defer rdb.Close()
		run(t, func(ctx context.Context, k string) (string, error) { return rdb.Get(ctx, k).Result() })
	})
	t.Run("valkey-go", func(t *testing.T) {
		var d pool.Dialer
		defer d.Close()
		vk := newValkey(t, addr, &d)
		run(t, func(ctx context.Context, k string) (string, error) {
			return vk.Do(ctx, vk.B().Get().Key(k).Build()).ToString()
		})
	})
}
