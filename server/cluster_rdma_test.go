package server

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"

	"github.com/seed54442f1a/rdmapool/internal/clustertest"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/pool"
	"github.com/seed54442f1a/rdmapool/qp"
)

// TestClusterClientsRDMA is TestClusterClients over RDMA (in the soft-RoCE
// VM: make test-rxe VM_PKGS=./server VM_RUN=TestClusterClientsRDMA): each
// node also listens for RDMA, on a port of its own unrelated to its TCP
// one, and the Dialer maps each address the cluster announces to that
// node's RDMA address (Options.RDMAAddrOf). Every connection must be RDMA,
// and no RDMA object may be left once all is closed.
func TestClusterClientsRDMA(t *testing.T) {
	rdmatest.Require(t)
	before := rdmatest.Resources(t)
	t.Cleanup(func() { rdmatest.CheckNoLeaks(t, before) }) // after the servers' Close
	ec := startCluster(t, 3)
	ip := rdmatest.Addr(t)
	table := map[string]string{}
	for i, srv := range ec.srvs {
		l, err := qp.Listen(netip.AddrPortFrom(ip, 0).String(), nil)
		if err != nil {
			t.Fatal(err)
		}
		table[ec.addrs[i]] = l.Addr().String()
		done := make(chan error, 1)
		go func() { done <- srv.Serve(l) }()
		t.Cleanup(func() {
			srv.Close()
			if err := <-done; !errors.Is(err, ErrServerClosed) {
				t.Errorf("Serve over RDMA returned %v, want ErrServerClosed", err)
			}
		})
	}
	t.Logf("nodes (TCP: RDMA): %v", table)

	d := &pool.Dialer{Options: pool.Options{Policy: pool.RDMAOnly, RDMAAddrOf: pool.RDMAAddrTable(table)}}
	defer d.Close()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: ec.addrs, Dialer: d.DialContext, MaxRedirects: 8})
	defer rdb.Close()
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: ec.addrs, DialCtxFn: d.DialValkey, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer vk.Close()
	kvs := map[string]clustertest.KV{"go-redis": clustertest.GoRedis(rdb), "valkey-go": clustertest.Valkey(vk)}
	for name, kv := range kvs {
		t.Run(name+"/all-slots", func(t *testing.T) { clustertest.ReadWriteAllSlots(t, kv, name+":rw:") })
		t.Run(name+"/pipeline", func(t *testing.T) { clustertest.Pipeline(t, kv, name+":pipe:") })
	}
	t.Run("migration", func(t *testing.T) {
		loads := map[string]*clustertest.Load{}
		for name, kv := range kvs {
			loads[name] = clustertest.StartLoad(kv, name+":mig:", 2, false)
		}
		for s := range 16 {
			if err := ec.cl.MigrateSlot(s, ec.ids[1]); err != nil {
				t.Fatal(err)
			}
			for {
				n, err := ec.cl.MoveKeys(s, 2)
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					break
				}
			}
			if err := ec.cl.FinishMigration(s); err != nil {
				t.Fatal(err)
			}
		}
		for name, l := range loads {
			l.Stop()
			for i, err := range l.Errors() {
				if i < 10 {
					t.Errorf("%s: %v", name, err)
				}
			}
			l.Verify(t, kvs[name])
			t.Logf("%s: %d operations", name, l.Ops())
		}
	})
	st := d.Stats()
	for _, a := range ec.addrs {
		s, ok := st[a]
		if !ok || s.Dials[pool.RDMA] == 0 || s.Dials[pool.TCP] != 0 {
			t.Errorf("node %s: %+v, want RDMA dials only", a, s)
		}
	}
}
