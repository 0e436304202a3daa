package server

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"

	"github.com/seed54442f1a/rdmapool/internal/clustertest"
	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/pool"
)

// embeddedCluster is a Cluster of n in-process nodes on loopback, the
// slots split evenly between them (or as ranges says, per node), closed
// when the test ends.
type embeddedCluster struct {
	cl    *Cluster
	addrs []string
	ids   []string
	srvs  []*Server
}

func startCluster(tb testing.TB, n int, ranges ...[]SlotRange) *embeddedCluster {
	tb.Helper()
	ec := &embeddedCluster{cl: NewCluster()}
	var ls []net.Listener
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		ls = append(ls, l)
		rs := []SlotRange{{i * NumSlots / n, (i+1)*NumSlots/n - 1}}
		if ranges != nil {
			rs = ranges[i]
		}
		id, err := ec.cl.AddNode(l.Addr().String(), rs...)
		if err != nil {
			tb.Fatal(err)
		}
		ec.addrs, ec.ids = append(ec.addrs, l.Addr().String()), append(ec.ids, id)
	}
	for i, l := range ls {
		srv, err := ec.cl.NewServer(ec.ids[i], nil)
		if err != nil {
			tb.Fatal(err)
		}
		ec.srvs = append(ec.srvs, srv)
		done := make(chan error, 1)
		go func() { done <- srv.Serve(l) }()
		tb.Cleanup(func() {
			srv.Close()
			if err := <-done; !errors.Is(err, ErrServerClosed) {
				tb.Errorf("Serve returned %v, want ErrServerClosed", err)
			}
		})
	}
	return ec
}

// keyIn returns a key of slot.
func keyIn(slot int) string { return clustertest.KeyPerSlot("k")[slot] }

func TestClusterCommands(t *testing.T) {
	ec := startCluster(t, 3)
	rc := dialRaw(t, ec.addrs[0])
	own, other := keyIn(0), keyIn(NumSlots-1)

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cluster", "myid"}, "$40\r\n" + ec.ids[0] + "\r\n"},
		{[]string{"cluster", "keyslot", "foo"}, ":12182\r\n"},
		{[]string{"cluster", "keyslot", "{user1000}.following"}, fmt.Sprintf(":%d\r\n", keySlot([]byte("user1000")))},
		{[]string{"set", own, "v"}, "+OK\r\n"},
		{[]string{"get", own}, "$1\r\nv\r\n"},
		{[]string{"set", other, "v"}, "-MOVED 16383 " + ec.addrs[2] + "\r\n"},
		{[]string{"get", other}, "-MOVED 16383 " + ec.addrs[2] + "\r\n"},
		{[]string{"mset", own, "x", keyIn(1), "y"}, "-CROSSSLOT Keys in request don't hash to the same slot\r\n"},
		{[]string{"del", own, keyIn(1)}, "-CROSSSLOT Keys in request don't hash to the same slot\r\n"},
		{[]string{"cluster", "countkeysinslot", "0"}, ":1\r\n"},
		{[]string{"cluster", "countkeysinslot", "16384"}, "-ERR Invalid slot\r\n"},
		{[]string{"cluster", "countkeysinslot", "x"}, "-ERR Invalid slot\r\n"},
		{[]string{"cluster", "getkeysinslot", "0", "10"}, "*1\r\n$" + strconv.Itoa(len(own)) + "\r\n" + own + "\r\n"},
		{[]string{"mset", "{" + own + "}1", "x", "{" + own + "}2", "y"}, "+OK\r\n"},
		{[]string{"cluster", "countkeysinslot", "0"}, ":3\r\n"},
		{[]string{"cluster", "nosuch"}, "-ERR unknown subcommand 'nosuch'. Try CLUSTER HELP.\r\n"},
		{[]string{"cluster", "myid", "x"}, "-ERR wrong number of arguments for 'cluster|myid' command\r\n"},
		{[]string{"ping"}, "+PONG\r\n"},
	} {
		if got := rc.do(tc.args...); got != tc.want {
			t.Errorf("%q = %q, want %q", tc.args, got, tc.want)
		}
	}
	info := rc.do("cluster", "info")
	for _, want := range []string{"cluster_state:ok", "cluster_slots_assigned:16384", "cluster_known_nodes:3", "cluster_size:3"} {
		if !strings.Contains(info, want) {
			t.Errorf("CLUSTER INFO lacks %q:\n%s", want, info)
		}
	}
	nodes := rc.do("cluster", "nodes")
	for i, id := range ec.ids {
		r := fmt.Sprintf("%d-%d", i*NumSlots/3, (i+1)*NumSlots/3-1)
		if !strings.Contains(nodes, id+" "+ec.addrs[i]+"@") || !strings.Contains(nodes, r) {
			t.Errorf("CLUSTER NODES lacks node %s at %s with %s:\n%s", id, ec.addrs[i], r, nodes)
		}
	}
	if !strings.Contains(nodes, "myself,master") {
		t.Errorf("CLUSTER NODES has no myself:\n%s", nodes)
	}
	slots := rc.do("cluster", "slots")
	_, port, _ := net.SplitHostPort(ec.addrs[1])
	want := fmt.Sprintf("*3\r\n:5461\r\n:10921\r\n*4\r\n$9\r\n127.0.0.1\r\n:%s\r\n$40\r\n%s\r\n*0\r\n", port, ec.ids[1])
	if !strings.HasPrefix(slots, "*3\r\n*3\r\n:0\r\n:5460\r\n") || !strings.Contains(slots, want) {
		t.Errorf("CLUSTER SLOTS = %q, want the second range as %q", slots, want)
	}
	shards := rc.do("cluster", "shards")
	if !strings.Contains(shards, "$6\r\nhealth\r\n$6\r\nonline\r\n") || !strings.Contains(shards, ":5461\r\n:10921\r\n") {
		t.Errorf("CLUSTER SHARDS = %q", shards)
	}

	// Not a cluster's node: valkey's error, which valkey-go takes to mean
	// a standalone server.
	_, addr := startServer(t, nil)
	if got := dialRaw(t, addr).do("cluster", "slots"); got != "-ERR This instance has cluster support disabled\r\n" {
		t.Errorf("CLUSTER SLOTS on a standalone server = %q", got)
	}
}

func TestClusterDown(t *testing.T) {
	ec := startCluster(t, 2, []SlotRange{{0, 99}}, []SlotRange{{200, 299}})
	rc := dialRaw(t, ec.addrs[0])
	if got := rc.do("get", keyIn(150)); got != "-CLUSTERDOWN Hash slot not served\r\n" {
		t.Errorf("GET of an unserved slot = %q", got)
	}
	if info := rc.do("cluster", "info"); !strings.Contains(info, "cluster_state:fail") || !strings.Contains(info, "cluster_slots_assigned:200") {
		t.Errorf("CLUSTER INFO:\n%s", info)
	}
}

func TestClusterBadConfig(t *testing.T) {
	cl := NewCluster()
	for _, tc := range []struct {
		addr string
		rs   []SlotRange
		want string
	}{
		{"127.0.0.1", nil, "missing port"},
		{"127.0.0.1:0", nil, "bad port"},
		{"127.0.0.1:1", []SlotRange{{0, NumSlots}}, "not within"},
		{"127.0.0.1:1", []SlotRange{{5, 4}}, "not within"},
	} {
		if _, err := cl.AddNode(tc.addr, tc.rs...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AddNode(%q, %v) = %v, want an error with %q", tc.addr, tc.rs, err, tc.want)
		}
	}
	id, err := cl.AddNode("127.0.0.1:1", SlotRange{0, 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cl.AddNode("127.0.0.1:2", SlotRange{10, 20}); err == nil || !strings.Contains(err.Error(), "slot 10 is already") {
		t.Errorf("overlapping slots: %v", err)
	}
	if _, err := cl.AddNode("127.0.0.1:1"); err == nil {
		t.Error("a node added twice")
	}
	if _, err := cl.NewServer("nosuch", nil); err == nil {
		t.Error("NewServer of an unknown node")
	}
	srv, err := cl.NewServer(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := cl.NewServer(id, nil); err == nil {
		t.Error("two Servers for one node")
	}
	if err := cl.MigrateSlot(0, id); err == nil {
		t.Error("a slot migrated to its owner")
	}
	if err := cl.MigrateSlot(11, id); err == nil {
		t.Error("an unowned slot migrated")
	}
	if _, err := cl.MoveKeys(0, 1); err == nil {
		t.Error("MoveKeys of a slot not in migration")
	}
	if err := cl.FinishMigration(NumSlots); err == nil {
		t.Error("FinishMigration of slot 16384")
	}
}

// TestClusterMigration moves a slot by hand and checks each step's
// answers: ASK for the keys gone (or new), TRYAGAIN for a request on
// both, ASKING on the target, then MOVED once the move is done.
func TestClusterMigration(t *testing.T) {
	ec := startCluster(t, 2)
	const slot = 7
	src, dst := dialRaw(t, ec.addrs[0]), dialRaw(t, ec.addrs[1])
	k1, k2 := "{"+keyIn(slot)+"}1", "{"+keyIn(slot)+"}2"
	src.do("set", k1, "a")
	src.do("set", k2, "b")
	src.do("pexpire", k2, "100000")
	if err := ec.cl.MigrateSlot(slot, ec.ids[1]); err != nil {
		t.Fatal(err)
	}
	ask := fmt.Sprintf("-ASK %d %s\r\n", slot, ec.addrs[1])
	if got := src.do("get", k1); got != "$1\r\na\r\n" {
		t.Errorf("GET of a key not yet moved = %q", got)
	}
	if got := src.do("set", "{"+keyIn(slot)+"}new", "x"); got != ask {
		t.Errorf("SET of a new key in a migrating slot = %q, want %q", got, ask)
	}
	if got := dst.do("get", k1); got != fmt.Sprintf("-MOVED %d %s\r\n", slot, ec.addrs[0]) {
		t.Errorf("GET at the target without ASKING = %q", got)
	}
	if n, err := ec.cl.MoveKeys(slot, 1); err != nil || n != 1 {
		t.Fatalf("MoveKeys = %d, %v", n, err)
	}
	if got := src.do("mget", k1, k2); got != "-TRYAGAIN Multiple keys request during rehashing of slot\r\n" {
		t.Errorf("MGET across the move = %q", got)
	}
	if err := ec.cl.FinishMigration(slot); err != nil {
		t.Fatal(err)
	}
	if got := src.do("get", k1); got != fmt.Sprintf("-MOVED %d %s\r\n", slot, ec.addrs[1]) {
		t.Errorf("GET at the old owner = %q", got)
	}
	if got := dst.do("mget", k1, k2); got != "*2\r\n$1\r\na\r\n$1\r\nb\r\n" {
		t.Errorf("MGET at the new owner = %q", got)
	}
	if got := dst.do("pttl", k2); !strings.HasPrefix(got, ":9") {
		t.Errorf("PTTL of a moved key = %q, want its expiry kept", got)
	}
	if got := dst.do("cluster", "countkeysinslot", strconv.Itoa(slot)); got != ":2\r\n" {
		t.Errorf("COUNTKEYSINSLOT at the new owner = %q", got)
	}

	// ASKING, during another migration, lets the target serve the slot
	// for one command.
	if err := ec.cl.MigrateSlot(slot, ec.ids[0]); err != nil {
		t.Fatal(err)
	}
	if got := src.do("cluster", "nodes"); !strings.Contains(got, fmt.Sprintf("[%d-<-%s]", slot, ec.ids[1])) {
		t.Errorf("CLUSTER NODES at the target lacks the import:\n%s", got)
	}
	src.do("asking")
	if got := src.do("set", k1, "c"); got != "+OK\r\n" {
		t.Errorf("SET after ASKING = %q", got)
	}
	if got := src.do("get", k1); got != fmt.Sprintf("-MOVED %d %s\r\n", slot, ec.addrs[1]) {
		t.Errorf("GET one command after ASKING = %q", got)
	}
}

// TestClusterClients runs go-redis's ClusterClient and valkey-go through
// a pool.Dialer against a 3-node embedded cluster: the scenarios of the
// tests against valkey-server's cluster, and load while slots migrate, so
// that both clients follow ASK and MOVED without an error.
func TestClusterClients(t *testing.T) {
	ec := startCluster(t, 3)
	d := &pool.Dialer{Options: pool.Options{Policy: pool.TCPOnly}}
	defer d.Close()
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: ec.addrs, Dialer: d.DialContext, MaxRedirects: 8})
	defer rdb.Close()
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: ec.addrs, DialCtxFn: d.DialValkey, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer vk.Close()
	if _, ok := vk.Nodes()[ec.addrs[2]]; !ok {
		t.Fatalf("valkey-go does not see the cluster: %v", vk.Nodes())
	}
	kvs := map[string]clustertest.KV{"go-redis": clustertest.GoRedis(rdb), "valkey-go": clustertest.Valkey(vk)}
	for name, kv := range kvs {
		t.Run(name+"/all-slots", func(t *testing.T) { clustertest.ReadWriteAllSlots(t, kv, name+":rw:") })
		t.Run(name+"/pipeline", func(t *testing.T) { clustertest.Pipeline(t, kv, name+":pipe:") })
	}
	for i, srv := range ec.srvs {
		if n := srv.ks.size(nil); n < 2*NumSlots/3 {
			t.Errorf("node %d holds %d keys, want its third of both clients' keys at least", i, n)
		}
	}

	t.Run("migration", func(t *testing.T) {
		loads := map[string]*clustertest.Load{}
		for name, kv := range kvs {
			loads[name] = clustertest.StartLoad(kv, name+":mig:", 4, false)
		}
		// Move the slots that hold some of the loads' keys, one key at
		// a time, to the next node and back, so that the clients meet
		// ASK (keys gone) and MOVED (slots gone).
		var slots []int
		for name := range kvs {
			for n := range 32 {
				slots = append(slots, keySlot([]byte(fmt.Sprintf("%s:mig:%d:%d", name, n%4, n))))
			}
		}
		slices.Sort(slots)
		slots = slices.Compact(slots)
		moved := 0
		asks, redirects := ec.cl.asks.Load(), ec.cl.moved.Load()
		for round := range 2 {
			for _, s := range slots {
				owner := slices.Index(ec.ids, ec.cl.Owner(s))
				from, to := ec.ids[owner], ec.ids[(owner+1+round)%3]
				if err := ec.cl.MigrateSlot(s, to); err != nil {
					t.Fatal(err)
				}
				for {
					n, err := ec.cl.MoveKeys(s, 1)
					if err != nil {
						t.Fatal(err)
					}
					moved += n
					if n == 0 {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				if err := ec.cl.FinishMigration(s); err != nil {
					t.Fatal(err)
				}
				if ec.cl.Owner(s) != to || from == to {
					t.Fatalf("slot %d is %s's", s, ec.cl.Owner(s))
				}
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
		asks, redirects = ec.cl.asks.Load()-asks, ec.cl.moved.Load()-redirects
		t.Logf("%d slots moved twice, %d keys moved; the clients were answered ASK %d times, MOVED %d times", len(slots), moved, asks, redirects)
		// Whether a client meets a slot mid-migration (ASK) depends on
		// timing; under emulation it may not. TestClusterMigration answers
		// ASK deterministically. A MOVED after each slot's move is certain.
		if moved == 0 || redirects == 0 {
			t.Error("the migration did not redirect the clients")
		}
	})
}

// TestClusterKeySlotDiff checks CLUSTER KEYSLOT against valkey-server's in
// cluster mode, for keys with and without hash tags.
func TestClusterKeySlotDiff(t *testing.T) {
	vc := testutil.StartValkeyClusterNodes(t, 1)
	ec := startCluster(t, 1)
	ours := dialRaw(t, ec.addrs[0])
	keys := []string{"", "a", "foo", "{", "}", "{}", "{}a", "a{}", "{a}", "{a}b", "x{a}b", "{{a}}", "{a}{b}", "a{b", "a}b{c}",
		"user:{123}:name", "\x00\xff{\x80}", strings.Repeat("k", 1000), "{" + strings.Repeat("t", 300) + "}"}
	for i := range 200 {
		keys = append(keys, fmt.Sprintf("key:%d", i*7919), fmt.Sprintf("{tag%d}x", i))
	}
	vk := dialRaw(t, vc.Nodes[0].Addr)
	for _, k := range keys {
		want := vk.do("cluster", "keyslot", k)
		if !strings.HasPrefix(want, ":") {
			t.Fatalf("valkey-server: CLUSTER KEYSLOT %q = %q", k, want)
		}
		if got := ours.do("cluster", "keyslot", k); got != want {
			t.Errorf("CLUSTER KEYSLOT %q = %q, valkey-server says %q", k, got, want)
		}
		if s := clustertest.KeySlot(k); ":"+strconv.Itoa(s)+"\r\n" != want {
			t.Errorf("clustertest.KeySlot(%q) = %d, valkey-server says %q", k, s, want)
		}
	}
}

// TestClusterCommandInfo: a cluster's node answers COMMAND as a standalone
// server does (command_test.go compares it with valkey-server's): what
// go-redis's ClusterClient reads to find a command's keys.
func TestClusterCommandInfo(t *testing.T) {
	ec := startCluster(t, 1)
	rc := dialRaw(t, ec.addrs[0])
	want := "*1\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n"
	if got := rc.do("command", "info", "get"); !strings.HasPrefix(got, want) {
		t.Errorf("COMMAND INFO GET = %.100q..., want it to start %q", got, want)
	}
	if got := rc.do("command"); !strings.HasPrefix(got, fmt.Sprintf("*%d\r\n*10\r\n", len(commands))) {
		t.Errorf("COMMAND = %.100q..., want %d commands", got, len(commands))
	}
}
