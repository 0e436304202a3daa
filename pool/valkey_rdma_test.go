package pool_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"

	"github.com/seed54442f1a/rdmapool/internal/clustertest"
	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/pool"
)

// The tests in this file run against a real valkey-server with RDMA: a
// local build (vm/valkey-build.sh; no Debian package has RDMA) in the
// directory RDMAPOOL_VALKEY_DIR names, RDMA built in or as a module
// (testutil.ValkeyBuild.RDMAArgs). Without that variable they skip,
// in CI too, where there is no such build; vm/valkey-rdma.sh runs them in
// the soft-RoCE VM. Every connection is RDMA (Policy RDMAOnly): a dial
// that cannot use RDMA fails the test instead of falling back.

// dialTimeout is long, for every client and the Dialer: valkey-server
// accepts one RDMA connection at a time, 0.2-1 s each under emulation, so
// 32 dials at once take longer than the default 5 s; and a client that
// gives up on a connection the server is still accepting makes the build
// this was written against (valkey unstable of 2024-10-25) crash 3 s
// later: the failed accept leaves its keepalive timer behind.
const dialTimeout = 60 * time.Second

// rdmaOnly returns a Dialer that reaches each node at its RDMA address
// (m: TCP address to RDMA address) and never uses TCP.
func rdmaOnly(t *testing.T, m map[string]string) *pool.Dialer {
	d := &pool.Dialer{Options: pool.Options{Policy: pool.RDMAOnly, RDMAAddrOf: pool.RDMAAddrTable(m), DialTimeout: dialTimeout}}
	t.Cleanup(func() { d.Close() })
	return d
}

// checkAllRDMA fails t unless every dial d made went over RDMA.
func checkAllRDMA(t *testing.T, d *pool.Dialer) {
	t.Helper()
	for addr, st := range d.Stats() {
		t.Logf("%s: dials %v, open %d", addr, st.Dials, st.Open)
		if st.Dials[pool.RDMA] == 0 || st.Dials[pool.TCP] != 0 || st.LastFallback != nil {
			t.Errorf("%s: dials %v, fallback %v; want all over RDMA", addr, st.Dials, st.LastFallback)
		}
	}
}

// client is go-redis or valkey-go over one RDMAOnly Dialer of its own,
// with what the scenarios below ask of either.
type client struct {
	d     *pool.Dialer
	addr  string // the node's TCP address, the Dialer's key
	set   func(ctx context.Context, k, v string) error
	get   func(ctx context.Context, k string) (string, error)
	ping  func(ctx context.Context) error
	incrs func(ctx context.Context, k string, n int) ([]int64, error) // n INCR k in one pipeline
}

// rwTimeout is the read and write timeout of the clients with tuned
// options: a 16 MiB value under emulation needs more than the defaults.
const rwTimeout = 30 * time.Second

// newGoRedis returns go-redis's Client for nd through an RDMAOnly Dialer:
// with the options these tests tune (pool size, timeouts) unless defaults
// is set, and then with go-redis's own defaults but the Dialer.
func newGoRedis(t *testing.T, nd *testutil.ValkeyNode, poolSize int, defaults bool) (*redis.Client, *client) {
	d := rdmaOnly(t, map[string]string{nd.Addr: nd.RDMAAddr})
	o := &redis.Options{Addr: nd.Addr, Dialer: d.DialContext}
	if !defaults {
		o.PoolSize, o.DialTimeout, o.ReadTimeout, o.WriteTimeout = poolSize, dialTimeout, rwTimeout, rwTimeout
	}
	rdb := redis.NewClient(o)
	t.Cleanup(func() { rdb.Close() })
	return rdb, &client{
		d: d, addr: nd.Addr,
		set:  func(ctx context.Context, k, v string) error { return rdb.Set(ctx, k, v, 0).Err() },
		get:  func(ctx context.Context, k string) (string, error) { return rdb.Get(ctx, k).Result() },
		ping: func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
		incrs: func(ctx context.Context, k string, n int) ([]int64, error) {
			pipe := rdb.Pipeline()
			cmds := make([]*redis.IntCmd, n)
			for i := range cmds {
				cmds[i] = pipe.Incr(ctx, k)
			}
			if _, err := pipe.Exec(ctx); err != nil {
				return nil, err
			}
			out := make([]int64, n)
			for i, c := range cmds {
				out[i] = c.Val()
			}
			return out, nil
		},
	}
}

// newValkeyGo is newGoRedis for valkey-go. With defaults its client-side
// cache is on, as valkey-go's default is: RESP3 and CLIENT TRACKING on the
// connection, invalidations pushed by the server.
func newValkeyGo(t *testing.T, nd *testutil.ValkeyNode, poolSize int, defaults bool) (valkey.Client, *client) {
	d := rdmaOnly(t, map[string]string{nd.Addr: nd.RDMAAddr})
	o := valkey.ClientOption{InitAddress: []string{nd.Addr}, DialCtxFn: d.DialValkey}
	if !defaults {
		o.Dialer, o.DisableCache, o.ConnWriteTimeout, o.BlockingPoolSize = net.Dialer{Timeout: dialTimeout}, true, rwTimeout, poolSize
	}
	vk, err := valkey.NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vk.Close)
	return vk, &client{
		d: d, addr: nd.Addr,
		set: func(ctx context.Context, k, v string) error {
			return vk.Do(ctx, vk.B().Set().Key(k).Value(v).Build()).Error()
		},
		get: func(ctx context.Context, k string) (string, error) {
			return vk.Do(ctx, vk.B().Get().Key(k).Build()).ToString()
		},
		ping: func(ctx context.Context) error { return vk.Do(ctx, vk.B().Ping().Build()).Error() },
		incrs: func(ctx context.Context, k string, n int) ([]int64, error) {
			cmds := make(valkey.Commands, n)
			for i := range cmds {
				cmds[i] = vk.B().Incr().Key(k).Build()
			}
			out := make([]int64, n)
			for i, r := range vk.DoMulti(ctx, cmds...) {
				v, err := r.AsInt64()
				if err != nil {
					return nil, err
				}
				out[i] = v
			}
			return out, nil
		},
	}
}

var newClients = map[string]func(*testing.T, *testutil.ValkeyNode, int, bool) *client{
	"go-redis": func(t *testing.T, nd *testutil.ValkeyNode, n int, defaults bool) *client {
		_, c := newGoRedis(t, nd, n, defaults)
		return c
	},
	"valkey-go": func(t *testing.T, nd *testutil.ValkeyNode, n int, defaults bool) *client {
		_, c := newValkeyGo(t, nd, n, defaults)
		return c
	},
}

// scenario runs f as the subtest name against a valkey-server of its own
// (RDMA only), so that a server one scenario killed does not fail the
// next, and fails it, saying so, if that server died: the one failure a
// client must never cause.
func scenario(t *testing.T, b *testutil.ValkeyBuild, name string, f func(t *testing.T, nd *testutil.ValkeyNode)) {
	t.Run(name, func(t *testing.T) {
		nd := testutil.StartValkeyRDMA(t, b, rdmatest.Addr(t).String())
		defer func() {
			if t.Failed() {
				nd.Exited(3 * time.Second) // a client saw the disconnect before the server's exit was reaped
			}
			if why := nd.Died(); why != "" {
				t.Errorf("%s (the server crashed: this scenario fails on %s)", why, b.Version())
			}
			// go test prints a subtest's --- line only when its parent
			// ends; vm/valkey-rdma.sh's report takes this one, which a
			// later hang cannot hold back.
			res := "PASS"
			if t.Failed() {
				res = "FAIL"
			}
			fmt.Printf("=== rdmapool-scenario: %s %s\n", res, t.Name())
		}()
		f(t, nd)
	})
}

// guard returns a context for a scenario's commands that ends after 5
// minutes: a client that waits for ever on a connection that will never
// answer (a server that died unseen) fails its scenario instead of the
// whole run. It bounds a hang; it asserts no speed.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// value returns n bytes of a pattern that differs at every offset (mod
// 251) and holds the bytes RESP cares about: CR, LF, '$' and NUL.
func value(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return string(b)
}

// TestValkeyRDMAClients: go-redis and valkey-go through a Dialer with
// RDMAOnly against the build's valkey-server over RDMA, each scenario
// (a subtest; vm/valkey-rdma.sh reports each) on a server of its own:
//
//   - values: SET and GET of values from 1 byte to 16 MiB (sixteen times
//     valkey's receive buffer, so each crosses many re-arms both ways);
//   - pipeline: 10,000 INCR in one pipeline, every reply in order;
//   - idle: connections idle for 7 s, two of the server's 3 s
//     keepalives, then used again: no new dial, no error;
//   - conns: 32 connections at once;
//   - defaults: each client with its own default options but the Dialer
//     (valkey-go's client-side cache on: CLIENT TRACKING, invalidations).
func TestValkeyRDMAClients(t *testing.T) {
	b := testutil.RequireValkeyBuild(t)
	rdmatest.Require(t)
	t.Logf("%s: RDMA %v", b.Version(), b.Mode)
	const conns = 32
	for _, name := range []string{"go-redis", "valkey-go"} {
		newClient := newClients[name]
		scenario(t, b, name+"/values", func(t *testing.T, nd *testutil.ValkeyNode) {
			c := newClient(t, nd, 4, false)
			ctx := guard(t)
			for _, n := range []int{1, 100, 4 << 10, 64 << 10, 1<<20 - 1, 1 << 20, 1<<20 + 1, 4 << 20, 16 << 20} {
				k, v := fmt.Sprint("k", n), value(n)
				if err := c.set(ctx, k, v); err != nil {
					t.Fatalf("SET of %d bytes: %v", n, err)
				}
				got, err := c.get(ctx, k)
				if err != nil || got != v {
					t.Fatalf("GET of %d bytes: %d bytes (equal: %v), %v", n, len(got), got == v, err)
				}
			}
			checkAllRDMA(t, c.d)
		})
		scenario(t, b, name+"/pipeline", func(t *testing.T, nd *testutil.ValkeyNode) {
			c := newClient(t, nd, 4, false)
			const n = 10000
			got, err := c.incrs(guard(t), "ctr", n)
			if err != nil {
				t.Fatalf("a pipeline of %d INCR: %v", n, err)
			}
			for i, v := range got {
				if v != int64(i+1) {
					t.Fatalf("reply %d of %d pipelined INCR: %d, want %d", i, n, v, i+1)
				}
			}
			checkAllRDMA(t, c.d)
		})
		scenario(t, b, name+"/idle", func(t *testing.T, nd *testutil.ValkeyNode) {
			c := newClient(t, nd, 4, false)
			ctx := guard(t)
			use := func() {
				t.Helper()
				parallel(t, 4, func(i int) error {
					k := fmt.Sprint("idle", i)
					if err := c.set(ctx, k, k); err != nil {
						return err
					}
					if got, err := c.get(ctx, k); err != nil || got != k {
						return fmt.Errorf("GET %s = %q, %v", k, got, err)
					}
					return nil
				})
			}
			use()
			before := c.d.Stats()[c.addr].Dials[pool.RDMA]
			// valkey-server sends a keepalive every 3 s and closes a
			// connection whose peer stopped answering; an idle client must
			// answer them, and the server must not close it.
			time.Sleep(7 * time.Second)
			use()
			if after := c.d.Stats()[c.addr].Dials[pool.RDMA]; after != before {
				t.Errorf("%d RDMA dials before 7 s idle, %d after: idle connections were lost", before, after)
			}
			checkAllRDMA(t, c.d)
		})
		scenario(t, b, name+"/conns", func(t *testing.T, nd *testutil.ValkeyNode) {
			if name == "go-redis" {
				conns32GoRedis(t, nd, conns)
			} else {
				conns32ValkeyGo(t, nd, conns)
			}
		})
	}
	scenario(t, b, "go-redis/defaults", func(t *testing.T, nd *testutil.ValkeyNode) {
		_, c := newGoRedis(t, nd, 0, true)
		defaultsCommon(t, c)
		checkAllRDMA(t, c.d)
	})
	scenario(t, b, "valkey-go/defaults", func(t *testing.T, nd *testutil.ValkeyNode) {
		vk, c := newValkeyGo(t, nd, 0, true)
		defaultsCommon(t, c)
		// Client-side caching: the second read is a hit; a write through
		// another path (a pipeline of its own, no cache) makes the server
		// push an invalidation, after which the cached read sees it.
		ctx := guard(t)
		if err := c.set(ctx, "cached", "v1"); err != nil {
			t.Fatal(err)
		}
		read := func() (string, bool) {
			t.Helper()
			r := vk.DoCache(ctx, vk.B().Get().Key("cached").Cache(), time.Minute)
			v, err := r.ToString()
			if err != nil {
				t.Fatalf("DoCache GET: %v", err)
			}
			return v, r.IsCacheHit()
		}
		read()
		if v, hit := read(); v != "v1" || !hit {
			t.Errorf("second cached GET = %q, hit %v; want v1 from the cache", v, hit)
		}
		if err := c.set(ctx, "cached", "v2"); err != nil {
			t.Fatal(err)
		}
		// The invalidation arrives on its own, after the SET's reply; wait
		// for it (a bound against a hang, not a speed assertion).
		end := time.Now().Add(30 * time.Second)
		for {
			v, _ := read()
			if v == "v2" {
				break
			}
			if time.Now().After(end) {
				t.Fatalf("cached GET still %q 30 s after SET v2: no invalidation came", v)
			}
			time.Sleep(10 * time.Millisecond)
		}
		checkAllRDMA(t, c.d)
	})
}

// defaultsCommon is what both clients do with default options: PING,
// SET and GET, a 1 MiB value, a pipeline of 100 and 8 goroutines at once.
func defaultsCommon(t *testing.T, c *client) {
	t.Helper()
	ctx := guard(t)
	if err := c.ping(ctx); err != nil {
		t.Fatalf("PING: %v", err)
	}
	for _, n := range []int{10, 1 << 20} {
		k, v := fmt.Sprint("d", n), value(n)
		if err := c.set(ctx, k, v); err != nil {
			t.Fatalf("SET of %d bytes: %v", n, err)
		}
		if got, err := c.get(ctx, k); err != nil || got != v {
			t.Fatalf("GET of %d bytes: %d bytes (equal: %v), %v", n, len(got), got == v, err)
		}
	}
	if got, err := c.incrs(ctx, "dctr", 100); err != nil || len(got) != 100 || got[99] != 100 {
		t.Fatalf("a pipeline of 100 INCR: %v, %v", got, err)
	}
	parallel(t, 8, func(i int) error {
		k := fmt.Sprint("dp", i)
		for j := range 10 {
			if err := c.set(ctx, k, fmt.Sprint(j)); err != nil {
				return err
			}
		}
		return nil
	})
}

// conns32GoRedis: go-redis with a pool of n, n goroutines at once.
func conns32GoRedis(t *testing.T, nd *testutil.ValkeyNode, n int) {
	rdb, c := newGoRedis(t, nd, n, false)
	ctx := guard(t)
	parallel(t, n, func(i int) error {
		k := fmt.Sprint("r:c", i)
		for j := range 20 {
			if err := rdb.Set(ctx, k, j, 0).Err(); err != nil {
				return err
			}
			if v, err := rdb.Get(ctx, k).Int(); err != nil || v != j {
				return fmt.Errorf("GET %s = %d, %v; want %d", k, v, err, j)
			}
		}
		return nil
	})
	if st := c.d.Stats()[nd.Addr]; st.Dials[pool.RDMA] < uint64(n/2) {
		t.Errorf("%d RDMA dials for %d goroutines at once; want many connections", st.Dials[pool.RDMA], n)
	}
	checkAllRDMA(t, c.d)
}

// conns32ValkeyGo: blocking commands take a connection of their own from
// valkey-go's pool: BLPOP on n keys at once opens n.
func conns32ValkeyGo(t *testing.T, nd *testutil.ValkeyNode, n int) {
	vk, c := newValkeyGo(t, nd, n, false)
	ctx := guard(t)
	parallel(t, n, func(i int) error {
		k := fmt.Sprint("v:l", i)
		if err := vk.Do(ctx, vk.B().Rpush().Key(k).Element("x").Build()).Error(); err != nil {
			return err
		}
		kv, err := vk.Do(ctx, vk.B().Blpop().Key(k).Timeout(5).Build()).AsStrSlice()
		if err != nil || len(kv) != 2 || kv[1] != "x" {
			return fmt.Errorf("BLPOP %s = %q, %v", k, kv, err)
		}
		return nil
	})
	if st := c.d.Stats()[nd.Addr]; st.Dials[pool.RDMA] < uint64(n/2) {
		t.Errorf("%d RDMA dials for %d BLPOPs at once; want many connections", st.Dials[pool.RDMA], n)
	}
	checkAllRDMA(t, c.d)
}

// TestValkeyRDMAServerKill: valkey-server is killed with SIGKILL under
// open RDMA connections: 8 of a Dialer's own, go-redis's (8) and
// valkey-go's. Every one of them sees it: a read on each raw connection
// ends with an error that is not its deadline, and each client's next
// commands fail instead of waiting. The deadlines only bound a hang.
func TestValkeyRDMAServerKill(t *testing.T) {
	b := testutil.RequireValkeyBuild(t)
	rdmatest.Require(t)
	nd := testutil.StartValkeyRDMA(t, b, rdmatest.Addr(t).String())
	t.Logf("%s: RDMA %v", b.Version(), b.Mode)
	ctx := context.Background()
	const n = 8

	d := rdmaOnly(t, map[string]string{nd.Addr: nd.RDMAAddr})
	raw := make([]net.Conn, n)
	for i := range raw {
		c, err := d.DialContext(ctx, "tcp", nd.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 7)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "+PONG\r\n" {
			t.Fatalf("PING on connection %d: %q, %v", i, buf, err)
		}
		raw[i] = c
	}
	_, gr := newGoRedis(t, nd, n, false)
	_, vg := newValkeyGo(t, nd, n, false)
	clients := map[string]*client{"go-redis": gr, "valkey-go": vg}
	for name, c := range clients {
		parallel(t, n, func(i int) error { return c.set(ctx, fmt.Sprint(name, i), "x") })
	}
	if t.Failed() {
		return
	}
	nd.Kill()
	killed := time.Now()

	parallel(t, n, func(i int) error {
		c := raw[i]
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		m, err := c.Read(make([]byte, 64))
		t.Logf("raw connection %d: read ended %v after the kill: %d bytes, %v", i, time.Since(killed).Round(time.Millisecond), m, err)
		if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			return fmt.Errorf("read after the server was killed: %d bytes, %v; want the connection's end", m, err)
		}
		return nil
	})
	for name, c := range clients {
		parallel(t, n, func(i int) error {
			ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			defer cancel()
			err := c.ping(ctx)
			t.Logf("%s %d: PING %v after the kill: %v", name, i, time.Since(killed).Round(time.Millisecond), err)
			if err == nil || ctx.Err() != nil {
				return fmt.Errorf("%s: PING after the server was killed: %v; want an error before its deadline", name, err)
			}
			return nil
		})
	}
}

// parallel runs f(0..n-1) at once and fails t with the errors.
func parallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = f(i) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("goroutine %d: %v", i, err)
		}
	}
}

// TestValkeyRDMACluster is TestValkeyCluster over RDMA: 3 masters and 3
// replicas of the build's valkey-server, each serving RDMA on a port of
// its own, created over TCP with valkey-cli --cluster create; go-redis's
// ClusterClient and valkey-go reach every node over RDMA (RDMAAddrTable)
// through one RDMAOnly Dialer, across all slots, in pipelines across
// slots, during a resharding and through a failover. Every slot is written
// and read in pipelines (allSlotsPipelined), not one round trip each as
// clustertest.ReadWriteAllSlots does: its 32768 round trips per client
// outlasted its 6 minutes in the VM on a loaded 2-core host.
func TestValkeyRDMACluster(t *testing.T) {
	b := testutil.RequireValkeyBuild(t)
	rdmatest.Require(t)
	c := testutil.StartValkeyRDMACluster(t, b, rdmatest.Addr(t).String(), 3, 1)
	t.Logf("%s: nodes %v", b.Version(), c.RDMAAddrs())
	d := rdmaOnly(t, c.RDMAAddrs())
	rdb, vk := rdmaClusterClients(t, d, c.Addrs())
	kvs := map[string]clustertest.KV{"go-redis": clustertest.GoRedis(rdb), "valkey-go": clustertest.Valkey(vk)}

	for name, kv := range kvs {
		t.Run(name+"/all-slots", func(t *testing.T) { allSlotsPipelined(t, kv, name+":rw:"); nodesAlive(t, c) })
		t.Run(name+"/pipeline", func(t *testing.T) { clustertest.Pipeline(t, kv, name+":pipe:"); nodesAlive(t, c) })
	}
	if t.Failed() {
		return
	}
	for _, m := range c.Masters() {
		if _, ok := d.Stats()[m.Addr]; !ok {
			t.Errorf("the Dialer has no pool for master %s: %v", m.Addr, d.Stats())
		}
	}
	t.Run("reshard", func(t *testing.T) { testReshard(t, c, kvs); nodesAlive(t, c) })
	if t.Failed() {
		return // a failover on a cluster that lost a node tells nothing
	}
	t.Run("failover", func(t *testing.T) { testFailover(t, c, d, kvs) })
	for addr, st := range d.Stats() {
		t.Logf("%s: dials %v, open %d", addr, st.Dials, st.Open)
		if st.Dials[pool.TCP] != 0 || st.LastFallback != nil {
			t.Errorf("%s: dials %v, fallback %v; want RDMA only", addr, st.Dials, st.LastFallback)
		}
	}
}

// nodesAlive fails t for each node of c that died (none is killed on
// purpose before the failover), saying why.
func nodesAlive(t *testing.T, c *testutil.ValkeyCluster) {
	t.Helper()
	for _, nd := range c.Nodes {
		if why := nd.Died(); why != "" {
			t.Errorf("%s", why)
		}
	}
}

// rdmaClusterClients is clusterClients with dialTimeout for dials.
func rdmaClusterClients(t *testing.T, d *pool.Dialer, seeds []string) (*redis.ClusterClient, valkey.Client) {
	t.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: seeds, Dialer: d.DialContext, MaxRedirects: 8,
		DialTimeout: dialTimeout, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second,
		ClusterStateReloadInterval: time.Second, // as clusterClients says
	})
	t.Cleanup(func() { rdb.Close() })
	vk, err := valkey.NewClient(valkey.ClientOption{
		InitAddress: seeds, DialCtxFn: d.DialValkey, Dialer: net.Dialer{Timeout: dialTimeout},
		DisableCache: true, ConnWriteTimeout: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vk.Close)
	return rdb, vk
}

// allSlotsPipelined writes a key of every slot and reads it back, in
// pipelines of 512 keys that span slots in order (about 170 per master).
func allSlotsPipelined(t *testing.T, kv clustertest.KV, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	keys := clustertest.KeyPerSlot(prefix)
	for off := 0; off < len(keys); off += 512 {
		ks := keys[off:min(off+512, len(keys))]
		vs := make([]string, len(ks))
		for i := range ks {
			vs[i] = fmt.Sprint("v", off+i)
		}
		if err := kv.PipeSet(ctx, ks, vs); err != nil {
			t.Fatalf("SETs of slots %d-%d: %v", off, off+len(ks)-1, err)
		}
		got, err := kv.PipeGet(ctx, ks)
		if err != nil {
			t.Fatalf("GETs of slots %d-%d: %v", off, off+len(ks)-1, err)
		}
		for i := range ks {
			if got[i] != vs[i] {
				t.Fatalf("GET %s (slot %d) = %q, want %q", ks[i], off+i, got[i], vs[i])
			}
		}
	}
}
