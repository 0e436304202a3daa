package pool_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"

	"github.com/seed54442f1a/rdmapool/internal/clustertest"
	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/pool"
)

// clusterClients returns go-redis's ClusterClient and valkey-go's client
// of the cluster at seeds, both dialling through d.
func clusterClients(t *testing.T, d *pool.Dialer, seeds []string) (*redis.ClusterClient, valkey.Client) {
	t.Helper()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: seeds, Dialer: d.DialContext, MaxRedirects: 8,
		DialTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second,
		// A master that refuses connections does not make go-redis
		// reload the slot map (MOVED does): it does every
		// ClusterStateReloadInterval, 60 s by default, with its own
		// dialer as with ours.
		ClusterStateReloadInterval: time.Second,
	})
	t.Cleanup(func() { rdb.Close() })
	vk, err := valkey.NewClient(valkey.ClientOption{
		InitAddress: seeds, DialCtxFn: d.DialValkey, DisableCache: true,
		ConnWriteTimeout: 3 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vk.Close)
	return rdb, vk
}

// TestValkeyCluster runs go-redis's ClusterClient and valkey-go, both
// through one Dialer, against a cluster of 3 masters and 3 replicas of
// Debian's valkey-server: reads and writes across all slots, pipelines
// that span slots, load during a live resharding (MOVED and ASK), and load
// while a master is killed, after which both clients reach the promoted
// replica and every write a replica acknowledged (WAIT 1) is there.
func TestValkeyCluster(t *testing.T) {
	c := testutil.StartValkeyCluster(t, 3, 1)
	d := &pool.Dialer{}
	defer d.Close()
	rdb, vk := clusterClients(t, d, c.Addrs())
	kvs := map[string]clustertest.KV{"go-redis": clustertest.GoRedis(rdb), "valkey-go": clustertest.Valkey(vk)}

	for name, kv := range kvs {
		t.Run(name+"/all-slots", func(t *testing.T) { clustertest.ReadWriteAllSlots(t, kv, name+":rw:") })
		t.Run(name+"/pipeline", func(t *testing.T) { clustertest.Pipeline(t, kv, name+":pipe:") })
	}
	if t.Failed() {
		return
	}
	masters := c.Masters()
	if len(masters) != 3 {
		t.Fatalf("%d masters: %+v", len(masters), masters)
	}
	for _, m := range masters {
		if _, ok := d.Stats()[m.Addr]; !ok {
			t.Errorf("the Dialer has no pool for master %s: %v", m.Addr, d.Stats())
		}
	}

	t.Run("reshard", func(t *testing.T) { testReshard(t, c, kvs) })
	t.Run("failover", func(t *testing.T) { testFailover(t, c, d, kvs) })

	for addr, st := range d.Stats() {
		if st.Dials[pool.RDMA] != 0 {
			t.Logf("%s: %d RDMA dials", addr, st.Dials[pool.RDMA])
		}
	}
}

// testReshard moves 200 slots from one master to another with
// valkey-cli --cluster reshard while both clients write and read; neither
// may see an error, and every key must hold what was last written.
func testReshard(t *testing.T, c *testutil.ValkeyCluster, kvs map[string]clustertest.KV) {
	ms := c.Masters()
	from, to := ms[0], ms[1]
	loads := map[string]*clustertest.Load{}
	for name, kv := range kvs {
		loads[name] = clustertest.StartLoad(kv, name+":reshard:", 4, false)
	}
	waitOps(t, loads, 200)
	out, err := c.CLI(3*time.Minute, "--cluster", "reshard", from.Addr,
		"--cluster-from", from.ID, "--cluster-to", to.ID, "--cluster-slots", "200",
		"--cluster-yes", "--cluster-pipeline", "50")
	if err != nil {
		for _, l := range loads {
			l.Stop()
		}
		t.Fatalf("reshard: %v\n%s", err, tail(out, 2000))
	}
	waitOps(t, loads, 200) // after the move, on the new map
	for name, l := range loads {
		l.Stop()
		errs := l.Errors()
		for i, err := range errs {
			if i < 10 {
				t.Errorf("%s: %v", name, err)
			}
		}
		if len(errs) > 0 {
			t.Errorf("%s: %d errors in %d operations", name, len(errs), l.Ops())
		}
		l.Verify(t, kvs[name])
		t.Logf("%s: %d operations during the resharding", name, l.Ops())
	}
	c.WaitHealthy(30 * time.Second)
	// A slot that moved: its old master now answers MOVED for its keys.
	moved := -1
	for _, n := range c.Masters() {
		if n.ID != to.ID {
			continue
		}
		for _, r := range n.Ranges {
			for s := r[0]; s <= r[1] && moved < 0; s++ {
				if inRanges(s, from.Ranges) {
					moved = s
				}
			}
		}
	}
	if moved < 0 {
		t.Fatalf("no slot of %s moved to %s", from.Addr, to.Addr)
	}
	key := clustertest.KeyPerSlot("moved:")[moved]
	reply, err := c.Call(from.Addr, "get", key)
	if err != nil || !strings.HasPrefix(reply, "MOVED "+strconv.Itoa(moved)+" "+to.Addr) {
		t.Errorf("GET %s (slot %d) at its old master %s = %q, %v; want MOVED to %s", key, moved, from.Addr, reply, err, to.Addr)
	}
}

// testFailover kills a master with SIGKILL while both clients write with
// WAIT 1; the cluster promotes its replica, both clients then write to
// its slots again (within 60 s), and every write that a replica
// acknowledged reads back.
func testFailover(t *testing.T, c *testutil.ValkeyCluster, d *pool.Dialer, kvs map[string]clustertest.KV) {
	victim := c.Masters()[0]
	var replica string
	ns, err := c.ClusterNodes(victim.Addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		if n.MasterID == victim.ID {
			replica = n.Addr
		}
	}
	if replica == "" {
		t.Fatalf("master %s has no replica: %+v", victim.Addr, ns)
	}
	// go-redis logs each dial that the dead master refuses; they are
	// expected here.
	redis.SetLogger(discardLogger{})
	loads := map[string]*clustertest.Load{}
	for name, kv := range kvs {
		loads[name] = clustertest.StartLoad(kv, name+":failover:", 4, true)
	}
	waitOps(t, loads, 200)
	c.Node(victim.Addr).Kill()
	t.Logf("killed master %s; its replica is %s", victim.Addr, replica)

	killed := time.Now()
	c.WaitHealthy(60 * time.Second)
	t.Logf("cluster healthy %v after the kill", time.Since(killed).Round(time.Millisecond))
	key := clustertest.KeyPerSlot("after:")[victim.Ranges[0][0]]
	var wg sync.WaitGroup
	for name, kv := range kvs {
		wg.Go(func() {
			end := time.Now().Add(60 * time.Second)
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				err := kv.Set(ctx, key, name)
				cancel()
				if err == nil {
					break
				}
				if time.Now().After(end) {
					t.Errorf("%s: SET %s (slot of the killed master) still fails 60 s after the failover: %v", name, key, err)
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
			t.Logf("%s: wrote to the promoted replica %v after the kill", name, time.Since(killed).Round(time.Millisecond))
		})
	}
	wg.Wait()
	waitOps(t, loads, 100)
	t.Logf("loads went on %v after the kill", time.Since(killed).Round(time.Millisecond))
	for name, l := range loads {
		l.Stop()
		acked := l.Acked()
		if len(acked) == 0 {
			t.Errorf("%s: no write was acknowledged by a replica", name)
		}
		l.Verify(t, kvs[name])
		t.Logf("%s: %d operations, %d acknowledged by a replica, %d errors (the master's death)", name, l.Ops(), len(acked), len(l.Errors()))
	}
	if st, ok := d.Stats()[replica]; !ok || st.Open == 0 {
		t.Errorf("the Dialer has no open connection to the promoted replica %s: %+v", replica, st)
	}
}

// waitOps waits until each load has done n more operations, 60 s at most.
func waitOps(t *testing.T, loads map[string]*clustertest.Load, n int64) {
	t.Helper()
	start := map[string]int64{}
	for name, l := range loads {
		start[name] = l.Ops()
	}
	end := time.Now().Add(60 * time.Second)
	for name, l := range loads {
		for l.Ops() < start[name]+n {
			if time.Now().After(end) {
				t.Fatalf("%s: %d operations in 60 s, want %d", name, l.Ops()-start[name], n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}

func inRanges(slot int, rs [][2]int) bool {
	for _, r := range rs {
		if r[0] <= slot && slot <= r[1] {
			return true
		}
	}
	return false
}
