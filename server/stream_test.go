package server

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// TestStreamGroupLife follows a consumer group through its life: created,
// read with ">" by two consumers, its PEL summed up and listed, a
// consumer's history read again, entries claimed, an entry deleted from
// under the PEL and autoclaimed, acknowledged, a consumer deleted with
// entries pending, the group destroyed. Each reply is checked where it
// says something the test means, and all are compared with valkey-server's
// (idle and delivery times by form), in RESP2 and RESP3.
func TestStreamGroupLife(t *testing.T) {
	_, ours := startServer(t, nil)
	theirs := testutil.ValkeyServer(t)
	for _, proto := range []string{"2", "3"} {
		a, b := dialRaw(t, ours), dialRaw(t, theirs)
		for _, rc := range []*rawClient{a, b} {
			rc.do("hello", proto)
			rc.do("flushall")
		}
		null := "*-1\r\n"
		if proto == "3" {
			null = "_\r\n"
		}
		step := func(want string, args ...string) string {
			t.Helper()
			got, theirs := a.do(args...), b.do(args...)
			if !sameReply(args, got, theirs) {
				t.Errorf("RESP%s %q: ours %q, valkey-server %q", proto, args, got, theirs)
			}
			if want != "" && !strings.Contains(got, want) {
				t.Errorf("RESP%s %q: %q does not hold %q", proto, args, got, want)
			}
			return got
		}
		step("+OK", "xgroup", "create", "s", "g", "0", "mkstream")
		step("-BUSYGROUP", "xgroup", "create", "s", "g", "$")
		for _, id := range []string{"1-1", "2-1", "3-1"} {
			step(id, "xadd", "s", id, "f", "v"+id)
		}
		step("$3\r\n1-1\r\n", "xreadgroup", "group", "g", "alice", "count", "2", "streams", "s", ">")
		step("$3\r\n3-1\r\n", "xreadgroup", "group", "g", "bob", "streams", "s", ">")
		step(null, "xreadgroup", "group", "g", "bob", "streams", "s", ">") // nothing new
		step(":3\r\n$3\r\n1-1\r\n$3\r\n3-1\r\n*2\r\n*2\r\n$5\r\nalice\r\n$1\r\n2\r\n*2\r\n$3\r\nbob\r\n$1\r\n1\r\n",
			"xpending", "s", "g")
		step("*2\r\n", "xpending", "s", "g", "-", "+", "10", "alice")
		// alice's history: delivered once more.
		step("$4\r\nv2-1\r\n", "xreadgroup", "group", "g", "alice", "streams", "s", "0")
		step(":2\r\n", "xpending", "s", "g", "-", "(2-1", "10") // 1-1, delivered twice
		step("$3\r\n1-1\r\n", "xclaim", "s", "g", "bob", "0", "1-1", "justid")
		step("*0\r\n", "xclaim", "s", "g", "bob", "3600000", "2-1") // not idle for so long
		step(":1\r\n", "xdel", "s", "2-1")
		// carol takes all: 2-1 is gone, and leaves the PEL.
		step("*3\r\n$3\r\n0-0\r\n*2\r\n*2\r\n$3\r\n1-1\r\n", "xautoclaim", "s", "g", "carol", "0", "0")
		step("*1\r\n*2\r\n$5\r\ncarol\r\n$1\r\n2\r\n", "xpending", "s", "g")
		step(":2\r\n", "xack", "s", "g", "1-1", "3-1", "9-9")
		step(":0\r\n", "xpending", "s", "g")
		step("entries-read", "xinfo", "groups", "s")
		step("", "xinfo", "consumers", "s", "g")
		step("4-1", "xadd", "s", "4-1", "f", "v")
		step("$3\r\n4-1\r\n", "xreadgroup", "group", "g", "dave", "streams", "s", ">")
		step(":1\r\n", "xgroup", "delconsumer", "s", "g", "dave") // one pending, gone with it
		step(":0\r\n", "xpending", "s", "g")
		step("", "xinfo", "stream", "s", "full")
		step(":1\r\n", "xgroup", "destroy", "s", "g")
		step("-NOGROUP", "xreadgroup", "group", "g", "alice", "streams", "s", ">")
	}
}

// TestStreamBlockInMulti: inside MULTI a BLOCK never waits, as in valkey:
// with nothing to read XREAD and XREADGROUP reply with a null at once;
// with entries they are served.
func TestStreamBlockInMulti(t *testing.T) {
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	rc.do("xgroup", "create", "s", "g", "$", "mkstream")
	rc.do("multi")
	rc.do("xread", "block", "0", "streams", "s", "$")
	rc.do("xreadgroup", "group", "g", "c", "block", "0", "streams", "s", ">")
	rc.do("xadd", "s", "1-1", "f", "v")
	rc.do("xread", "block", "0", "streams", "s", "0")
	got := rc.do("exec")
	want := "*4\r\n*-1\r\n*-1\r\n$3\r\n1-1\r\n*1\r\n*2\r\n$1\r\ns\r\n*1\r\n*2\r\n$3\r\n1-1\r\n*2\r\n$1\r\nf\r\n$1\r\nv\r\n"
	if got != want {
		t.Errorf("EXEC: %q, want %q", got, want)
	}
}

// TestStreamKeys: XREAD's and XREADGROUP's keys follow STREAMS, for
// COMMAND GETKEYS and so for EXEC's locks and cluster routing.
func TestStreamKeys(t *testing.T) {
	_, ours := startServer(t, nil)
	theirs := testutil.ValkeyServer(t)
	a, b := dialRaw(t, ours), dialRaw(t, theirs)
	for _, args := range [][]string{
		{"command", "getkeys", "xread", "count", "1", "streams", "a", "b", "0", "0"},
		{"command", "getkeys", "xread", "STREAMS", "a", "0"},
		{"command", "getkeys", "xreadgroup", "group", "streams", "c", "streams", "a", "0"},
		{"command", "getkeysandflags", "xreadgroup", "group", "g", "c", "block", "1", "streams", "a", "b", ">", ">"},
		{"command", "getkeys", "xread", "streams", "a", "b", "0"},
		{"command", "getkeys", "xinfo", "stream", "s"},
		{"command", "getkeys", "xgroup", "create", "s", "g", "$"},
	} {
		if got, want := a.do(args...), b.do(args...); got != want {
			t.Errorf("%q: ours %q, valkey-server %q", args, got, want)
		}
	}
}

// TestStreamGoRedis runs a consumer group with go-redis: XGroupCreate,
// XAdd, XReadGroup, XPending (both forms), XAutoClaim, XAck.
func TestStreamGoRedis(t *testing.T) {
	for _, protocol := range []int{2, 3} {
		t.Run(fmt.Sprint("RESP", protocol), func(t *testing.T) {
			_, addr := startServer(t, nil)
			ctx := ctxT(t)
			c := goRedis(t, addr, protocol)
			check := func(what string, got, want any) {
				t.Helper()
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s: got %v, want %v", what, got, want)
				}
			}
			check("xgroup create", c.XGroupCreateMkStream(ctx, "jobs", "workers", "$").Val(), "OK")
			for i := 1; i <= 3; i++ {
				id := fmt.Sprintf("%d-0", i)
				check("xadd", c.XAdd(ctx, &redis.XAddArgs{Stream: "jobs", ID: id, Values: []string{"n", fmt.Sprint(i)}}).Val(), id)
			}
			streams, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "workers", Consumer: "w1",
				Streams: []string{"jobs", ">"}, Count: 2, Block: -1}).Result()
			if err != nil || len(streams) != 1 || len(streams[0].Messages) != 2 {
				t.Fatalf("xreadgroup: %v, %v", streams, err)
			}
			check("xreadgroup message", streams[0].Messages[1], redis.XMessage{ID: "2-0", Values: map[string]any{"n": "2"}})
			_, err = c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "workers", Consumer: "w2",
				Streams: []string{"jobs", ">"}, Block: -1}).Result()
			check("xreadgroup w2", err, nil)
			pending := c.XPending(ctx, "jobs", "workers").Val()
			check("xpending", []any{pending.Count, pending.Lower, pending.Higher, pending.Consumers}, []any{3, "1-0", "3-0", map[string]int64{"w1": 2, "w2": 1}})
			ext := c.XPendingExt(ctx, &redis.XPendingExtArgs{Stream: "jobs", Group: "workers", Start: "-", End: "+", Count: 10, Consumer: "w1"}).Val()
			if len(ext) != 2 || ext[0].ID != "1-0" || ext[0].Consumer != "w1" || ext[0].RetryCount != 1 || ext[0].Idle < 0 {
				t.Errorf("xpending ext: %+v", ext)
			}
			msgs, start, err := c.XAutoClaim(ctx, &redis.XAutoClaimArgs{Stream: "jobs", Group: "workers", Consumer: "w3", MinIdle: 0, Start: "0", Count: 2}).Result()
			check("xautoclaim", []any{len(msgs), start, err}, []any{2, "3-0", nil})
			ids, _, err := c.XAutoClaimJustID(ctx, &redis.XAutoClaimArgs{Stream: "jobs", Group: "workers", Consumer: "w3", MinIdle: time.Hour, Start: "0"}).Result()
			check("xautoclaim idle", []any{ids, err}, []any{[]string{}, nil})
			check("xack", c.XAck(ctx, "jobs", "workers", "1-0", "2-0", "3-0").Val(), 3)
			check("xpending after", c.XPending(ctx, "jobs", "workers").Val().Count, 0)
			groups := c.XInfoGroups(ctx, "jobs").Val()
			if len(groups) != 1 || groups[0].Consumers != 3 || groups[0].LastDeliveredID != "3-0" || groups[0].EntriesRead != 3 || groups[0].Lag != 0 {
				t.Errorf("xinfo groups: %+v", groups)
			}
			info := c.XInfoStream(ctx, "jobs").Val()
			if info.Length != 3 || info.EntriesAdded != 3 || info.Groups != 1 || info.LastEntry.ID != "3-0" {
				t.Errorf("xinfo stream: %+v", info)
			}
		})
	}
}

// TestStreamGroupConcurrent: consumers of one group on connections of
// their own read with ">" and acknowledge while a producer adds entries
// to the stream: every entry is delivered to exactly one consumer, and
// the PEL ends empty.
func TestStreamGroupConcurrent(t *testing.T) {
	_, addr := startServer(t, nil)
	ctx := ctxT(t)
	const entries, consumers = 300, 4
	admin := goRedis(t, addr, 3)
	if err := admin.XGroupCreateMkStream(ctx, "q", "g", "0").Err(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		p := goRedis(t, addr, 2)
		for i := 1; i <= entries; i++ {
			if err := p.XAdd(ctx, &redis.XAddArgs{Stream: "q", ID: fmt.Sprintf("%d-1", i), Values: []string{"n", fmt.Sprint(i)}}).Err(); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	seen := make(chan string, entries*2)
	for w := range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := goRedis(t, addr, 2+w%2)
			name := fmt.Sprint("c", w)
			for {
				n, err := c.XInfoStream(ctx, "q").Result()
				done := err == nil && n.EntriesAdded == entries
				streams, err := c.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: name,
					Streams: []string{"q", ">"}, Count: 7, Block: -1}).Result()
				if err == redis.Nil {
					if done {
						return
					}
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				for _, m := range streams[0].Messages {
					seen <- m.ID
					if err := c.XAck(ctx, "q", "g", m.ID).Err(); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(seen)
	count := map[string]int{}
	for id := range seen {
		count[id]++
	}
	for id, n := range count {
		if n != 1 {
			t.Errorf("%s delivered %d times", id, n)
		}
	}
	if len(count) != entries {
		t.Errorf("%d entries delivered, want %d", len(count), entries)
	}
	if p := admin.XPending(ctx, "q", "g").Val(); p.Count != 0 {
		t.Errorf("pending at the end: %+v", p)
	}
}

// TestStreamWatch: which stream commands of another client make a
// WATCHing EXEC fail, as in valkey-server: those that change entries;
// not XSETID nor the consumer group commands, which valkey does not
// signal.
func TestStreamWatch(t *testing.T) {
	_, ours := startServer(t, nil)
	theirs := testutil.ValkeyServer(t)
	for _, addr := range []string{ours, theirs} {
		a, b := dialRaw(t, addr), dialRaw(t, addr)
		a.do("del", "ws")
		a.do("xadd", "ws", "1-1", "f", "v")
		a.do("xgroup", "create", "ws", "g", "0")
		for _, tc := range []struct {
			cmd     []string
			aborted bool
		}{
			{[]string{"xsetid", "ws", "5-0"}, false},
			{[]string{"xreadgroup", "group", "g", "c", "streams", "ws", ">"}, false},
			{[]string{"xack", "ws", "g", "1-1"}, false},
			{[]string{"xgroup", "createconsumer", "ws", "g", "z"}, false},
			{[]string{"xgroup", "create", "ws", "g2", "0"}, false},
			{[]string{"xadd", "ws", "6-1", "f", "v"}, true},
			{[]string{"xdel", "ws", "6-1"}, true},
			{[]string{"xtrim", "ws", "maxlen", "0"}, true},
		} {
			a.do("watch", "ws")
			a.do("multi")
			a.do("ping")
			b.do(tc.cmd...)
			if got := a.do("exec") == "*-1\r\n"; got != tc.aborted {
				t.Errorf("%s: WATCH, then another client's %q: EXEC aborted %v, want %v", addr, tc.cmd, got, tc.aborted)
			}
		}
	}
}
