package benchrun

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/pool"
	"github.com/seed54442f1a/rdmapool/pool/gnettcp"
)

// valkeyCluster starts three Debian valkey-servers as a cluster of three
// primaries without replicas and returns their addresses once it is up.
func valkeyCluster(t *testing.T) []string {
	t.Helper()
	return testutil.StartValkeyCluster(t, 3, 0).Addrs()
}

func dbsize(t *testing.T, addr string) int {
	t.Helper()
	_, port, _ := net.SplitHostPort(addr)
	out, err := exec.Command("valkey-cli", "-p", port, "DBSIZE").Output()
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(out)))
	return n
}

func TestSlotTags(t *testing.T) {
	tags := slotTags()
	for slot, tag := range tags {
		s := string(tag[:])
		if i := strings.IndexByte(s, '}'); i >= 0 {
			s = s[:i]
		}
		if s == "" || int(crc16([]byte(s))&16383) != slot {
			t.Fatalf("slot %d: tag %q hashes to %d", slot, tag, crc16([]byte(s))&16383)
		}
	}
	// CRC-16/XMODEM's check value, and the cluster's example key.
	if crc16([]byte("123456789")) != 0x31C3 {
		t.Errorf("crc16: %#x", crc16([]byte("123456789")))
	}
}

func TestParseClusterSlots(t *testing.T) {
	reply := "*2\r\n" +
		"*3\r\n:0\r\n:99\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n" +
		"*4\r\n:100\r\n:16383\r\n*2\r\n$0\r\n\r\n:7001\r\n*2\r\n$9\r\n127.0.0.1\r\n:7002\r\n"
	nodes, err := parseClusterSlots([]byte(reply), "10.0.0.1")
	if err != nil || len(nodes) != 2 || nodes[0].Addr != "127.0.0.1:7000" || nodes[0].ID != "id" || len(nodes[0].Slots) != 100 ||
		nodes[1].Addr != "10.0.0.1:7001" || len(nodes[1].Slots) != 16284 {
		t.Errorf("nodes %+v, %v", nodes, err)
	}
	for _, bad := range []string{"+OK\r\n", "*1\r\n*2\r\n:0\r\n:1\r\n", "*1\r\n*3\r\n:5\r\n:1\r\n*2\r\n$1\r\nx\r\n:1\r\n", "*1\r\n"} {
		if _, err := parseClusterSlots([]byte(bad), "h"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestRunCluster: against a three-primary valkey-server cluster, every
// test runs, each client on its primary with keys of that primary's slots
// (a MOVED would fail the run after its redirections), and every primary
// gets keys. Then slots in a stale map are followed: a run whose map gives
// one primary's slots to another meets MOVED, reads CLUSTER SLOTS again
// and completes.
func TestRunCluster(t *testing.T) {
	addrs := valkeyCluster(t)
	cl, err := DiscoverCluster(context.Background(), addrs[1], nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if n := cl.Nodes(); len(n) != 3 || len(n[0].Slots)+len(n[1].Slots)+len(n[2].Slots) != 16384 {
		t.Fatalf("nodes: %d", len(n))
	}
	ts, _ := Tests("", true, true)
	cfg := Config{Addr: addrs[1], Policy: pool.TCPOnly, Clients: 6, Requests: 300, DataSize: 3, Pipeline: 4, Keyspace: 1000, Tests: ts, Cluster: cl}
	o, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Results) != len(testOrder) {
		t.Errorf("%d results", len(o.Results))
	}
	for _, r := range o.Results {
		if r.Requests != 300 {
			t.Errorf("%s: %d requests", r.Test, r.Requests)
		}
	}
	for _, a := range addrs {
		if n := dbsize(t, a); n < 10 {
			t.Errorf("%s holds %d keys", a, n)
		}
	}

	// A stale map: the first primary's slots said to be the second's.
	cl.mu.Lock()
	cl.nodes[1].Slots, cl.nodes[0].Slots = cl.nodes[0].Slots, cl.nodes[1].Slots
	gen := cl.gen
	cl.mu.Unlock()
	ts, _ = Tests("set,get", true, true)
	cfg.Tests, cfg.Pipeline = ts, 1
	if o, err = Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if cl.gen == gen {
		t.Error("no MOVED was met: the map was not read again")
	}
	for _, r := range o.Results {
		if r.Requests != 300 {
			t.Errorf("%s after MOVED: %d requests", r.Test, r.Requests)
		}
	}
}

// counterSum is the sum of the counters "{N}" (N below keys, zero-padded
// as __rand_int__ is) that the node at addr serves: GETs in one pipeline
// (one round trip, for the emulated VM), the other node's keys answered
// MOVED.
func counterSum(t *testing.T, addr string, keys int) int {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(time.Minute))
	var req []byte
	for k := range keys {
		req = append(req, multiBulk("GET", fmt.Sprintf("{%0*d}", len(randPlaceholder), k))...)
	}
	go nc.Write(req) // the replies are read meanwhile
	br := bufio.NewReader(nc)
	sum := 0
	for k := range keys {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		line = strings.TrimSuffix(line, "\r\n")
		switch {
		case strings.HasPrefix(line, "-MOVED "), line == "$-1", line == "_":
		case strings.HasPrefix(line, "$"):
			v, err := br.ReadString('\n')
			n, err2 := strconv.Atoi(strings.TrimSuffix(v, "\r\n"))
			if err != nil || err2 != nil {
				t.Fatalf("key %d: %q, %v", k, v, err)
			}
			sum += n
		default:
			t.Fatalf("key %d: %q", k, line)
		}
	}
	return sum
}

// TestRunClusterMovedMidPipeline: a MOVED met after some of a batch's
// requests were answered counts each request once, and executes it once.
// Against an embedded cluster of two nodes, each INCR's key hashes on a
// random number (its hash tag; the request has no {tag}), so that about half go
// to the node that does not serve their slot, which answers MOVED: each
// batch meets a MOVED wherever its first key of the other node's slots
// is. The counters the servers hold then add up to the requests, and so
// do the results, on event loops (netpoll) and on a goroutine a client
// (gnet).
func TestRunClusterMovedMidPipeline(t *testing.T) {
	for _, engine := range []pool.TCPEngine{pool.TCPNetpoll, gnettcp.Engine} {
		t.Run(engine.String(), func(t *testing.T) {
			e, err := StartEmbeddedCluster(2, false, nil, "")
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			cl, err := DiscoverCluster(context.Background(), e.TCPAddrs[0], nil, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			gen := cl.gen
			test, err := Command([]string{"INCR", "{" + randPlaceholder + "}"})
			if err != nil {
				t.Fatal(err)
			}
			const requests = 400
			cfg := Config{Addr: e.TCPAddrs[0], Policy: pool.TCPOnly, TCPEngine: engine, Clients: 2, Requests: requests, Pipeline: 8,
				Keyspace: 1000, Seed: 7, Tests: []Test{test}, Cluster: cl}
			o, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if wantLoops := engine == pool.TCPNetpoll && loopsSupported; (o.EventLoops > 0) != wantLoops {
				t.Errorf("%d event loops, want loops: %v", o.EventLoops, wantLoops)
			}
			if cl.gen-gen < 2 {
				t.Errorf("%d redirections followed: the test met too few MOVED", cl.gen-gen)
			}
			if r := o.Results[0]; r.Requests != requests || r.Hist.TotalCount() != requests {
				t.Errorf("%d requests counted (histogram %d), want %d", r.Requests, r.Hist.TotalCount(), requests)
			}
			if sum := counterSum(t, e.TCPAddrs[0], cfg.Keyspace) + counterSum(t, e.TCPAddrs[1], cfg.Keyspace); sum != requests {
				t.Errorf("the servers executed %d INCRs, want %d", sum, requests)
			}
		})
	}
}

// TestRunEmbeddedClusterRDMA: over RDMA to an embedded cluster of three
// nodes, each reached at its own RDMA address (Config.RDMAAddrOf), and
// over TCP to the same nodes, the redirected INCRs of
// TestRunClusterMovedMidPipeline are counted and executed once (in the
// VM: make test-rxe VM_PKGS=./cmd/rdmapool/internal/benchrun
// VM_RUN=TestRunEmbeddedClusterRDMA).
func TestRunEmbeddedClusterRDMA(t *testing.T) {
	rdmatest.Require(t)
	e, err := StartEmbeddedCluster(3, true, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if len(e.RDMAAddrs) != 3 {
		t.Fatalf("RDMA addresses %v: %v", e.RDMAAddrs, e.RDMAErr)
	}
	test, err := Command([]string{"INCR", "{" + randPlaceholder + "}"})
	if err != nil {
		t.Fatal(err)
	}
	const requests = 300
	sum := 0
	for _, policy := range []pool.Policy{pool.RDMAOnly, pool.TCPOnly} {
		cl, err := DiscoverCluster(context.Background(), e.TCPAddrs[0], nil, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Addr: e.TCPAddrs[0], RDMAAddrOf: pool.RDMAAddrTable(e.RDMAAddrs), Policy: policy, Clients: 3, Requests: requests,
			Pipeline: 8, Keyspace: 1000, Seed: 3, Tests: []Test{test}, Cluster: cl}
		o, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatalf("%v: %v", policy, err)
		}
		want := pool.RDMA
		if policy == pool.TCPOnly {
			want = pool.TCP
		}
		if o.Transport != want {
			t.Errorf("%v: transport %s (%s)", policy, o.Transport, o.Reason)
		}
		if r := o.Results[0]; r.Requests != requests {
			t.Errorf("%v: %d requests counted, want %d", policy, r.Requests, requests)
		}
		sum += requests
		got := 0
		for _, a := range e.TCPAddrs {
			got += counterSum(t, a, cfg.Keyspace)
		}
		if got != sum {
			t.Errorf("after %v: the servers executed %d INCRs, want %d", policy, got, sum)
		}
	}
}

// TestRetagFollowsNode: a client's tags are of the slots of its own
// primary, found by address, whatever that primary's place in a map read
// again (one that names the primaries in another order); a primary that
// serves no slot any more leaves it the primary of its index.
func TestRetagFollowsNode(t *testing.T) {
	c := &Cluster{}
	set := func(nodes ...ClusterNode) {
		c.nodes, c.byAddr = nodes, map[string]int{}
		for i, n := range nodes {
			c.byAddr[n.Addr] = i
		}
	}
	set(ClusterNode{Addr: "b:1", Slots: []uint16{7}}, ClusterNode{Addr: "a:1", Slots: []uint16{9000}})
	req := multiBulk("GET", "k:"+tagPlaceholder)
	cl := newClient(nil, 1)
	cl.prepare(req, 2, nil)
	cl.index, cl.node = 0, "a:1"
	slotOf := func() int {
		c.retag(cl, req, 2)
		key := string(cl.out[bytes.Index(cl.out, []byte("k:")) : bytes.Index(cl.out, []byte("k:"))+len("k:")+len(tagPlaceholder)])
		tag := strings.TrimSuffix(strings.TrimPrefix(key[2:], "{"), "}")
		tag = strings.TrimRight(tag, "}")
		return int(crc16([]byte(tag)) & 16383)
	}
	if s := slotOf(); s != 9000 {
		t.Errorf("a:1's client got slot %d, want 9000", s)
	}
	set(ClusterNode{Addr: "b:1", Slots: []uint16{7}}, ClusterNode{Addr: "a:1"})
	if s := slotOf(); s != 7 {
		t.Errorf("a client whose primary has no slot got slot %d, want primary 0's, 7", s)
	}
}
