package pool_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/seed54442f1a/rdmapool/pool"
	"github.com/seed54442f1a/rdmapool/pool/pooltest"
)

// rdmaDials records the address of each RDMA dial of n.
func rdmaDials(n *pooltest.Network) func() []string {
	var mu sync.Mutex
	var got []string
	n.OnDial(pool.RDMA, func(_ context.Context, addr string) error {
		mu.Lock()
		got = append(got, addr)
		mu.Unlock()
		return nil
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
}

func TestDialerRDMAAddrOf(t *testing.T) {
	nodes := []string{"10.0.0.1:7000", "10.0.0.2:7001", "10.0.0.3:7002"}
	for _, tc := range []struct {
		name string
		opts pool.Options
		want []string
	}{
		{"table", pool.Options{RDMAAddrOf: pool.RDMAAddrTable(map[string]string{
			nodes[0]: "192.0.2.1:17000", nodes[1]: "192.0.2.2:17001",
		})}, []string{"192.0.2.1:17000", "192.0.2.2:17001", nodes[2]}},
		{"table falls back to RDMAPort", pool.Options{RDMAPort: 6380, RDMAAddrOf: pool.RDMAAddrTable(map[string]string{
			nodes[0]: "192.0.2.1:17000",
		})}, []string{"192.0.2.1:17000", "10.0.0.2:6380", "10.0.0.3:6380"}},
		{"offset", pool.Options{RDMAAddrOf: pool.RDMAPortOffset(10000)},
			[]string{"10.0.0.1:17000", "10.0.0.2:17001", "10.0.0.3:17002"}},
		{"none", pool.Options{}, nodes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := pooltest.New(pooltest.Echo)
			defer n.Close()
			got := rdmaDials(n)
			o := tc.opts
			o.Network, o.Policy = n, pool.RDMAOnly
			d := &pool.Dialer{Options: o}
			defer d.Close()
			for _, a := range nodes {
				c, err := d.DialContext(context.Background(), "tcp", a)
				if err != nil {
					t.Fatalf("dial %s: %v", a, err)
				}
				pool.Ping(t, c)
				c.Close()
			}
			if g := got(); strings.Join(g, " ") != strings.Join(tc.want, " ") {
				t.Fatalf("RDMA dials went to %v, want %v", g, tc.want)
			}
		})
	}
}

func TestDialerRDMAAddrOfErrors(t *testing.T) {
	n := pooltest.New(pooltest.Echo)
	defer n.Close()
	errNo := errors.New("no such node")
	for _, tc := range []struct {
		name string
		f    func(string) (string, error)
		addr string
		want string
	}{
		{"error", func(string) (string, error) { return "", errNo }, "10.0.0.1:7000", "no such node"},
		{"bad answer", func(string) (string, error) { return "10.0.0.1", nil }, "10.0.0.1:7000", "missing port"},
		{"offset out of range", pool.RDMAPortOffset(60000), "10.0.0.1:7000", "out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &pool.Dialer{Options: pool.Options{Network: n, RDMAAddrOf: tc.f}}
			defer d.Close()
			for _, dial := range []func() (net.Conn, error){
				func() (net.Conn, error) { return d.DialContext(context.Background(), "tcp", tc.addr) },
				func() (net.Conn, error) { return d.DialValkey(context.Background(), tc.addr, &net.Dialer{}, nil) },
			} {
				c, err := dial()
				if err == nil {
					c.Close()
					t.Fatal("dial succeeded")
				}
				if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "RDMAAddrOf") {
					t.Fatalf("error %q, want one naming RDMAAddrOf and %q", err, tc.want)
				}
			}
			if len(d.Stats()) != 0 {
				t.Fatalf("a pool was kept: %v", d.Stats())
			}
		})
	}
	if n.Dials(pool.RDMA)+n.Dials(pool.TCP) != 0 {
		t.Fatalf("%d RDMA and %d TCP dials, want none", n.Dials(pool.RDMA), n.Dials(pool.TCP))
	}
}

// A pool of its own takes RDMAAddrOf as a Dialer's does; RDMAAddr, when
// set, wins.
func TestPoolRDMAAddrOf(t *testing.T) {
	n := pooltest.New(pooltest.Echo)
	defer n.Close()
	got := rdmaDials(n)
	for _, o := range []pool.Options{
		{Addr: "10.0.0.1:7000", RDMAAddrOf: pool.RDMAPortOffset(1)},
		{Addr: "10.0.0.1:7000", RDMAAddr: "192.0.2.9:9", RDMAAddrOf: pool.RDMAPortOffset(1)},
	} {
		o.Network, o.Policy = n, pool.RDMAOnly
		p, err := pool.New(o)
		if err != nil {
			t.Fatal(err)
		}
		c, err := p.Get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		p.Close()
	}
	if g := strings.Join(got(), " "); g != "10.0.0.1:7001 192.0.2.9:9" {
		t.Fatalf("RDMA dials went to %s", g)
	}
}

// One Dialer for every node of a cluster, each node's RDMA port its TCP
// port plus 10000; a go-redis ClusterClient takes it as it is:
//
//	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, Dialer: d.DialContext})
func ExampleRDMAPortOffset() {
	d := &pool.Dialer{Options: pool.Options{RDMAAddrOf: pool.RDMAPortOffset(10000)}}
	defer d.Close()
	rdma, _ := d.Options.RDMAAddrOf("192.0.2.1:7000")
	fmt.Println(rdma)
	// Output: 192.0.2.1:17000
}
