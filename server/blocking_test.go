package server

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// waitBlockedClients waits until INFO says n clients are blocked, as
// valkey-server's INFO does too (the blocking differential test asks both).
func waitBlockedClients(tb testing.TB, ctl *rawClient, n int) {
	tb.Helper()
	want := "blocked_clients:" + strconv.Itoa(n) + "\r\n"
	// Only against a hang: an event, not a time, is what is waited for.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if strings.Contains(ctl.do("info", "clients"), want) {
			return
		}
	}
	tb.Fatalf("INFO never said %q: %q", want, ctl.do("info", "clients"))
}

func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// TestBlockingWakeOrder: three clients blocked on one key are served in
// the order they blocked, by one push of three elements, before the
// pusher's next command; a request sent behind BLPOP runs once it is
// served.
func TestBlockingWakeOrder(t *testing.T) {
	_, addr := startServer(t, nil)
	ctl := dialRaw(t, addr)
	var ws []*rawClient
	for i := range 3 {
		w := dialRaw(t, addr)
		req := encode("blpop", "nothere", "k", "0")
		if i == 0 {
			req += encode("ping") // waits behind the BLPOP
		}
		w.send(req)
		waitBlockedClients(t, ctl, i+1)
		ws = append(ws, w)
	}
	ctl.expectReply(t, []string{"rpush", "k", "a", "b", "c"}, ":3\r\n")
	ctl.expectReply(t, []string{"llen", "k"}, ":0\r\n")
	for i, w := range ws {
		w.expect("*2\r\n" + bulk("k") + bulk(string(rune('a'+i))))
	}
	ws[0].expect("+PONG\r\n")
	waitBlockedClients(t, ctl, 0)
	// A key of another type wakes nobody; the right one does.
	ws[1].send(encode("bzpopmin", "k", "0"))
	ws[2].send(encode("blpop", "k", "0"))
	waitBlockedClients(t, ctl, 2)
	ctl.expectReply(t, []string{"rpush", "k", "x"}, ":1\r\n")
	ws[2].expect("*2\r\n" + bulk("k") + bulk("x"))
	ctl.expectReply(t, []string{"zadd", "k", "1", "m"}, ":1\r\n")
	ws[1].expect("*3\r\n" + bulk("k") + bulk("m") + bulk("1"))
}

// TestBlockingTimeouts: a timeout that passes replies nil in each
// protocol's form; inside MULTI a blocking command does not block.
func TestBlockingTimeouts(t *testing.T) {
	_, addr := startServer(t, nil)
	c := dialRaw(t, addr)
	c.expectReply(t, []string{"blpop", "k", "0.01"}, "*-1\r\n")
	c.expectReply(t, []string{"blmove", "k", "d", "left", "left", "0.01"}, "*-1\r\n")
	c.expectReply(t, []string{"bzmpop", "0.01", "1", "z", "min"}, "*-1\r\n")
	c.expectReply(t, []string{"blpop", "k", "-1"}, "-ERR timeout is negative\r\n")
	c.expectReply(t, []string{"blpop", "k", "x"}, "-ERR timeout is not a float or out of range\r\n")
	c.do("multi")
	c.do("blpop", "k", "0")
	c.do("blmove", "k", "d", "left", "left", "0")
	c.expectReply(t, []string{"exec"}, "*2\r\n*-1\r\n$-1\r\n")
	c.do("hello", "3")
	c.expectReply(t, []string{"brpop", "k", "0.01"}, "_\r\n")
	c.expectReply(t, []string{"bzpopmax", "z", "0.01"}, "_\r\n")
}

// TestBlockingUnblockAndClose: CLIENT UNBLOCK ends a block with the
// timeout's reply or an error; a client that closes while blocked leaves
// no waiter: the next push stays in the list.
func TestBlockingUnblockAndClose(t *testing.T) {
	srv, addr := startServer(t, nil)
	ctl, w := dialRaw(t, addr), dialRaw(t, addr)
	id := strings.TrimSpace(w.do("client", "id")[1:])
	ctl.expectReply(t, []string{"client", "unblock", id}, ":0\r\n")
	w.send(encode("blpop", "k", "0"))
	waitBlockedClients(t, ctl, 1)
	ctl.expectReply(t, []string{"client", "unblock", id}, ":1\r\n")
	w.expect("*-1\r\n")
	w.send(encode("bzpopmin", "k", "0"))
	waitBlockedClients(t, ctl, 1)
	ctl.expectReply(t, []string{"client", "unblock", id, "error"}, ":1\r\n")
	w.expect("-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n")

	w.send(encode("blpop", "k", "0"))
	waitBlockedClients(t, ctl, 1)
	w.c.Close()
	waitBlockedClients(t, ctl, 0)
	ctl.expectReply(t, []string{"rpush", "k", "v"}, ":1\r\n")
	ctl.expectReply(t, []string{"llen", "k"}, ":1\r\n")
	if n := srv.blockedClients.Load(); n != 0 {
		t.Errorf("%d clients blocked", n)
	}
}

// TestBlockingMove: a client blocked in BLMOVE is served by a push, and
// its push serves the one blocked on its destination, in the same round;
// a destination of the wrong type is its error, and the element stays.
func TestBlockingMove(t *testing.T) {
	_, addr := startServer(t, nil)
	ctl, a, b := dialRaw(t, addr), dialRaw(t, addr), dialRaw(t, addr)
	a.send(encode("blmove", "src", "dst", "right", "left", "0"))
	waitBlockedClients(t, ctl, 1)
	b.send(encode("blpop", "dst", "0"))
	waitBlockedClients(t, ctl, 2)
	ctl.expectReply(t, []string{"rpush", "src", "x"}, ":1\r\n")
	a.expect(bulk("x"))
	b.expect("*2\r\n" + bulk("dst") + bulk("x"))
	ctl.expectReply(t, []string{"exists", "src", "dst"}, ":0\r\n")

	a.send(encode("brpoplpush", "src", "dst", "0"))
	waitBlockedClients(t, ctl, 1)
	ctl.do("set", "dst", "s")
	ctl.expectReply(t, []string{"rpush", "src", "y"}, ":1\r\n")
	a.expect("-" + msgWrongType + "\r\n")
	ctl.expectReply(t, []string{"llen", "src"}, ":1\r\n")
}

// TestBlockingGoRedis: go-redis's blocking calls against the server.
func TestBlockingGoRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 3})
	defer rdb.Close()
	if _, err := rdb.BLPop(ctx, 20*time.Millisecond, "none").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("BLPop on no list: %v, want redis.Nil", err)
	}
	type popped struct {
		v   []string
		err error
	}
	got := make(chan popped, 1)
	go func() {
		v, err := rdb.BLPop(ctx, 0, "q").Result()
		got <- popped{v, err}
	}()
	ctl := dialRaw(t, addr)
	waitBlockedClients(t, ctl, 1)
	if err := rdb.RPush(ctx, "q", "job").Err(); err != nil {
		t.Fatal(err)
	}
	if p := <-got; p.err != nil || len(p.v) != 2 || p.v[0] != "q" || p.v[1] != "job" {
		t.Errorf("BLPop = %q, %v", p.v, p.err)
	}
	rdb.RPush(ctx, "from", "a", "b")
	if v, err := rdb.BLMove(ctx, "from", "to", "LEFT", "RIGHT", time.Second).Result(); v != "a" || err != nil {
		t.Errorf("BLMove = %q, %v", v, err)
	}
	rdb.ZAdd(ctx, "z", redis.Z{Score: 2, Member: "two"}, redis.Z{Score: 1, Member: "one"})
	if v, err := rdb.BZPopMin(ctx, time.Second, "z").Result(); err != nil || v.Key != "z" || v.Member != "one" || v.Score != 1 {
		t.Errorf("BZPopMin = %+v, %v", v, err)
	}
}

// TestBlockingLeavesNothing: clients blocked forever and with timeouts,
// then the server closes: no goroutine is left, and no client counted
// blocked.
func TestBlockingLeavesNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		srv, addr := startServer(t, nil)
		ctl := dialRaw(t, addr)
		for i := range 4 {
			w := dialRaw(t, addr)
			w.send(encode("blpop", "k"+strconv.Itoa(i), []string{"0", "100"}[i%2]))
			waitBlockedClients(t, ctl, i+1)
		}
		srv.Close()
		if n := srv.blockedClients.Load(); n != 0 {
			t.Errorf("%d clients blocked after Close", n)
		}
	}()
	checkGoroutines(t, before)
}

// blockStep is a step of a blocking scenario: client who sends args and
// reads the reply; or, with send, sends them and reads nothing (it
// blocks), and then waits until INFO counts blocked clients; with read,
// reads one reply it is owed; with wait, only waits for the count. "$idN"
// in args is client N's CLIENT ID.
type blockStep struct {
	who     int
	args    []string
	send    bool
	blocked int
	read    bool
	wait    bool // only wait until INFO counts blocked clients
}

// blockScenarios are the scripts TestDifferentialBlocking runs on both
// servers, client 0 the one that never blocks.
var blockScenarios = map[string][]blockStep{
	"wake order": {
		{who: 1, args: []string{"blpop", "k", "0"}, send: true, blocked: 1},
		{who: 2, args: []string{"blpop", "k", "0"}, send: true, blocked: 2},
		{who: 3, args: []string{"brpop", "other", "k", "0"}, send: true, blocked: 3},
		{who: 0, args: []string{"rpush", "k", "a", "b", "c", "d"}},
		{who: 1, read: true}, {who: 2, read: true}, {who: 3, read: true},
		{who: 0, args: []string{"lrange", "k", "0", "-1"}},
	},
	"timeouts": {
		{who: 1, args: []string{"blpop", "k", "0.01"}},
		{who: 1, args: []string{"brpop", "k", "k2", "0.001"}},
		{who: 1, args: []string{"blmove", "k", "d", "left", "right", "0.01"}},
		{who: 1, args: []string{"brpoplpush", "k", "d", "0.01"}},
		{who: 1, args: []string{"blmpop", "0.01", "2", "k", "k2", "left", "count", "2"}},
		{who: 1, args: []string{"bzpopmin", "z", "0.01"}},
		{who: 1, args: []string{"bzpopmax", "z", "z2", "0.01"}},
		{who: 1, args: []string{"bzmpop", "0.01", "1", "z", "max"}},
	},
	"multi": {
		{who: 1, args: []string{"multi"}},
		{who: 1, args: []string{"blpop", "k", "0"}},
		{who: 1, args: []string{"blmove", "k", "d", "left", "left", "0"}},
		{who: 1, args: []string{"brpoplpush", "k", "d", "0"}},
		{who: 1, args: []string{"blmpop", "0", "1", "k", "right"}},
		{who: 1, args: []string{"bzpopmax", "z", "0"}},
		{who: 1, args: []string{"bzmpop", "0", "1", "z", "min"}},
		{who: 1, args: []string{"rpush", "k", "x"}},
		{who: 1, args: []string{"brpop", "k", "0"}},
		{who: 1, args: []string{"exec"}},
	},
	"unblock": {
		{who: 0, args: []string{"client", "unblock", "$id1"}},
		{who: 1, args: []string{"blpop", "k", "0"}, send: true, blocked: 1},
		{who: 0, args: []string{"client", "unblock", "$id1"}},
		{who: 1, read: true},
		{who: 1, args: []string{"bzmpop", "0", "1", "z", "min"}, send: true, blocked: 1},
		{who: 0, args: []string{"client", "unblock", "$id1", "error"}},
		{who: 1, read: true},
		{who: 0, args: []string{"client", "unblock", "$id1", "timeout"}},
		{who: 0, args: []string{"client", "unblock", "$id1", "bogus"}},
		{who: 0, args: []string{"client", "unblock", "x"}},
	},
	"kill": {
		{who: 1, args: []string{"blpop", "k", "0"}, send: true, blocked: 1},
		{who: 2, args: []string{"bzpopmin", "z", "0"}, send: true, blocked: 2},
		{who: 0, args: []string{"client", "kill", "id", "$id1"}},
		{who: 0, args: []string{"client", "kill", "id", "$id2", "skipme", "yes", "type", "normal", "user", "default"}},
		{who: 0, wait: true, blocked: 0},
		{who: 0, args: []string{"rpush", "k", "v"}},
		{who: 0, args: []string{"llen", "k"}},
		{who: 0, args: []string{"client", "kill", "id", "$id1"}},
		{who: 0, args: []string{"client", "kill", "type", "master"}},
		{who: 0, args: []string{"client", "kill", "type", "pubsub"}},
		{who: 0, args: []string{"client", "kill", "addr", "192.0.2.1:5", "maxage", "100"}},
		{who: 0, args: []string{"client", "kill", "192.0.2.1:5"}},
		{who: 0, args: []string{"client", "kill", "id", "0"}},
		{who: 0, args: []string{"client", "kill", "id", "x"}},
		{who: 0, args: []string{"client", "kill", "maxage", "0"}},
		{who: 0, args: []string{"client", "kill", "maxage", "x"}},
		{who: 0, args: []string{"client", "kill", "type", "foo"}},
		{who: 0, args: []string{"client", "kill", "user", "bob"}},
		{who: 0, args: []string{"client", "kill", "skipme", "maybe"}},
		{who: 0, args: []string{"client", "kill", "id", "5", "bogus"}},
	},
	"exec pushes": {
		// EXEC makes k2 then k1 ready: the client blocked on both runs
		// again once both are written, and BLPOP takes k1 first.
		{who: 1, args: []string{"blpop", "k1", "k2", "0"}, send: true, blocked: 1},
		{who: 0, args: []string{"multi"}},
		{who: 0, args: []string{"rpush", "k2", "x"}},
		{who: 0, args: []string{"rpush", "k1", "y"}},
		{who: 0, args: []string{"exec"}},
		{who: 1, read: true},
		{who: 0, args: []string{"lrange", "k2", "0", "-1"}},
	},
	"types": {
		{who: 1, args: []string{"bzpopmin", "k", "0"}, send: true, blocked: 1},
		{who: 2, args: []string{"blpop", "k", "0"}, send: true, blocked: 2},
		{who: 0, args: []string{"set", "k", "s"}},
		{who: 0, args: []string{"del", "k"}},
		{who: 0, args: []string{"rpush", "k", "a", "b"}},
		{who: 2, read: true},
		{who: 0, args: []string{"del", "k"}},
		{who: 0, args: []string{"zadd", "k", "2", "b", "1", "a"}},
		{who: 1, read: true},
		{who: 0, args: []string{"zrange", "k", "0", "-1", "withscores"}},
		{who: 0, args: []string{"blpop", "k", "0.01"}},
		{who: 0, args: []string{"bzmpop", "0.01", "2", "none", "k", "max", "count", "3"}},
	},
	"swapdb": {
		{who: 1, args: []string{"blpop", "k", "0"}, send: true, blocked: 1},
		{who: 0, args: []string{"select", "1"}},
		{who: 0, args: []string{"rpush", "k", "a", "b"}},
		{who: 0, args: []string{"swapdb", "0", "1"}},
		{who: 1, read: true},
		{who: 0, args: []string{"lrange", "k", "0", "-1"}},
	},
	"move chain": {
		{who: 1, args: []string{"blmove", "src", "dst", "right", "left", "0"}, send: true, blocked: 1},
		{who: 2, args: []string{"brpop", "dst", "0"}, send: true, blocked: 2},
		{who: 3, args: []string{"brpoplpush", "src", "dst", "0"}, send: true, blocked: 3},
		{who: 0, args: []string{"rpush", "src", "a", "b"}},
		{who: 1, read: true}, {who: 2, read: true}, {who: 3, read: true},
		{who: 0, args: []string{"lrange", "dst", "0", "-1"}},
		{who: 1, args: []string{"blmove", "src", "dst", "left", "left", "0"}, send: true, blocked: 1},
		{who: 0, args: []string{"set", "dst", "s"}},
		{who: 0, args: []string{"rpush", "src", "c"}},
		{who: 1, read: true},
		{who: 0, args: []string{"llen", "src"}},
	},
	"queued input": {
		{who: 1, args: []string{"blmpop", "0", "2", "k1", "k2", "right", "count", "3"}, send: true, blocked: 1},
		{who: 1, args: []string{"ping"}, send: true, blocked: 1},
		{who: 1, args: []string{"llen", "k2"}, send: true, blocked: 1},
		{who: 2, args: []string{"bzmpop", "0", "1", "z", "max", "count", "2"}, send: true, blocked: 2},
		{who: 0, args: []string{"rpush", "k2", "a", "b", "c", "d"}},
		{who: 1, read: true}, {who: 1, read: true}, {who: 1, read: true},
		{who: 0, args: []string{"zadd", "z", "1", "a", "2", "b", "3", "c"}},
		{who: 2, read: true},
		{who: 0, args: []string{"zpopmax", "z"}},
		{who: 0, args: []string{"lmpop", "1", "k2", "left"}},
	},
	"errors": {
		{who: 0, args: []string{"blpop", "k", "-1"}},
		{who: 0, args: []string{"blpop", "k", "x"}},
		{who: 0, args: []string{"blpop", "k", "inf"}},
		{who: 0, args: []string{"blpop", "k", "-inf"}},
		{who: 0, args: []string{"blpop", "k", "1e400"}},
		{who: 0, args: []string{"blmpop", "-1", "1", "k", "left"}},
		{who: 0, args: []string{"blmpop", "0", "0", "k", "left"}},
		{who: 0, args: []string{"blmpop", "0", "1", "k", "up"}},
		{who: 0, args: []string{"blmpop", "0", "3", "k", "left"}},
		{who: 0, args: []string{"blmpop", "0", "1", "k", "left", "count", "0"}},
		{who: 0, args: []string{"blmpop", "0", "1", "k", "left", "count", "1", "count", "1"}},
		{who: 0, args: []string{"blmove", "k", "d", "up", "left", "0"}},
		{who: 0, args: []string{"set", "s", "v"}},
		{who: 0, args: []string{"blpop", "none", "s", "0"}},
		{who: 0, args: []string{"bzpopmin", "s", "0"}},
		{who: 0, args: []string{"rpush", "k", "x"}},
		{who: 0, args: []string{"blmove", "k", "s", "left", "left", "0"}},
		{who: 0, args: []string{"lmove", "none", "s", "left", "left"}},
		{who: 0, args: []string{"zmpop", "1", "s", "min"}},
		{who: 0, args: []string{"client", "unblock"}},
		{who: 0, args: []string{"client", "unblock", "1", "timeout", "x"}},
	},
}

// TestDifferentialBlocking runs each blocking scenario on this server and
// on valkey-server, in RESP2 and RESP3, each client on its own
// connection, and compares every reply: the order in which clients are
// woken and what each gets, timeouts (the replies, not the time), MULTI,
// CLIENT UNBLOCK, and the requests a blocked client sent meanwhile.
func TestDifferentialBlocking(t *testing.T) {
	theirs := testutil.ValkeyServer(t)
	_, ours := startServer(t, nil)
	for name, steps := range blockScenarios {
		for _, proto := range []string{"2", "3"} {
			got, want := runBlocking(t, ours, proto, steps), runBlocking(t, theirs, proto, steps)
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("%s, RESP%s, step %d %q: ours %q, valkey-server %q", name, proto, i, steps[i].args, got[i], want[i])
				}
			}
		}
	}
}

// runBlocking runs steps on the server at addr and returns the replies,
// one per step ("" for a step that only sends).
func runBlocking(t *testing.T, addr, proto string, steps []blockStep) []string {
	ctl := dialRaw(t, addr)
	ctl.do("flushall")
	clients := map[int]*rawClient{}
	ids := map[string]string{}
	for _, st := range steps {
		if clients[st.who] == nil {
			rc := dialRaw(t, addr)
			rc.do("hello", proto)
			clients[st.who] = rc
			ids["$id"+strconv.Itoa(st.who)] = strings.TrimSpace(rc.do("client", "id")[1:])
		}
	}
	replies := make([]string, len(steps))
	for i, st := range steps {
		rc := clients[st.who]
		args := slices.Clone(st.args)
		for j, a := range args {
			if id, ok := ids[a]; ok {
				args[j] = id
			}
		}
		switch {
		case st.wait:
			waitBlockedClients(t, ctl, st.blocked)
		case st.read:
			replies[i] = rc.reply()
		case st.send:
			rc.send(encode(args...))
			waitBlockedClients(t, ctl, st.blocked)
		default:
			replies[i] = rc.do(args...)
		}
	}
	for _, rc := range clients {
		rc.c.Close()
	}
	waitBlockedClients(t, ctl, 0)
	return replies
}

// TestBlockingCluster: on a cluster's node, the keys of a blocking command
// must share a slot (its key spec's keys, the keynum form's too), and a
// client blocked on a key of the node's slot is served by a push.
func TestBlockingCluster(t *testing.T) {
	ec := startCluster(t, 3)
	rc, ctl := dialRaw(t, ec.addrs[0]), dialRaw(t, ec.addrs[0])
	own := keyIn(0)
	cross := "-" + msgCrossSlot + "\r\n"
	for _, args := range [][]string{
		{"blpop", own, keyIn(1), "0"},
		{"blmove", own, keyIn(1), "left", "left", "0"},
		{"blmpop", "0", "2", own, keyIn(1), "left"},
		{"bzmpop", "0", "2", own, keyIn(1), "min"},
		{"lmpop", "2", own, keyIn(1), "left"},
	} {
		rc.expectReply(t, args, cross)
	}
	rc.expectReply(t, []string{"blmpop", "0", "1", keyIn(NumSlots - 1), "left"}, "-MOVED 16383 "+ec.addrs[2]+"\r\n")
	rc.send(encode("blmpop", "0", "2", own, "{"+own+"}2", "left"))
	waitBlockedClients(t, ctl, 1)
	ctl.expectReply(t, []string{"rpush", "{" + own + "}2", "v"}, ":1\r\n")
	rc.expect("*2\r\n" + bulk("{"+own+"}2") + "*1\r\n" + bulk("v"))
}

// TestBlockingRaces drives the races of blocking: clients blocking on two
// lists with timeouts that pass while pushers push to them, BLMOVE moving
// between them, and CLIENT UNBLOCK aimed at the blocked ones. Every
// element pushed is popped once or left in a list: none lost to a timeout
// or an unblock that raced a push, none popped twice.
func TestBlockingRaces(t *testing.T) {
	srv, addr := startServer(t, nil)
	ctx := context.Background()
	const blockers, pushers, perPusher = 6, 3, 300
	var (
		mu     sync.Mutex
		popped = map[string]int{}
		ids    []int64
		wg     sync.WaitGroup
	)
	stop := make(chan struct{})
	for i := range blockers {
		rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, Protocol: 2 + i%2})
		defer rdb.Close()
		id, err := rdb.ClientID(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				timeout := time.Duration(1+n%3) * time.Millisecond
				if i%3 == 2 {
					v, err := rdb.BLMove(ctx, "q2", "q1", "LEFT", "RIGHT", timeout).Result()
					if err != nil && !errors.Is(err, redis.Nil) && !strings.HasPrefix(err.Error(), "UNBLOCKED") {
						t.Errorf("BLMove: %v", err)
						return
					}
					_ = v // moved, not popped: it stays counted in the lists
					continue
				}
				v, err := rdb.BLPop(ctx, timeout, "q1", "q2").Result()
				switch {
				case err == nil:
					mu.Lock()
					popped[v[1]]++
					mu.Unlock()
				case errors.Is(err, redis.Nil), strings.HasPrefix(err.Error(), "UNBLOCKED"):
				default:
					t.Errorf("BLPop: %v", err)
					return
				}
			}
		})
	}
	var pushWG sync.WaitGroup
	for p := range pushers {
		rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1})
		defer rdb.Close()
		pushWG.Go(func() {
			for j := range perPusher {
				key := []string{"q1", "q2"}[j%2]
				if err := rdb.RPush(ctx, key, strconv.Itoa(p)+"-"+strconv.Itoa(j)).Err(); err != nil {
					t.Errorf("RPush: %v", err)
					return
				}
				if j%7 == 0 {
					args := []any{"client", "unblock", ids[(p+j)%len(ids)]}
					if j%2 == 0 {
						args = append(args, "error")
					}
					rdb.Do(ctx, args...)
				}
			}
		})
	}
	pushWG.Wait()
	close(stop)
	wg.Wait()
	ctl := redis.NewClient(&redis.Options{Addr: addr})
	defer ctl.Close()
	for _, key := range []string{"q1", "q2"} {
		rest, err := ctl.LRange(ctx, key, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range rest {
			popped[v]++
		}
	}
	for p := range pushers {
		for j := range perPusher {
			v := strconv.Itoa(p) + "-" + strconv.Itoa(j)
			if popped[v] != 1 {
				t.Errorf("%s popped or left %d times", v, popped[v])
			}
		}
	}
	if len(popped) != pushers*perPusher {
		t.Errorf("%d elements, %d pushed", len(popped), pushers*perPusher)
	}
	if n := srv.blockedClients.Load(); n != 0 {
		t.Errorf("%d clients blocked at the end", n)
	}
}

// TestClientKill: CLIENT KILL closes a blocked client, which leaves no
// waiter; the old form kills the caller itself after its reply.
func TestClientKill(t *testing.T) {
	_, addr := startServer(t, nil)
	ctl, w := dialRaw(t, addr), dialRaw(t, addr)
	w.send(encode("blmove", "src", "dst", "left", "left", "0"))
	waitBlockedClients(t, ctl, 1)
	ctl.expectReply(t, []string{"client", "kill", "addr", w.c.LocalAddr().String()}, ":1\r\n")
	w.expectClosed()
	waitBlockedClients(t, ctl, 0)
	ctl.expectReply(t, []string{"rpush", "src", "v"}, ":1\r\n")
	ctl.expectReply(t, []string{"exists", "dst"}, ":0\r\n")
	ctl.expectReply(t, []string{"client", "kill", "skipme", "yes"}, ":0\r\n")
	ctl.expectReply(t, []string{"client", "kill", ctl.c.LocalAddr().String()}, "+OK\r\n")
	ctl.expectClosed()
}
