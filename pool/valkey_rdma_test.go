package pool_test

import (
	"context"
	"fmt"
	"net"
	"strings"
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
// local build (make BUILD_RDMA=module; no Debian package has RDMA) in the
// directory RDMAPOOL_VALKEY_DIR names. Without that variable they skip,
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

// TestValkeyRDMAClients: go-redis and valkey-go through a Dialer with
// RDMAOnly against the build's valkey-server over RDMA: SET and GET,
// pipelines of 1000 commands, 16 MiB values (sixteen times valkey's
// receive buffer, so each crosses many re-arms both ways) and 32
// connections at once.
func TestValkeyRDMAClients(t *testing.T) {
	b := testutil.RequireValkeyBuild(t)
	rdmatest.Require(t)
	nd := testutil.StartValkeyRDMA(t, b, rdmatest.Addr(t).String())
	t.Logf("%s: TCP %s, RDMA %s", b.Version(), nd.Addr, nd.RDMAAddr)
	m := map[string]string{nd.Addr: nd.RDMAAddr}
	big := strings.Repeat("0123456789abcdef", 1<<20) // 16 MiB
	const conns = 32

	t.Run("go-redis", func(t *testing.T) {
		d := rdmaOnly(t, m)
		rdb := redis.NewClient(&redis.Options{Addr: nd.Addr, Dialer: d.DialContext, PoolSize: conns,
			DialTimeout: dialTimeout, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second})
		defer rdb.Close()
		ctx := context.Background()
		for i := range 50 {
			k, v := fmt.Sprint("r:k", i), strings.Repeat(fmt.Sprint(i), i+1)
			if err := rdb.Set(ctx, k, v, 0).Err(); err != nil {
				t.Fatal(err)
			}
			if got, err := rdb.Get(ctx, k).Result(); err != nil || got != v {
				t.Fatalf("GET %s = %q, %v; want %q", k, got, err, v)
			}
		}
		pipe := rdb.Pipeline()
		for i := range 1000 {
			pipe.Incr(ctx, "r:ctr")
			pipe.Set(ctx, fmt.Sprint("r:p", i), i, 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
		if n, err := rdb.Get(ctx, "r:ctr").Int(); err != nil || n != 1000 {
			t.Errorf("counter after a pipeline of 1000 INCR: %d, %v", n, err)
		}
		if err := rdb.Set(ctx, "r:big", big, 0).Err(); err != nil {
			t.Fatalf("SET of 16 MiB: %v", err)
		}
		if got, err := rdb.Get(ctx, "r:big").Result(); err != nil || got != big {
			t.Fatalf("GET of 16 MiB: %d bytes (equal: %v), %v", len(got), got == big, err)
		}
		parallel(t, conns, func(i int) error {
			k := fmt.Sprint("r:c", i)
			for j := range 20 {
				if err := rdb.Set(ctx, k, j, 0).Err(); err != nil {
					return err
				}
				if n, err := rdb.Get(ctx, k).Int(); err != nil || n != j {
					return fmt.Errorf("GET %s = %d, %v; want %d", k, n, err, j)
				}
			}
			return nil
		})
		if st := d.Stats()[nd.Addr]; st.Dials[pool.RDMA] < conns/2 {
			t.Errorf("%d RDMA dials for %d goroutines at once; want many connections", st.Dials[pool.RDMA], conns)
		}
		checkAllRDMA(t, d)
	})

	t.Run("valkey-go", func(t *testing.T) {
		d := rdmaOnly(t, m)
		vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{nd.Addr}, DialCtxFn: d.DialValkey,
			Dialer: net.Dialer{Timeout: dialTimeout}, DisableCache: true, ConnWriteTimeout: 30 * time.Second, BlockingPoolSize: conns})
		if err != nil {
			t.Fatal(err)
		}
		defer vk.Close()
		ctx := context.Background()
		for i := range 50 {
			k, v := fmt.Sprint("v:k", i), strings.Repeat(fmt.Sprint(i), i+1)
			if err := vk.Do(ctx, vk.B().Set().Key(k).Value(v).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			if got, err := vk.Do(ctx, vk.B().Get().Key(k).Build()).ToString(); err != nil || got != v {
				t.Fatalf("GET %s = %q, %v; want %q", k, got, err, v)
			}
		}
		cmds := make(valkey.Commands, 0, 1000)
		for range 1000 {
			cmds = append(cmds, vk.B().Incr().Key("v:ctr").Build())
		}
		for _, r := range vk.DoMulti(ctx, cmds...) {
			if r.Error() != nil {
				t.Fatal(r.Error())
			}
		}
		if n, err := vk.Do(ctx, vk.B().Get().Key("v:ctr").Build()).AsInt64(); err != nil || n != 1000 {
			t.Errorf("counter after 1000 pipelined INCR: %d, %v", n, err)
		}
		if err := vk.Do(ctx, vk.B().Set().Key("v:big").Value(big).Build()).Error(); err != nil {
			t.Fatalf("SET of 16 MiB: %v", err)
		}
		if got, err := vk.Do(ctx, vk.B().Get().Key("v:big").Build()).ToString(); err != nil || got != big {
			t.Fatalf("GET of 16 MiB: %d bytes (equal: %v), %v", len(got), got == big, err)
		}
		// Blocking commands take a connection of their own from
		// valkey-go's pool: BLPOP on 32 keys at once opens 32.
		parallel(t, conns, func(i int) error {
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
		checkAllRDMA(t, d)
	})
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
		t.Run(name+"/all-slots", func(t *testing.T) { allSlotsPipelined(t, kv, name+":rw:") })
		t.Run(name+"/pipeline", func(t *testing.T) { clustertest.Pipeline(t, kv, name+":pipe:") })
	}
	if t.Failed() {
		return
	}
	for _, m := range c.Masters() {
		if _, ok := d.Stats()[m.Addr]; !ok {
			t.Errorf("the Dialer has no pool for master %s: %v", m.Addr, d.Stats())
		}
	}
	t.Run("reshard", func(t *testing.T) { testReshard(t, c, kvs) })
	t.Run("failover", func(t *testing.T) { testFailover(t, c, d, kvs) })
	for addr, st := range d.Stats() {
		t.Logf("%s: dials %v, open %d", addr, st.Dials, st.Open)
		if st.Dials[pool.TCP] != 0 || st.LastFallback != nil {
			t.Errorf("%s: dials %v, fallback %v; want RDMA only", addr, st.Dials, st.LastFallback)
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
