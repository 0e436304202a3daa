package server

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDatabases: SELECT picks a database of its own for each connection;
// DBSIZE, FLUSHDB, EXPIRE and active expiry are per database, FLUSHALL
// empties them all; HELLO keeps the database; the errors are valkey's.
func TestDatabases(t *testing.T) {
	_, addr := startServer(t, nil)
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"select", "abc"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"select", "01"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"select", "4294967296"}, "-ERR value is out of range, value must between -2147483648 and 2147483647\r\n"},
		{[]string{"select", "-1"}, "-ERR DB index is out of range\r\n"},
		{[]string{"select", "16"}, "-ERR DB index is out of range\r\n"},
		{[]string{"config", "get", "databases"}, "*2\r\n$9\r\ndatabases\r\n$2\r\n16\r\n"},
		{[]string{"set", "k", "zero"}, "+OK\r\n"},
		{[]string{"select", "15"}, "+OK\r\n"},
		{[]string{"get", "k"}, "$-1\r\n"},
		{[]string{"dbsize"}, ":0\r\n"},
		{[]string{"set", "k", "fifteen"}, "+OK\r\n"},
		{[]string{"set", "short", "v", "px", "1"}, "+OK\r\n"},
		{[]string{"rpush", "l", "a", "b"}, ":2\r\n"},
		{[]string{"expire", "l", "1000"}, ":1\r\n"},
		{[]string{"hello", "3"}, ""}, // checked below
		{[]string{"get", "k"}, "$7\r\nfifteen\r\n"},
		{[]string{"ttl", "l"}, ":1000\r\n"},
	} {
		got := a.do(tc.args...)
		if tc.want != "" && got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
		}
	}
	if got := a.do("client", "info"); !strings.Contains(got, " db=15 ") {
		t.Errorf("CLIENT INFO in db 15: %q", got)
	}
	b.expectReply(t, []string{"get", "k"}, "$4\r\nzero\r\n")
	b.expectReply(t, []string{"ttl", "l"}, ":-2\r\n")
	deadline := time.Now().Add(time.Minute)
	for a.do("dbsize") != ":2\r\n" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	a.expectReply(t, []string{"dbsize"}, ":2\r\n") // short expired on its own
	if got := b.do("info", "keyspace"); !strings.Contains(got, "db0:keys=1,expires=0") || !strings.Contains(got, "db15:keys=2,expires=1") {
		t.Errorf("INFO keyspace: %q", got)
	}
	a.expectReply(t, []string{"flushdb"}, "+OK\r\n")
	a.expectReply(t, []string{"dbsize"}, ":0\r\n")
	b.expectReply(t, []string{"dbsize"}, ":1\r\n")
	a.expectReply(t, []string{"set", "k", "fifteen"}, "+OK\r\n")
	b.expectReply(t, []string{"flushall"}, "+OK\r\n")
	a.expectReply(t, []string{"dbsize"}, ":0\r\n")
	b.expectReply(t, []string{"dbsize"}, ":0\r\n")
}

// TestMoveSwapDB: MOVE takes a key and its expiry to another database
// unless the name is taken there; SWAPDB swaps two databases under the
// connections that use them.
func TestMoveSwapDB(t *testing.T) {
	_, addr := startServer(t, nil)
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	b.expectReply(t, []string{"select", "2"}, "+OK\r\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"move", "k", "abc"}, "-ERR value is not an integer or out of range\r\n"},
		{[]string{"move", "k", "16"}, "-ERR DB index is out of range\r\n"},
		{[]string{"move", "k", "0"}, "-ERR source and destination objects are the same\r\n"},
		{[]string{"move", "k", "2"}, ":0\r\n"},
		{[]string{"set", "k", "v", "ex", "1000"}, "+OK\r\n"},
		{[]string{"move", "k", "2"}, ":1\r\n"},
		{[]string{"exists", "k"}, ":0\r\n"},
		{[]string{"set", "k", "again"}, "+OK\r\n"},
		{[]string{"move", "k", "2"}, ":0\r\n"}, // taken there
		{[]string{"get", "k"}, "$5\r\nagain\r\n"},
		{[]string{"swapdb", "a", "b"}, "-ERR invalid first DB index\r\n"},
		{[]string{"swapdb", "99", "b"}, "-ERR invalid second DB index\r\n"},
		{[]string{"swapdb", "0", "99"}, "-ERR DB index is out of range\r\n"},
		{[]string{"swapdb", "0", "0"}, "+OK\r\n"},
		{[]string{"swapdb", "2", "0"}, "+OK\r\n"},
		{[]string{"get", "k"}, "$1\r\nv\r\n"},
		{[]string{"ttl", "k"}, ":1000\r\n"},
	} {
		if got := a.do(tc.args...); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
		}
	}
	b.expectReply(t, []string{"get", "k"}, "$5\r\nagain\r\n")

	// MOVEs both ways at once, on keys of the same shards: no deadlock.
	var wg sync.WaitGroup
	for i, db := range []string{"2", "0"} {
		c := dialRaw(t, addr)
		c.expectReply(t, []string{"select", strconv.Itoa(2 - 2*i)}, "+OK\r\n")
		wg.Go(func() {
			for j := range 2000 {
				c.do("set", "m"+strconv.Itoa(j%50), "v")
				c.do("move", "m"+strconv.Itoa(j%50), db)
			}
		})
	}
	wg.Wait()
}

// TestDatabasesOption: Options.Databases sets the count; a Cluster's node
// refuses SELECT of any database but 0, and MOVE and SWAPDB, as valkey's.
func TestDatabasesOption(t *testing.T) {
	_, addr := startServer(t, &Options{Databases: 3})
	rc := dialRaw(t, addr)
	rc.expectReply(t, []string{"select", "2"}, "+OK\r\n")
	rc.expectReply(t, []string{"select", "3"}, "-ERR DB index is out of range\r\n")
	rc.expectReply(t, []string{"config", "get", "databases"}, "*2\r\n$9\r\ndatabases\r\n$1\r\n3\r\n")

	ec := startCluster(t, 1)
	cc := dialRaw(t, ec.addrs[0])
	cc.expectReply(t, []string{"select", "0"}, "+OK\r\n")
	cc.expectReply(t, []string{"select", "1"}, "-ERR SELECT is not allowed in cluster mode\r\n")
	cc.expectReply(t, []string{"select", "x"}, "-ERR value is not an integer or out of range\r\n")
	cc.expectReply(t, []string{"move", "k", "1"}, "-ERR MOVE is not allowed in cluster mode\r\n")
	cc.expectReply(t, []string{"swapdb", "0", "1"}, "-ERR SWAPDB is not allowed in cluster mode\r\n")
}

// TestScan: a SCAN from cursor 0 to 0 returns each key of the database
// once, with MATCH and TYPE applied; KEYS the same at once.
func TestScan(t *testing.T) {
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	rc.expectReply(t, []string{"set", "other", "db0"}, "+OK\r\n")
	rc.expectReply(t, []string{"select", "1"}, "+OK\r\n")
	const n = 5000
	var b strings.Builder
	for i := range n {
		b.WriteString(encode("set", "k"+strconv.Itoa(i), "v"))
	}
	b.WriteString(encode("rpush", "list", "x"))
	rc.send(b.String())
	for range n {
		rc.expect("+OK\r\n")
	}
	rc.expect(":1\r\n")
	scan := func(extra ...string) map[string]int {
		seen := map[string]int{}
		cursor := "0"
		for calls := 0; ; calls++ {
			if calls > n {
				t.Fatal("SCAN does not end")
			}
			// No key here holds CR or LF: the reply splits into lines.
			lines := strings.Split(rc.do(append([]string{"scan", cursor, "count", "10"}, extra...)...), "\r\n")
			if len(lines) < 5 || lines[0] != "*2" || !strings.HasPrefix(lines[3], "*") {
				t.Fatalf("SCAN: %q", lines)
			}
			cursor = lines[2]
			for i := 5; i < len(lines); i += 2 {
				seen[lines[i]]++
			}
			if cursor == "0" {
				return seen
			}
		}
	}
	seen := scan()
	if len(seen) != n+1 || seen["other"] != 0 || seen["list"] != 1 {
		t.Errorf("SCAN returned %d keys (other %d, list %d), want %d", len(seen), seen["other"], seen["list"], n+1)
	}
	for k, c := range seen {
		if c != 1 {
			t.Errorf("SCAN returned %q %d times", k, c)
		}
	}
	if seen := scan("match", "k1?", "type", "string"); len(seen) != 10 {
		t.Errorf("SCAN MATCH k1? TYPE string: %d keys, want 10", len(seen))
	}
	if seen := scan("type", "list"); len(seen) != 1 || seen["list"] != 1 {
		t.Errorf("SCAN TYPE list: %v", seen)
	}
	if got := rc.do("keys", "k12?"); !strings.HasPrefix(got, "*10\r\n") {
		t.Errorf("KEYS k12?: %q", got)
	}
	if got := rc.do("keys", "list"); got != "*1\r\n$4\r\nlist\r\n" {
		t.Errorf("KEYS list: %q", got)
	}
	// A pattern of many stars on a long key that does not match ends at
	// once (valkey's early stop), rather than trying every split.
	long := strings.Repeat("a", 10000)
	rc.expectReply(t, []string{"set", long, "v"}, "+OK\r\n")
	// Without the early stop this would try some 2^30 splits: the test
	// would not end, and the test binary's timeout would name it.
	rc.expectReply(t, []string{"keys", strings.Repeat("*a", 30) + "b"}, "*0\r\n")
}
