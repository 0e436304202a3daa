package server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// pubsubScript is run by TestPubsubDifferential: each step is a command on
// one of three connections (0 and 1 mostly subscribe, 2 publishes).
var pubsubScript = []scriptStep{
	{0, []string{"subscribe", "news", "sports"}},
	{1, []string{"psubscribe", "n*"}},
	{2, []string{"publish", "news", "hello"}},
	{2, []string{"publish", "sports", "goal"}},
	{2, []string{"publish", "nothing", "at all"}},
	{0, []string{"get", "k"}},
	{0, []string{"ping"}},
	{0, []string{"ping", "arg"}},
	{0, []string{"subscribe"}},
	{2, []string{"publish", "news"}},
	{2, []string{"pubsub", "numsub", "news", "sports", "none"}},
	{2, []string{"pubsub", "numsub"}},
	{2, []string{"pubsub", "numpat"}},
	{2, []string{"pubsub", "channels", "s*"}},
	{2, []string{"pubsub", "channels", "x*"}},
	{2, []string{"pubsub", "nosuch"}},
	{0, []string{"unsubscribe", "news", "never"}},
	{2, []string{"publish", "news", "again"}},
	{0, []string{"ssubscribe", "sh1"}},
	{0, []string{"ssubscribe", "sh2"}},
	{2, []string{"spublish", "sh1", "shard message"}},
	{2, []string{"spublish", "sh3", "nobody"}},
	{2, []string{"pubsub", "shardchannels", "sh1"}},
	{2, []string{"pubsub", "shardnumsub", "sh1", "sh3"}},
	{0, []string{"sunsubscribe", "sh1"}},
	{0, []string{"sunsubscribe", "sh2"}},
	{0, []string{"sunsubscribe"}},
	{0, []string{"unsubscribe"}},
	{0, []string{"unsubscribe"}},
	{0, []string{"punsubscribe"}},
	{0, []string{"get", "k"}},
	{0, []string{"multi"}},
	{0, []string{"unsubscribe"}},
	{0, []string{"exec"}},
	{1, []string{"punsubscribe", "n*"}},
	{1, []string{"subscribe", "a"}},
	{1, []string{"reset"}},
	{2, []string{"publish", "a", "after reset"}},
	{1, []string{"ping"}},
	{1, []string{"multi"}},
	{1, []string{"set", "k", "in a transaction"}},
	{1, []string{"reset"}},
	{1, []string{"exec"}},
	{1, []string{"get", "k"}},
	{1, []string{"multi"}},
	{1, []string{"subscribe", "q"}},
	{1, []string{"get", "k"}},
	{1, []string{"exec"}},
	{2, []string{"publish", "q", "to a transaction's subscriber"}},
	{1, []string{"unsubscribe", "q"}},
	{0, []string{"subscribe", "h"}},
	{0, []string{"hello", "3"}},
	{2, []string{"publish", "h", "after hello 3"}},
	{0, []string{"hello", "2"}},
	{2, []string{"publish", "h", "after hello 2"}},
	{0, []string{"unsubscribe", "h"}},
	{2, []string{"flushall"}},
	{2, []string{"set", "k", "v"}},
	{2, []string{"pubsub", "numpat"}},
}

// scriptStep is a command on one of three connections.
type scriptStep struct {
	conn int
	args []string
}

// TestPubsubDifferential runs pubsubScript against valkey-server and ours,
// in RESP2 and RESP3, and compares the bytes each connection receives.
func TestPubsubDifferential(t *testing.T) {
	theirs := testutil.ValkeyServer(t)
	_, ours := startServer(t, nil)
	for _, proto := range []string{"2", "3"} {
		compareScript(t, ours, theirs, [3]string{proto, proto, proto}, pubsubScript)
	}
	// The limit's defaults are valkey's.
	cfg := []string{"config", "get", "client-output-buffer-limit"}
	if got, want := dialRaw(t, ours).do(cfg...), dialRaw(t, theirs).do(cfg...); got != want {
		t.Errorf("%q: %s", cfg, diff(got, want))
	}
}

// compareScript runs script on three connections to ours and to theirs,
// speaking protos, and compares the bytes each connection receives. After
// each step the connection that sent it PINGs and reads up to the PING's
// reply, so every step has ended, and every message or invalidation it
// caused has been delivered, before the next. An argument "$ID2" is
// connection 2's client ID.
func compareScript(t *testing.T, ours, theirs string, protos [3]string, script []scriptStep) {
	t.Helper()
	var streams [2][3]bytes.Buffer
	for s, addr := range []string{ours, theirs} {
		var rcs [3]*rawClient
		for i := range rcs {
			rcs[i] = dialRaw(t, addr)
			rcs[i].do("hello", protos[i]) // not compared: the servers differ
		}
		id2 := strings.TrimSuffix(strings.TrimPrefix(rcs[2].do("client", "id"), ":"), "\r\n")
		rcs[2].do("flushall")
		var multi [3]bool
		for _, st := range script {
			rc := rcs[st.conn]
			args := slices.Clone(st.args)
			for i, a := range args {
				if a == "$ID2" {
					args[i] = id2
				}
			}
			switch args[0] {
			case "multi":
				multi[st.conn] = true
			case "exec", "reset":
				multi[st.conn] = false
			}
			if args[0] == "hello" {
				// Its reply is not compared (ids, versions), but in the
				// subscribed RESP2 state its error is. The messages
				// before it are read first.
				rc.send(encode("ping", "sync-token") + encode(args...) + encode("ping", "sync-token"))
				readToSync(t, rc, &streams[s][st.conn])
				if r := rc.reply(); r[0] == '-' {
					streams[s][st.conn].WriteString(r)
				}
				readToSync(t, rc, &streams[s][st.conn])
				continue
			}
			if multi[st.conn] {
				// A PING would be queued: one reply, QUEUED or OK.
				streams[s][st.conn].WriteString(rc.do(args...))
				continue
			}
			rc.send(encode(args...) + encode("ping", "sync-token"))
			readToSync(t, rc, &streams[s][st.conn])
		}
		// What each received last, after the last step.
		for i := range 3 {
			rcs[i].send(encode("ping", "sync-token"))
			readToSync(t, rcs[i], &streams[s][i])
		}
	}
	for i := range 3 {
		if got, want := streams[0][i].String(), streams[1][i].String(); got != want {
			t.Errorf("RESP%s connection %d:\n%s", protos[i], i, diff(got, want))
		}
	}
}

// readToSync reads replies into w up to and with the reply to PING
// sync-token, in either protocol and state.
func readToSync(tb testing.TB, rc *rawClient, w *bytes.Buffer) {
	tb.Helper()
	for {
		r := rc.reply()
		w.WriteString(r)
		if strings.Contains(r, "sync-token") {
			return
		}
	}
}

// TestPubsubGoRedis subscribes with go-redis, to channels, patterns and
// shard channels, and reads the messages from its Channel.
func TestPubsubGoRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	ctx := context.Background()
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprint("RESP", proto), func(t *testing.T) {
			// Names of this protocol's own: the other subtest's
			// subscriber may not have been closed on the server yet.
			c1, pat, px, sch := fmt.Sprint("c1.", proto), fmt.Sprint("p", proto, ".*"), fmt.Sprint("p", proto, ".x"), fmt.Sprintf("{s}%d", proto)
			cl := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto})
			defer cl.Close()
			ps := cl.Subscribe(ctx, c1)
			defer ps.Close()
			if err := ps.PSubscribe(ctx, pat); err != nil {
				t.Fatal(err)
			}
			// Receive the two confirmations before publishing.
			for range 2 {
				if _, err := ps.Receive(ctx); err != nil {
					t.Fatal(err)
				}
			}
			ch := ps.Channel()
			if n := cl.Publish(ctx, c1, "m1").Val(); n != 1 {
				t.Errorf("PUBLISH c1 reached %d, want 1", n)
			}
			if n := cl.Publish(ctx, px, "m2").Val(); n != 1 {
				t.Errorf("PUBLISH p.x reached %d, want 1", n)
			}
			for _, want := range []redis.Message{{Channel: c1, Payload: "m1"}, {Channel: px, Pattern: pat, Payload: "m2"}} {
				m := <-ch
				if m.Channel != want.Channel || m.Pattern != want.Pattern || m.Payload != want.Payload {
					t.Errorf("message %+v, want %+v", *m, want)
				}
			}

			ss := cl.SSubscribe(ctx, sch)
			defer ss.Close()
			if _, err := ss.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			if n := cl.SPublish(ctx, sch, "m3").Val(); n != 1 {
				t.Errorf("SPUBLISH reached %d, want 1", n)
			}
			if m := <-ss.Channel(); m.Channel != sch || m.Payload != "m3" {
				t.Errorf("shard message %+v", *m)
			}
			if n := cl.PubSubNumSub(ctx, c1).Val()[c1]; n != 1 {
				t.Errorf("NUMSUB c1 = %d, want 1", n)
			}
		})
	}
}

// TestPubsubManyPublishers publishes from several connections at once to
// subscribers on both engines' connections; each subscriber gets every
// message, and each publisher's in its order.
func TestPubsubManyPublishers(t *testing.T) {
	_, addr := startServer(t, nil)
	const pubs, each = 4, 500
	subs := make([]*rawClient, 3)
	for i := range subs {
		subs[i] = dialRaw(t, addr)
		subs[i].send(encode("subscribe", "ch"))
		subs[i].reply()
	}
	done := make(chan error, pubs)
	for p := range pubs {
		go func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				done <- err
				return
			}
			defer c.Close()
			r := bufio.NewReader(c)
			for i := range each {
				var b bytes.Buffer
				if _, err := io.WriteString(c, encode("publish", "ch", fmt.Sprintf("%d:%d", p, i))); err != nil {
					done <- err
					return
				}
				if err := readReply(r, &b); err != nil || b.String() != ":3\r\n" {
					done <- fmt.Errorf("PUBLISH replied %q, %v", b.String(), err)
					return
				}
			}
			done <- nil
		}()
	}
	for range pubs {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for s, rc := range subs {
		next := make([]int, pubs)
		for range pubs * each {
			var p, i int
			el := elements(t, rc.reply())
			if _, err := fmt.Sscanf(el[2], "$%d\r\n%d:%d", new(int), &p, &i); err != nil || i != next[p] {
				t.Fatalf("subscriber %d: message %q, want %d:%d", s, el[2], p, next[p])
			}
			next[p]++
		}
	}
}

// TestPubsubSlowSubscriber: a subscriber that never reads is closed once
// its unread output passes the limit, and PUBLISH goes on replying.
func TestPubsubSlowSubscriber(t *testing.T) {
	srv, addr := startServer(t, &Options{PubsubLimit: OutputLimit{Hard: 1 << 20, Soft: -1}})
	slow := dialRaw(t, addr)
	slow.send(encode("subscribe", "ch"))
	slow.reply() // and never read again
	pub := dialRaw(t, addr)
	msg := strings.Repeat("x", 64<<10)
	// The kernel's buffers take a few MiB before the server's output
	// grows: 256 MiB is far more than both.
	const n = 4096
	reached, completed := 0, 0
	for range n {
		r := pub.do("publish", "ch", msg)
		completed++
		if r == ":1\r\n" {
			reached++
		} else if r != ":0\r\n" {
			t.Fatalf("PUBLISH replied %q", r)
		}
		if r == ":0\r\n" {
			break // the subscriber is gone
		}
	}
	if completed != reached+1 {
		t.Fatalf("%d PUBLISHes completed, all %d reached the subscriber: it was never closed", completed, reached)
	}
	if st := srv.Stats(); st.OutputLimitClosed != 1 {
		t.Errorf("OutputLimitClosed = %d, want 1", st.OutputLimitClosed)
	}
	// The subscriber's connection ends: it reads what the kernel had, then
	// EOF or a reset.
	slow.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1<<20)
	for {
		if _, err := slow.c.Read(buf); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatal("the subscriber's connection is still open")
			}
			break
		}
	}
	if r := pub.do("pubsub", "numsub", "ch"); r != "*2\r\n$2\r\nch\r\n:0\r\n" {
		t.Errorf("NUMSUB after the close: %q", r)
	}
}

// TestPubsubCluster: a shard channel is served by the node of its slot
// (MOVED elsewhere, CROSSSLOT for channels of two slots), and a PUBLISH on
// any node reaches the subscribers of every node, as valkey's cluster bus
// carries it.
func TestPubsubCluster(t *testing.T) {
	ec := startCluster(t, 2)
	a, b := dialRaw(t, ec.addrs[0]), dialRaw(t, ec.addrs[1])
	ch0, ch1 := keyIn(0), keyIn(1)
	b.send(encode("ssubscribe", ch0))
	b.expect("-MOVED 0 " + ec.addrs[0] + "\r\n")
	a.send(encode("ssubscribe", ch0, ch1))
	a.expect("-" + msgCrossSlot + "\r\n")
	a.send(encode("ssubscribe", ch0))
	a.expect(fmt.Sprintf("*3\r\n$10\r\nssubscribe\r\n$%d\r\n%s\r\n:1\r\n", len(ch0), ch0))
	if r := b.do("spublish", ch0, "m"); r != "-MOVED 0 "+ec.addrs[0]+"\r\n" {
		t.Errorf("SPUBLISH on the other node: %q", r)
	}
	pub := dialRaw(t, ec.addrs[0])
	if r := pub.do("spublish", ch0, "m"); r != ":1\r\n" {
		t.Errorf("SPUBLISH: %q", r)
	}
	a.expect(fmt.Sprintf("*3\r\n$8\r\nsmessage\r\n$%d\r\n%s\r\n$1\r\nm\r\n", len(ch0), ch0))

	a2 := dialRaw(t, ec.addrs[0])
	a2.send(encode("subscribe", "news"))
	a2.reply()
	if r := b.do("publish", "news", "n"); r != ":1\r\n" {
		t.Errorf("PUBLISH on the other node: %q", r)
	}
	a2.expect("*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$1\r\nn\r\n")
}
