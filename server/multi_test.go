package server

import (
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// TestDifferentialWatch runs scripted WATCH cases on this server and on
// valkey-server, in RESP2 and RESP3, and compares every reply byte for
// byte: for each write command one change that makes EXEC fail and, where
// valkey does not count it as one, one that does not (SADD of a member
// that is there, ZADD of the same score...); FLUSHDB, FLUSHALL and SWAPDB
// of watched keys there or not; keys expired before WATCH, or after it.
// In each case the first client watches k, the second (or the first)
// runs the command, and the first runs MULTI, GET k, EXEC.
func TestDifferentialWatch(t *testing.T) {
	theirs := testutil.ValkeyServer(t)
	_, ours := startServer(t, nil)
	const other = "other:" // a step of the second client
	// A step "sleep" waits 50 ms: for an expiry of 10 ms to pass.
	cases := [][]string{
		{"set k v", other + "set k w"},
		{"set k v", "set k w"},               // the watcher's own change counts too
		{other + "set k w"},                  // no key at WATCH
		{"set k v", other + "set k w nx"},    // no change
		{other + "set k w xx"},               // no change
		{"lpush k a", other + "set k v get"}, // WRONGTYPE: no change
		{"set k v", other + "get k"},
		{"set k v", other + "getex k"},
		{"set k v", other + "getex k persist"}, // no expiry to remove
		{"set k v px 100000", other + "getex k persist"},
		{"set k v", other + "getex k px 100000"},
		{"set k v", other + "mset a 1 k 2"},
		{"set k 1", other + "incr k"},
		{"set k x", other + "incr k"}, // not an integer: no change
		{"set k v", other + "append k x"},
		{other + "append k x"},
		{other + "del k"},
		{"set k v", other + "del k"},
		{"set k v", other + "unlink a k"},
		{other + "expire k 100"},
		{"set k v", other + "expire k 100"},
		{"set k v px 100000", other + "expire k 100 nx"},
		{"set k v", other + "expire k 0"},
		{"set k v", other + "persist k"},
		{"set k v px 100000", other + "persist k"},
		{"set k v", other + "move k 1"},
		{"set k v", "select 1", "set k w", "select 0", other + "move k 1"},
		{"lpush k a", other + "lpush k b"},
		{other + "rpush k b"},
		{"lpush k a b", other + "lpop k"},
		{"lpush k a b", other + "rpop k 0"},
		{other + "lpop k"},
		{"hset k f v", other + "hset k f v"},
		{"hset k f v", other + "hdel k g"},
		{"hset k f v", other + "hdel k f"},
		{"sadd k a", other + "sadd k a"},
		{"sadd k a", other + "sadd k b"},
		{"sadd k a", other + "srem k b"},
		{"sadd k a b", other + "srem k a"},
		{"sadd k a", other + "spop k 0"},
		{"sadd k a", other + "spop k"},
		{"zadd k 1 a", other + "zadd k 1 a"},
		{"zadd k 1 a", other + "zadd k 2 a"},
		{"zadd k 1 a", other + "zadd k xx 1 b"},
		{"zadd k 1 a", other + "zadd k nx 5 a"},
		{"zadd k 1 a", other + "zadd k incr 0 a"},
		{"zadd k 1 a", other + "zrem k b"},
		{"zadd k 1 a b", other + "zrem k a"},
		{"zadd k 1 a", other + "zpopmin k 0"},
		{"zadd k 1 a 2 b", other + "zpopmin k"},
		{"xadd k 1-1 f v", other + "xadd k 2-1 f v"},
		{"xadd k 1-1 f v", other + "xadd k 1-1 f v"}, // the ID is too small: no change
		{other + "xadd k nomkstream 1-1 f v"},
		{other + "flushdb"},
		{"set k v", other + "flushdb"},
		{"set a v", other + "flushall"},
		{"set k v", other + "flushall"},
		{"select 1", "set k v", "select 0", other + "flushall"},
		{other + "swapdb 0 1"},
		{"set k v", other + "swapdb 0 1"},
		{"select 1", "set k v", "select 0", other + "swapdb 0 1"},
		{"select 1", "set k v", "select 0", other + "swapdb 1 2"},
		{other + "select 1", other + "set k v"}, // another database's k
		// Expired before WATCH.
		{"set k v px 10", "sleep"},
		{"set k v px 10", "sleep", "WATCH", other + "set k w"},
		{"set k v px 10", "sleep", "WATCH", other + "get k"},
		{"set k v px 10", "sleep", "WATCH", other + "flushdb"},
		{"set k v px 10", "sleep", "WATCH", "select 1", "set k w", "select 0", other + "swapdb 0 1"},
		{"set k v px 10", "select 1", "set k w px 10", "select 0", "sleep", "WATCH", other + "swapdb 0 1"},
		{"select 1", "set k w px 10", "select 0", "sleep", "WATCH", other + "swapdb 0 1"},
		// Expired after WATCH.
		{"set k v px 10", "WATCH", "sleep"},
		{"set k v px 10", "WATCH", "sleep", other + "get k"},
		{"set k v px 10", "WATCH", "sleep", other + "set k w"},
	}
	for _, proto := range []string{"2", "3"} {
		a, b := dialRaw(t, ours), dialRaw(t, theirs)
		a2, b2 := dialRaw(t, ours), dialRaw(t, theirs)
		for _, rc := range []*rawClient{a, b, a2, b2} {
			rc.do("hello", proto)
		}
		for _, steps := range cases {
			for _, rc := range []*rawClient{a, b, a2, b2} {
				rc.do("select", "0")
			}
			a.do("flushall")
			b.do("flushall")
			if !containsStep(steps, "WATCH") {
				// Watch after the setup: before the first step of the
				// other client.
				at := len(steps)
				for i, s := range steps {
					if strings.HasPrefix(s, other) {
						at = i
						break
					}
				}
				steps = append(append(append([]string{}, steps[:at]...), "WATCH"), steps[at:]...)
			}
			steps = append(steps, "multi", "get k", "exec")
			for _, step := range steps {
				x, y := a, b
				switch {
				case step == "sleep":
					time.Sleep(50 * time.Millisecond)
					continue
				case step == "WATCH":
					step = "watch k"
				case strings.HasPrefix(step, other):
					x, y, step = a2, b2, step[len(other):]
				}
				cmd := strings.Fields(step)
				if got, want := x.do(cmd...), y.do(cmd...); !sameReply(cmd, got, want) {
					t.Errorf("RESP%s, case %q, %q: ours %q, valkey-server %q", proto, steps, step, got, want)
				}
			}
		}
	}
}

func containsStep(steps []string, s string) bool {
	for _, x := range steps {
		if x == s {
			return true
		}
	}
	return false
}

// TestMultiGoRedis: go-redis's TxPipelined runs its commands in one
// transaction, and its Watch helper, retried on redis.TxFailedErr, loses
// no increment of goroutines that race on one key, while other clients
// INCR it outside transactions: the final count is exact.
func TestMultiGoRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	for _, proto := range []int{2, 3} {
		c := goRedis(t, addr, proto)
		ctx := ctxT(t)
		c.FlushAll(ctx)
		cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "k", "1", 0)
			p.Incr(ctx, "k")
			p.Expire(ctx, "k", time.Hour)
			p.HSet(ctx, "h", "f", "v")
			return nil
		})
		if err != nil || len(cmds) != 4 || cmds[1].(*redis.IntCmd).Val() != 2 || !cmds[2].(*redis.BoolCmd).Val() {
			t.Fatalf("RESP%d TxPipelined: %v %v", proto, cmds, err)
		}
		// A runtime error is the one command's: the others apply.
		cmds, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Incr(ctx, "h")
			p.Incr(ctx, "k")
			return nil
		})
		if err == nil || !strings.HasPrefix(cmds[0].Err().Error(), "WRONGTYPE") || cmds[1].(*redis.IntCmd).Val() != 3 {
			t.Fatalf("RESP%d TxPipelined with an error: %v %v", proto, cmds, err)
		}

		const workers, rounds, plain = 8, 50, 200
		c.Set(ctx, "n", 0, 0)
		var retries atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, workers+1)
		for range workers {
			wg.Go(func() {
				for range rounds {
					for {
						err := c.Watch(ctx, func(tx *redis.Tx) error {
							n, err := tx.Get(ctx, "n").Int()
							if err != nil {
								return err
							}
							_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
								p.Set(ctx, "n", n+1, 0)
								return nil
							})
							return err
						}, "n")
						if err == redis.TxFailedErr {
							retries.Add(1)
							continue
						}
						if err != nil {
							errs <- err
							return
						}
						break
					}
				}
			})
		}
		wg.Go(func() { // increments outside transactions, which WATCH sees
			for range plain {
				if err := c.Incr(ctx, "n").Err(); err != nil {
					errs <- err
					return
				}
			}
		})
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("RESP%d: %v", proto, err)
		}
		if n, err := c.Get(ctx, "n").Int(); err != nil || n != workers*rounds+plain {
			t.Errorf("RESP%d: n = %d (%v), want %d", proto, n, err, workers*rounds+plain)
		}
		if retries.Load() == 0 {
			t.Logf("RESP%d: no transaction had to be retried", proto)
		}
	}
}

// TestExecAtomic: no other client's command runs between the commands of
// one EXEC. Transactions set two keys on different shards to the same
// value and read one back while other clients set the first one outside
// any transaction and read both in transactions of their own: every EXEC
// sees its own value, and the pair equal.
func TestExecAtomic(t *testing.T) {
	srv, addr := startServer(t, nil)
	a, b := "a", "b"
	for i := 0; srv.ks.shard([]byte(a)) == srv.ks.shard([]byte(b)); i++ {
		b = "b" + strconv.Itoa(i)
	}
	const writers, rounds = 4, 1000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			rc := dialRaw(t, addr)
			for r := range rounds {
				v := strconv.Itoa(w*rounds + r)
				rc.send(encode("multi") + encode("set", a, v) + encode("set", b, v) + encode("get", a) + encode("exec"))
				for range 4 {
					rc.reply()
				}
				want := "*3\r\n+OK\r\n+OK\r\n$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n"
				if got := rc.reply(); got != want {
					t.Errorf("EXEC = %q, want %q", got, want)
					return
				}
			}
		})
	}
	wg.Go(func() { // outside transactions, between theirs
		rc := dialRaw(t, addr)
		for range writers * rounds {
			rc.do("set", a, "x")
		}
	})
	wg.Go(func() {
		rc := dialRaw(t, addr)
		for range writers * rounds {
			rc.send(encode("multi") + encode("get", a) + encode("get", b) + encode("exec"))
			for range 3 {
				rc.reply()
			}
			e := elements(t, rc.reply())
			if len(e) != 2 || e[0] != e[1] && e[0] != "$1\r\nx\r\n" {
				t.Errorf("EXEC of GET a, GET b = %q: a transaction's pair torn", e)
				return
			}
		}
	})
	wg.Wait()
}

// TestExecEveryCommand queues every command of the table (with keys on
// several shards and in a second database) and runs EXEC: each one runs
// inside EXEC's locks, which panics if a command reaches a shard or a
// database EXEC has not locked (a row's keys or dbArgs wrong).
func TestExecEveryCommand(t *testing.T) {
	srv, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	keys := []string{"k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8"}
	for _, cmd := range commandTable() {
		if c := commands[cmd.name]; c != nil && c.subs != nil || runsInMulti(&cmd) || cmd.flags&fNoMulti != 0 {
			continue
		}
		if strings.HasSuffix(cmd.name, "subscribe") {
			// A SUBSCRIBE would leave the RESP2 connection able to run
			// little else, an UNSUBSCRIBE is refused before: both are
			// in TestPubsubDifferential, inside MULTI too.
			continue
		}
		args := strings.Split(cmd.name, "|")
		for i := len(args); i < max(cmd.arity, -cmd.arity); i++ {
			args = append(args, keys[i%len(keys)])
		}
		switch cmd.name { // arguments that take it somewhere
		case "select", "move":
			args[len(args)-1] = "3"
		case "swapdb":
			args[1], args[2] = "0", "4"
		case "copy": // to a database not made yet, named late
			args = append(args, "replace", "replace", "db", "5")
		}
		rc.do("watch", keys[len(args)%len(keys)])
		rc.do("multi")
		if got := rc.do(args...); got != "+QUEUED\r\n" {
			t.Errorf("%q: %q, want QUEUED", args, got)
		}
		rc.do("set", keys[0], "v") // a second command, on another shard
		if got := rc.do("exec"); !strings.HasPrefix(got, "*2\r\n") {
			t.Errorf("EXEC of %q: %q", args, got)
		}
		rc.do("select", "0")
	}
	if ks := srv.dbs[3].Load(); ks == nil {
		t.Error("SELECT 3 queued did not make database 3")
	}
	if ks := srv.dbs[5].Load(); ks == nil {
		t.Error("COPY ... DB 5 queued did not make database 5")
	}
}

// valkeyClusterNode starts valkey-server as a cluster of one node that
// serves every slot, for the test tb, and returns its address.
func valkeyClusterNode(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	addr := testutil.StartValkey(tb, "--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--dir", dir)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	rc := newRawClient(tb, nc)
	tb.Cleanup(func() { nc.Close() })
	if got := rc.do("cluster", "addslotsrange", "0", "16383"); got != "+OK\r\n" {
		tb.Fatalf("CLUSTER ADDSLOTSRANGE: %q", got)
	}
	// A hang detector, not a measure: the state turns ok in milliseconds.
	for deadline := time.Now().Add(time.Minute); !strings.Contains(rc.do("cluster", "info"), "cluster_state:ok"); {
		if time.Now().After(deadline) {
			tb.Fatal("valkey-server's cluster did not come up in a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return addr
}

// TestClusterMultiMatchesValkey compares transactions on a cluster's node
// with valkey-server's as a cluster of one node: a queued command with
// keys of two slots is refused (and EXEC aborts), commands each of one
// slot but of two slots together make EXEC answer CROSSSLOT.
func TestClusterMultiMatchesValkey(t *testing.T) {
	theirs := valkeyClusterNode(t)
	ec := startCluster(t, 1)
	a, b := dialRaw(t, ec.addrs[0]), dialRaw(t, theirs)
	for _, seq := range [][][]string{
		{{"multi"}, {"set", "{a}1", "x"}, {"set", "{a}2", "y"}, {"get", "{a}1"}, {"exec"}},
		{{"multi"}, {"set", "a", "1"}, {"set", "b", "2"}, {"exec"}, {"get", "a"}},
		{{"multi"}, {"mset", "a", "1", "b", "2"}, {"set", "a", "3"}, {"exec"}, {"get", "a"}},
		{{"multi"}, {"ping"}, {"dbsize"}, {"exec"}},
		{{"multi"}, {"select", "1"}, {"set", "c", "1"}, {"exec"}},
		{{"watch", "a", "b"}, {"multi"}, {"exec"}},
		{{"watch", "a"}, {"multi"}, {"set", "b", "1"}, {"exec"}},
		{{"watch", "a"}, {"set", "a", "2"}, {"multi"}, {"set", "a", "1"}, {"set", "b", "1"}, {"exec"}},
		{{"multi"}, {"get", "a"}, {"get", "b"}, {"discard"}},
	} {
		a.do("flushall")
		b.do("flushall")
		for _, cmd := range seq {
			if got, want := a.do(cmd...), b.do(cmd...); got != want {
				t.Errorf("%q, %q: ours %q, valkey-server %q", seq, cmd, got, want)
			}
		}
	}
}

// TestClusterMultiMoved: a queued command on another node's slot is
// answered MOVED and the transaction aborts, as valkey's processCommand
// does; the whole transaction is routed at EXEC.
func TestClusterMultiMoved(t *testing.T) {
	ec := startCluster(t, 2)
	rc := dialRaw(t, ec.addrs[0])
	own, other := keyIn(0), keyIn(NumSlots-1)
	rc.do("multi")
	if got := rc.do("set", own, "1"); got != "+QUEUED\r\n" {
		t.Fatalf("SET on its own slot in MULTI: %q", got)
	}
	if got := rc.do("set", other, "1"); !strings.HasPrefix(got, "-MOVED "+strconv.Itoa(NumSlots-1)+" "+ec.addrs[1]) {
		t.Errorf("SET on another node's slot in MULTI: %q", got)
	}
	if got := rc.do("exec"); got != "-EXECABORT Transaction discarded because of previous errors.\r\n" {
		t.Errorf("EXEC: %q", got)
	}
	if got := rc.do("exists", own); got != ":0\r\n" {
		t.Errorf("after EXECABORT, EXISTS %s = %q", own, got)
	}
}
