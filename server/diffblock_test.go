package server

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// The differential test's blocking commands and pub/sub (issue 35 item
// 4): random sequences of several clients on each server, compared with
// valkey-server's, in RESP2 and RESP3. A step never depends on how long
// anything takes: a client that sends a blocking command is known to be
// blocked once the server lists it with flag b (or it has a reply), on
// both servers, before any other client writes; a blocked client is known
// to be served once valkey-server no longer lists it blocked after the
// write, and its reply is then read on both; a short timeout is waited
// out before the next step.

// diffBlockClients is how many clients block, besides the one that
// watches (CLIENT LIST, CLIENT UNBLOCK) and writes when all are blocked.
const diffBlockClients = 4

// blockSide is one server's clients of TestDifferentialBlockingRandom.
type blockSide struct {
	name string
	ctl  *rawClient
	cl   []*rawClient
	ids  []string
}

func newBlockSide(t *testing.T, name, addr, proto string) *blockSide {
	s := &blockSide{name: name, ctl: dialRaw(t, addr)}
	s.ctl.do("hello", proto)
	s.ctl.do("flushall")
	for range diffBlockClients {
		rc := dialRaw(t, addr)
		rc.do("hello", proto)
		s.cl = append(s.cl, rc)
		s.ids = append(s.ids, clientID(rc))
	}
	return s
}

func clientID(rc *rawClient) string {
	return strings.TrimSuffix(strings.TrimPrefix(rc.do("client", "id"), ":"), "\r\n")
}

var clientListLine = regexp.MustCompile(`id=(\d+) .*?flags=(\S+)`)

// blockedIDs returns the ids of the clients the server lists as blocked.
func (s *blockSide) blockedIDs() map[string]bool {
	ids := map[string]bool{}
	for _, m := range clientListLine.FindAllStringSubmatch(s.ctl.do("client", "list"), -1) {
		if strings.ContainsRune(m[2], 'b') {
			ids[m[1]] = true
		}
	}
	return ids
}

// hasInput reports whether rc has a reply (some of one) to read now.
func hasInput(rc *rawClient) bool {
	if rc.r.Buffered() > 0 {
		return true
	}
	rc.c.SetReadDeadline(time.Now().Add(time.Millisecond))
	_, err := rc.r.Peek(1)
	return err == nil
}

// settle waits until client i, which has sent a blocking command, is
// either listed blocked or has its reply, and reports which.
func (s *blockSide) settle(tb testing.TB, i int) (blocked bool) {
	tb.Helper()
	// Only against a hang: an event, not a time, is what is waited for.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if s.blockedIDs()[s.ids[i]] {
			return true
		}
		if hasInput(s.cl[i]) {
			return false
		}
	}
	tb.Fatalf("%s: client %d neither blocked nor replied", s.name, i)
	return false
}

// replyWithin reads one reply, or returns an error after 10 s.
func replyWithin(rc *rawClient) (string, error) {
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var b bytes.Buffer
	err := readReply(rc.r, &b)
	return b.String(), err
}

// blockGen makes the commands of TestDifferentialBlockingRandom.
type blockGen struct {
	rng *rand.Rand
	seq int // the milliseconds of the next stream ID: IDs only grow
}

func (g *blockGen) pick(s ...string) string { return s[g.rng.IntN(len(s))] }

// The keys: lists, sorted sets, streams, and now and then one of another
// type (or a string).
func (g *blockGen) anyKey() string {
	return g.pick("bl0", "bl1", "bz0", "bz1", "bx0", "bx1", "bs")
}

func (g *blockGen) keyOf(keys ...string) string {
	if g.rng.IntN(10) == 0 {
		return g.anyKey()
	}
	return g.pick(keys...)
}

func (g *blockGen) list() string   { return g.keyOf("bl0", "bl1") }
func (g *blockGen) zset() string   { return g.keyOf("bz0", "bz1") }
func (g *blockGen) stream() string { return g.keyOf("bx0", "bx1") }
func (g *blockGen) end() string    { return g.pick("left", "right", "LEFT", "RIGHT") }

func (g *blockGen) elem() string { return g.pick("a", "b", "c", "d", "e", "f") }

func (g *blockGen) nextID() string {
	g.seq++
	return strconv.Itoa(g.seq) + "-1"
}

// block is a blocking command of client who: a timeout that does not pass
// during the run (0, forever, or far ahead), or with short one that
// passes.
func (g *blockGen) block(who int, short bool) []string {
	timeout := func() string {
		if short {
			return g.pick("0.02", "0.01", "0.05")
		}
		return g.pick("0", "0", "100", "0.0", "1000")
	}
	ms := func() string {
		if short {
			return g.pick("20", "10")
		}
		return g.pick("0", "0", "100000")
	}
	keys := func(cmd []string, key func() string) []string {
		for range 1 + g.rng.IntN(2) {
			cmd = append(cmd, key())
		}
		return cmd
	}
	mpop := func(name string, key func() string, ends ...string) []string {
		var ks []string
		ks = keys(ks, key)
		cmd := append([]string{name, timeout(), strconv.Itoa(len(ks))}, ks...)
		cmd = append(cmd, g.pick(ends...))
		if g.rng.IntN(2) == 0 {
			cmd = append(cmd, "count", g.pick("1", "2", "5"))
		}
		return cmd
	}
	switch g.rng.IntN(13) {
	case 0, 1:
		return append(keys([]string{g.pick("blpop", "brpop")}, g.list), timeout())
	case 2:
		return []string{"blmove", g.list(), g.list(), g.end(), g.end(), timeout()}
	case 3:
		return []string{"brpoplpush", g.list(), g.list(), timeout()}
	case 4:
		return mpop("blmpop", g.list, "left", "right")
	case 5:
		return append(keys([]string{g.pick("bzpopmin", "bzpopmax")}, g.zset), timeout())
	case 6:
		return mpop("bzmpop", g.zset, "min", "max", "MAX")
	case 7, 8:
		cmd := []string{"xread"}
		if g.rng.IntN(3) == 0 {
			cmd = append(cmd, "count", g.pick("1", "2"))
		}
		cmd = append(cmd, "block", ms(), "streams")
		ks := keys(nil, g.stream)
		cmd = append(cmd, ks...)
		for range ks {
			// The last ID, or one ahead: the next XADD wakes the
			// client, which finds nothing and blocks again.
			cmd = append(cmd, g.pick("$", "$", "$", "+", "0", strconv.Itoa(g.seq)+"-1", strconv.Itoa(g.seq+2)+"-1"))
		}
		return cmd
	}
	cmd := []string{"xreadgroup", "group", g.pick("g1", "g1", "g2"), "c" + strconv.Itoa(who)}
	if g.rng.IntN(3) == 0 {
		cmd = append(cmd, "count", g.pick("1", "2"))
	}
	if g.rng.IntN(4) == 0 {
		cmd = append(cmd, "noack")
	}
	cmd = append(cmd, "block", ms(), "streams")
	ks := keys(nil, g.stream)
	cmd = append(cmd, ks...)
	for range ks {
		cmd = append(cmd, g.pick(">", ">", ">", "0"))
	}
	return cmd
}

// write is a command that may wake blocked clients, or not: pushes,
// ZADD, XADD, the consumer groups, a deletion, a type change, FLUSHDB,
// SWAPDB; or reads and pops that look at what is left.
func (g *blockGen) write() []string {
	switch g.rng.IntN(31) {
	case 24, 25, 26, 27:
		return []string{"xgroup", "create", g.stream(), g.pick("g1", "g2"), "$", "mkstream"}
	case 28:
		// The client's database from now on: its blocking commands
		// wait there, its writes wake those waiting there.
		return []string{"select", g.pick("0", "0", "1")}
	case 29, 30:
		// A script's writes wake clients once it ends.
		return []string{"eval", g.pick(
			"redis.call('rpush', KEYS[1], ARGV[1]) return redis.call('lpop', KEYS[1])",
			"return redis.call('rpush', KEYS[1], ARGV[1], ARGV[1])",
			"redis.call('del', KEYS[1]) return redis.call('zadd', KEYS[1], 1, ARGV[1])",
			"return redis.pcall('blpop', KEYS[1], 0)"), "1", g.anyKey(), g.elem()}
	case 0, 1, 2:
		cmd := []string{g.pick("lpush", "rpush", "lpush", "rpush", "lpushx", "rpushx"), g.list()}
		for range 1 + g.rng.IntN(3) {
			cmd = append(cmd, g.elem())
		}
		return cmd
	case 3:
		if g.rng.IntN(2) == 0 {
			return []string{"rpoplpush", g.list(), g.list()}
		}
		return []string{"lmove", g.list(), g.list(), g.end(), g.end()}
	case 4, 5, 6:
		cmd := []string{"zadd", g.zset()}
		for range 1 + g.rng.IntN(3) {
			cmd = append(cmd, strconv.Itoa(g.rng.IntN(5)), g.elem())
		}
		return cmd
	case 7:
		return []string{"zincrby", g.zset(), "1", g.elem()}
	case 8, 9, 10:
		cmd := []string{"xadd", g.stream()}
		if g.rng.IntN(5) == 0 {
			cmd = append(cmd, "maxlen", g.pick("1", "2"))
		}
		if g.rng.IntN(8) == 0 {
			cmd = append(cmd, "nomkstream")
		}
		return append(cmd, g.nextID(), "f", g.elem())
	case 11:
		cmd := []string{"xgroup", "create", g.stream(), g.pick("g1", "g2"), g.pick("$", "0")}
		if g.rng.IntN(3) > 0 {
			cmd = append(cmd, "mkstream")
		}
		return cmd
	case 12:
		if g.rng.IntN(2) == 0 {
			return []string{"xgroup", "setid", g.stream(), g.pick("g1", "g2"), g.pick("$", "0")}
		}
		return []string{"xgroup", "destroy", g.stream(), g.pick("g1", "g2")}
	case 13, 14:
		cmd := []string{"del", g.anyKey()}
		if g.rng.IntN(2) == 0 {
			cmd = append(cmd, g.anyKey())
		}
		return cmd
	case 15:
		return []string{"set", g.anyKey(), "v"} // the type changes, or it stays a string
	case 16:
		if g.rng.IntN(3) == 0 {
			return []string{"flushdb"}
		}
		return []string{"swapdb", "0", "1"}
	case 17:
		return []string{"rename", g.anyKey(), g.anyKey()}
	case 18:
		return []string{g.pick("lpop", "rpop", "zpopmin", "zpopmax"), g.anyKey()}
	case 19:
		return []string{"lrange", g.list(), "0", "-1"}
	case 20:
		return []string{"zrange", g.zset(), "0", "-1", "withscores"}
	case 21:
		return []string{"xrange", g.stream(), "-", "+"}
	case 22:
		return []string{"xpending", g.stream(), g.pick("g1", "g2")}
	}
	return []string{"type", g.anyKey()}
}

// batch is a MULTI/EXEC of a few writes; a blocking command among them
// does not block, and replies as if it timed out.
func (g *blockGen) batch() [][]string {
	cmds := [][]string{{"multi"}}
	for range 1 + g.rng.IntN(4) {
		if g.rng.IntN(6) == 0 {
			cmds = append(cmds, g.block(0, false))
		} else {
			cmds = append(cmds, g.write())
		}
	}
	return append(cmds, []string{g.pick("exec", "exec", "exec", "discard")})
}

// blockStats counts what TestDifferentialBlockingRandom saw, for it to
// check that it saw each.
type blockStats struct {
	blocked, immediate, timeouts, woken, wokenBehind int
	unblocked, stillBlocked, queued                  int
	blockedIn                                        map[string]int // the clients blocked, by command
}

// TestDifferentialBlockingRandom: random sequences of blocking commands
// (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX, BZMPOP,
// XREAD and XREADGROUP with BLOCK) of four clients on each server, woken
// (or not) by the random writes of the others (pushes, ZADD, XADD, MULTI
// batches, DEL, type changes, FLUSHDB, SWAPDB, RENAME), by CLIENT UNBLOCK
// TIMEOUT or ERROR, or timed out. Every reply is compared, the order in
// which clients blocked on one key are served with it (which of them
// valkey-server serves, ours must), and the requests a blocked client sent
// meanwhile. RDMAPOOL_DIFF_SEED picks the seed, RDMAPOOL_DIFF_N/8 the
// number of steps per protocol.
func TestDifferentialBlockingRandom(t *testing.T) {
	seed := envInt(t, "RDMAPOOL_DIFF_SEED", 1)
	n := envInt(t, "RDMAPOOL_DIFF_N", 16000) / 8
	theirs := testutil.ValkeyServer(t)
	_, ours := startServer(t, nil)
	for _, proto := range []string{"2", "3"} {
		st := runBlockRandom(t, ours, theirs, proto, seed, n)
		t.Logf("seed %d, RESP%s: %+v", seed, proto, st)
		if !t.Failed() && n >= 1000 && (st.blocked == 0 || st.immediate == 0 || st.timeouts == 0 || st.woken == 0 ||
			st.wokenBehind == 0 || st.unblocked == 0 || st.stillBlocked == 0 || st.queued == 0) {
			t.Errorf("seed %d, RESP%s: want some of each: %+v", seed, proto, st)
		}
	}
}

// runBlockRandom runs n random steps on both servers and compares them; it
// stops at the first difference, which the steps before explain.
func runBlockRandom(t *testing.T, ours, theirs, proto string, seed, n int) blockStats {
	t.Helper()
	a, b := newBlockSide(t, "ours", ours, proto), newBlockSide(t, "valkey-server", theirs, proto)
	g := &blockGen{rng: rand.New(rand.NewPCG(uint64(seed), 36))}
	st := blockStats{blockedIn: map[string]int{}}
	blocked := make([]bool, diffBlockClients)
	queued := make([]int, diffBlockClients)
	blockedCmd := make([][]string, diffBlockClients)
	var recent []string
	note := func(s string) {
		if recent = append(recent, s); len(recent) > 12 {
			recent = recent[1:]
		}
	}
	failed := func(step int, format string, args ...any) {
		t.Helper()
		t.Errorf("seed %d, RESP%s, step %d: %s\n  steps before: %s", seed, proto, step, fmt.Sprintf(format, args...), strings.Join(recent, "\n    "))
	}
	// readBoth reads client i's reply (ctl's when i < 0) on both.
	readBoth := func(i int) (got, want string, err error) {
		x, y := a.ctl, b.ctl
		if i >= 0 {
			x, y = a.cl[i], b.cl[i]
		}
		want, err = replyWithin(y)
		if err != nil {
			return "", want, fmt.Errorf("valkey-server: %v", err)
		}
		got, err = replyWithin(x)
		if err != nil {
			return got, want, fmt.Errorf("ours sent no reply: %v", err)
		}
		return got, want, nil
	}
	// woken reads and compares the replies of the clients that
	// valkey-server no longer lists as blocked; others blocked on one of
	// the same keys before them were passed over, or were served first.
	woken := func(step int) bool {
		vb := b.blockedIDs()
		for i := range blocked {
			if !blocked[i] || vb[b.ids[i]] {
				continue
			}
			blocked[i] = false
			st.woken++
			for j := range blocked {
				if j != i && blocked[j] && sharesKey(blockedCmd[i], blockedCmd[j]) {
					st.wokenBehind++
					break
				}
			}
			for range 1 + queued[i] {
				got, want, err := readBoth(i)
				note(fmt.Sprintf("client %d served: %q", i, want))
				if err != nil || got != want {
					failed(step, "client %d blocked in %q: ours %q, valkey-server %q (%v)", i, blockedCmd[i], got, want, err)
					return false
				}
			}
			queued[i] = 0
		}
		for i := range blocked {
			if blocked[i] {
				st.stillBlocked++
			}
		}
		return true
	}
	for step := range n {
		var idle []int
		for i, bl := range blocked {
			if !bl {
				idle = append(idle, i)
			}
		}
		switch r := g.rng.IntN(100); {
		case r < 35 && len(idle) > 0: // a client blocks, or gets its reply at once
			i := idle[g.rng.IntN(len(idle))]
			short := g.rng.IntN(12) == 0
			cmd := g.block(i, short)
			a.cl[i].send(encode(cmd...))
			b.cl[i].send(encode(cmd...))
			note(fmt.Sprintf("client %d: %q", i, cmd))
			if !short {
				ba, bb := a.settle(t, i), b.settle(t, i)
				if ba != bb {
					failed(step, "client %d %q: blocked on ours %v, on valkey-server %v", i, cmd, ba, bb)
					return st
				}
				if bb {
					blocked[i], blockedCmd[i] = true, cmd
					st.blocked++
					st.blockedIn[cmd[0]]++
					continue
				}
			}
			got, want, err := readBoth(i)
			if err != nil || got != want {
				failed(step, "client %d %q: ours %q, valkey-server %q (%v)", i, cmd, got, want, err)
				return st
			}
			if want == "*-1\r\n" || want == "_\r\n" {
				st.timeouts++
			} else {
				st.immediate++
			}
		case r < 42: // CLIENT UNBLOCK of a client, blocked or not
			i := g.rng.IntN(diffBlockClients)
			cmd := []string{"client", "unblock", "", g.pick("timeout", "error", "TIMEOUT", "ERROR", "")}
			if cmd[3] == "" {
				cmd = cmd[:3]
			}
			cmd[2] = a.ids[i]
			got := a.ctl.do(cmd...)
			cmd[2] = b.ids[i]
			want := b.ctl.do(cmd...)
			note(fmt.Sprintf("unblock client %d: %q", i, cmd))
			if got != want {
				failed(step, "%q of client %d: ours %q, valkey-server %q", cmd, i, got, want)
				return st
			}
			if want == ":1\r\n" {
				st.unblocked++
			}
			if !woken(step) {
				return st
			}
		case r < 46 && len(idle) < diffBlockClients: // a request behind a blocked command waits
			i := slices.Index(blocked, true)
			cmd := []string{"echo", "queued" + strconv.Itoa(step)}
			a.cl[i].send(encode(cmd...))
			b.cl[i].send(encode(cmd...))
			note(fmt.Sprintf("client %d (blocked): %q", i, cmd))
			queued[i]++
			st.queued++
		default: // a write, by an idle client or ctl
			who := -1
			if len(idle) > 0 && g.rng.IntN(4) > 0 {
				who = idle[g.rng.IntN(len(idle))]
			}
			x, y := a.ctl, b.ctl
			if who >= 0 {
				x, y = a.cl[who], b.cl[who]
			}
			cmds := [][]string{g.write()}
			if g.rng.IntN(8) == 0 {
				cmds = g.batch()
			}
			var req string
			for _, cmd := range cmds {
				req += encode(cmd...)
			}
			x.send(req)
			y.send(req)
			for _, cmd := range cmds {
				got, want, err := readBoth(who)
				note(fmt.Sprintf("client %d: %q: %q", who, cmd, want))
				if err != nil || got != want {
					failed(step, "client %d %q: ours %q, valkey-server %q (%v)", who, cmd, got, want, err)
					return st
				}
			}
			if !woken(step) {
				return st
			}
		}
	}
	// The clients still blocked are let go.
	for i := range blocked {
		if !blocked[i] {
			continue
		}
		got, want := a.ctl.do("client", "unblock", a.ids[i]), b.ctl.do("client", "unblock", b.ids[i])
		if got != want {
			failed(n, "client unblock of client %d at the end: ours %q, valkey-server %q", i, got, want)
			return st
		}
		if !woken(n) {
			return st
		}
	}
	waitBlockedClients(t, a.ctl, 0)
	waitBlockedClients(t, b.ctl, 0)
	return st
}

// sharesKey reports whether two blocking commands name a key in common
// (any argument in common, which is near enough for the statistics).
func sharesKey(x, y []string) bool {
	for _, k := range x[1:] {
		if strings.HasPrefix(k, "b") && len(k) == 3 && slices.Contains(y[1:], k) {
			return true
		}
	}
	return false
}

// Pub/sub.

// diffPubsubClients is how many clients subscribe and publish.
const diffPubsubClients = 4

// pubsubGen makes the commands of TestDifferentialPubsubRandom.
type pubsubGen struct{ rng *rand.Rand }

func (g *pubsubGen) pick(s ...string) string { return s[g.rng.IntN(len(s))] }

// channel is a channel's name, glob's special characters among them.
func (g *pubsubGen) channel() string {
	return g.pick("ch", "ch1", "ch2", "c*", "c?", "c[h]1", "news.a", "news.b", `a\b`, "[", "*", "", "hello", "hallo",
		"h?llo", "x y", "ch12", "C1")
}

// pattern is a glob pattern: valkey's matcher's corners among them.
func (g *pubsubGen) pattern() string {
	return g.pick("*", "c*", "ch?", "ch[12]", "c[^h]*", `\*`, "*[", "[", "[a-", `c\?`, "", "news.*", "?", "h[ae]llo",
		"h*o", `a\\b`, "[^a]*", "**", "ch[1-2]*", "[z-a]*", "c[", `*\`, "C*")
}

func (g *pubsubGen) names(name func() string, min int) []string {
	var s []string
	for range min + g.rng.IntN(3) {
		s = append(s, name())
	}
	return s
}

// next is a step of one client: usually one command, a MULTI batch now
// and then.
func (g *pubsubGen) next() [][]string {
	switch g.rng.IntN(40) {
	case 0, 1, 2, 3:
		return [][]string{append([]string{"subscribe"}, g.names(g.channel, 1)...)}
	case 4, 5, 6:
		return [][]string{append([]string{"psubscribe"}, g.names(g.pattern, 1)...)}
	case 7, 8:
		return [][]string{append([]string{"ssubscribe"}, g.names(g.channel, 1)...)}
	case 9, 10:
		return [][]string{append([]string{"unsubscribe"}, g.names(g.channel, 0)...)}
	case 11, 12:
		return [][]string{append([]string{"punsubscribe"}, g.names(g.pattern, 0)...)}
	case 13:
		return [][]string{append([]string{"sunsubscribe"}, g.names(g.channel, 0)...)}
	case 14, 15, 16, 17, 18, 19, 20:
		return [][]string{{"publish", g.channel(), g.pick("m", "", "hello world", "1")}}
	case 21, 22:
		return [][]string{{"spublish", g.channel(), g.pick("s", "")}}
	case 23:
		if g.rng.IntN(3) == 0 {
			return [][]string{{"pubsub", g.pick("channels", "shardchannels")}}
		}
		return [][]string{{"pubsub", g.pick("channels", "shardchannels", "CHANNELS"), g.pattern()}}
	case 24:
		return [][]string{append([]string{"pubsub", g.pick("numsub", "shardnumsub")}, g.names(g.channel, 0)...)}
	case 25:
		return [][]string{{"pubsub", g.pick("numpat", "numpat", "help", "bogus")}}
	case 26, 27:
		k := g.rng.IntN(4)
		return [][]string{{g.pick("ping", "get", "dbsize", "echo")}, {"ping", "x"}, {"set", "k", "v"}, {"get", "k"}}[k : k+1]
	case 28:
		return [][]string{{"hello", g.pick("2", "3")}}
	case 29:
		return [][]string{{"reset"}}
	case 30:
		return [][]string{{"quit"}}
	case 31:
		cmds := [][]string{{"multi"}}
		for range 1 + g.rng.IntN(3) {
			switch g.rng.IntN(7) {
			case 0, 1:
				cmds = append(cmds, []string{"publish", g.channel(), "in multi"})
			case 2:
				cmds = append(cmds, []string{"set", "k", "v"})
			case 3:
				cmds = append(cmds, []string{g.pick("subscribe", "ssubscribe", "unsubscribe", "sunsubscribe"), g.channel()})
			case 4:
				cmds = append(cmds, []string{g.pick("psubscribe", "punsubscribe"), g.pattern()})
			case 5:
				cmds = append(cmds, []string{"eval", "return redis.call('publish', ARGV[1], 'scripted')", "0", g.channel()})
			default:
				cmds = append(cmds, []string{"pubsub", "numsub", g.channel()})
			}
		}
		return append(cmds, []string{"exec"})
	case 32:
		return [][]string{{"ping", "a", "b"}, {"subscribe"}, {"psubscribe"}, {"ssubscribe"}, {"publish", "ch"}, {"pubsub"}}[g.rng.IntN(6):][:1]
	}
	return [][]string{{"publish", g.pick("ch", "ch1", "hello", "news.a"), "m"}}
}

// pubsubFrames splits what a client read into replies and pushes.
func pubsubFrames(tb testing.TB, s string) []string {
	tb.Helper()
	var frames []string
	r := bufio.NewReader(strings.NewReader(s))
	for {
		if _, err := r.Peek(1); err != nil {
			return frames
		}
		var b bytes.Buffer
		if err := readReply(r, &b); err != nil {
			tb.Fatalf("splitting %q: %v", s, err)
		}
		frames = append(frames, b.String())
	}
}

// pushWord is the first element of a push (or RESP2 array) of bulks, "" if
// it is none.
func pushWord(frame string) string {
	if frame == "" || (frame[0] != '>' && frame[0] != '*') {
		return ""
	}
	lines := strings.SplitN(frame, "\r\n", 4)
	if len(lines) < 3 || !strings.HasPrefix(lines[1], "$") {
		return ""
	}
	return lines[2]
}

// normPubsub puts what valkey sends in the order of its hash tables in
// one order: the pattern messages of one PUBLISH (valkey goes through its
// patterns in their table's order) and the replies of an UNSUBSCRIBE of
// all (in the order of the client's table), whose names are sorted under
// the counts as they come. PUBSUB CHANNELS's reply is sorted too.
func normPubsub(cmd []string, frames []string) []string {
	out := slices.Clone(frames)
	for i := 0; i < len(out); {
		w := pushWord(out[i])
		j := i + 1
		for j < len(out) && w != "" && pushWord(out[j]) == w {
			j++
		}
		switch w {
		case "pmessage":
			slices.Sort(out[i:j])
		case "unsubscribe", "punsubscribe", "sunsubscribe":
			// [word, name, count]: the names sorted, the counts kept.
			var names []string
			for _, f := range out[i:j] {
				names = append(names, strings.Join(strings.SplitAfter(f, "\r\n")[3:5], ""))
			}
			slices.Sort(names)
			for k, f := range out[i:j] {
				parts := strings.SplitAfter(f, "\r\n")
				out[i+k] = strings.Join(parts[:3], "") + names[k] + strings.Join(parts[5:], "")
			}
		}
		i = j
	}
	if len(cmd) >= 2 && strings.EqualFold(cmd[0], "pubsub") && len(out) > 0 {
		if s, ok := sorted(out[0], false); ok && (strings.EqualFold(cmd[1], "channels") || strings.EqualFold(cmd[1], "shardchannels")) {
			out[0] = s
		}
	}
	return out
}

// TestDifferentialPubsubRandom: random sequences of four clients on each
// server that subscribe (channels, patterns, shard channels), unsubscribe,
// publish to random channels (glob's special characters in names and
// patterns), ask PUBSUB, run other commands (refused in RESP2's subscribed
// state), MULTI batches, HELLO, RESET and QUIT. After each step every
// client reads up to the reply of a PING it sends, so it has read all
// that the step sent it: pushes and replies, in their order, which is
// compared with valkey-server's. RDMAPOOL_DIFF_SEED picks the seed,
// RDMAPOOL_DIFF_N/8 the number of steps per protocol.
func TestDifferentialPubsubRandom(t *testing.T) {
	seed := envInt(t, "RDMAPOOL_DIFF_SEED", 1)
	n := envInt(t, "RDMAPOOL_DIFF_N", 16000) / 8
	theirs := testutil.ValkeyServer(t)
	_, ours := startServer(t, nil)
	for _, proto := range []string{"2", "3"} {
		delivered := runPubsubRandom(t, ours, theirs, proto, seed, n)
		t.Logf("seed %d, RESP%s: %v", seed, proto, delivered)
		if !t.Failed() && n >= 1000 {
			for _, w := range []string{"message", "pmessage", "smessage", "refused", "unsubscribe all", "quit", "reset"} {
				if delivered[w] == 0 {
					t.Errorf("seed %d, RESP%s: no %s: %v", seed, proto, w, delivered)
				}
			}
		}
	}
}

// runPubsubRandom runs n random steps on both servers and compares what
// each client reads; it stops at the first difference. It returns counts
// of what the clients read.
func runPubsubRandom(t *testing.T, ours, theirs, proto string, seed, n int) map[string]int {
	t.Helper()
	g := &pubsubGen{rng: rand.New(rand.NewPCG(uint64(seed), 37))}
	counts := map[string]int{}
	addrs := [2]string{ours, theirs}
	var cl [2][]*rawClient
	dial := func(side, i int) {
		rc := dialRaw(t, addrs[side])
		rc.do("hello", proto)
		cl[side][i] = rc
	}
	for side := range addrs {
		cl[side] = make([]*rawClient, diffPubsubClients)
		for i := range diffPubsubClients {
			dial(side, i)
		}
		cl[side][0].do("flushall")
	}
	var recent []string
	for step := range n {
		who := g.rng.IntN(diffPubsubClients)
		cmds := g.next()
		var read [2][diffPubsubClients]string
		for side := range addrs {
			rc := cl[side][who]
			var buf bytes.Buffer
			switch name := strings.ToLower(cmds[0][0]); {
			case name == "quit":
				buf.WriteString(rc.do(cmds[0]...))
				// Its side stays open (until the test ends): the
				// server's close, not the client's, ends what it had.
				rc.expectClosed()
				dial(side, who)
			case name == "hello":
				// Its reply differs (ids, versions): only its error is
				// compared, and what comes after it.
				rc.send(encode("ping", "sync-token") + encode(cmds[0]...) + encode("ping", "sync-token"))
				readToSync(t, rc, &buf)
				if r := rc.reply(); r[0] == '-' {
					buf.WriteString(r)
				}
				readToSync(t, rc, &buf)
			default:
				var req string
				for _, cmd := range cmds {
					req += encode(cmd...)
				}
				rc.send(req + encode("ping", "sync-token"))
				readToSync(t, rc, &buf)
			}
			read[side][who] = buf.String()
			// The others have read all this step sent them once they
			// have the reply to a PING sent after it.
			for i, o := range cl[side] {
				if i == who {
					continue
				}
				o.send(encode("ping", "sync-token"))
				var b bytes.Buffer
				readToSync(t, o, &b)
				read[side][i] = b.String()
			}
		}
		recent = append(recent, fmt.Sprintf("client %d: %q", who, cmds))
		if len(recent) > 16 {
			recent = recent[1:]
		}
		for i := range diffPubsubClients {
			var cmd []string
			if i == who {
				cmd = cmds[0]
			}
			got := normPubsub(cmd, pubsubFrames(t, read[0][i]))
			want := normPubsub(cmd, pubsubFrames(t, read[1][i]))
			if !slices.Equal(got, want) {
				t.Errorf("seed %d, RESP%s, step %d, client %d read after client %d's %q:\n  ours          %q\n  valkey-server %q\n  steps: %s",
					seed, proto, step, i, who, cmds, got, want, strings.Join(recent, "\n    "))
				return counts
			}
			for _, f := range want {
				switch w := pushWord(f); w {
				case "message", "pmessage", "smessage":
					counts[w]++
				}
				if strings.Contains(f, "only (P|S)SUBSCRIBE") {
					counts["refused"]++
				}
			}
		}
		switch name := strings.ToLower(cmds[0][0]); {
		case len(cmds[0]) == 1 && strings.HasSuffix(name, "unsubscribe"):
			counts["unsubscribe all"]++
		case name == "quit" || name == "reset":
			counts[name]++
		}
	}
	// No subscription is left for the next run to count.
	for side := range addrs {
		for _, rc := range cl[side] {
			if r := rc.do("reset"); r != "+RESET\r\n" {
				t.Errorf("RESET at the end: %q", r)
			}
		}
	}
	return counts
}

// Seeds: the smallest cases of the differences the random tests found,
// kept as scripts.

// diffBlockSeeds are run by TestDifferentialBlockingSeeds as
// blocking_test.go's scenarios (client 0 never blocks).
var diffBlockSeeds = map[string][]blockStep{
	// A client whose XREADGROUP finds nothing when it is served (another
	// consumer of its group took the entry) blocks again, behind the
	// others; the clients after it on the key are served all the same.
	"xreadgroup again": {
		{who: 0, args: []string{"xgroup", "create", "s", "g1", "$", "mkstream"}},
		{who: 0, args: []string{"xgroup", "create", "s", "g2", "$"}},
		{who: 1, args: []string{"xreadgroup", "group", "g1", "c1", "block", "0", "streams", "s", ">"}, send: true, blocked: 1},
		{who: 2, args: []string{"xreadgroup", "group", "g1", "c2", "block", "0", "streams", "s", ">"}, send: true, blocked: 2},
		{who: 3, args: []string{"xreadgroup", "group", "g2", "c3", "block", "0", "streams", "s", ">"}, send: true, blocked: 3},
		{who: 4, args: []string{"xreadgroup", "group", "g1", "c4", "block", "0", "streams", "s", ">"}, send: true, blocked: 4},
		{who: 0, args: []string{"xadd", "s", "1-1", "f", "v"}},
		{who: 1, read: true}, {who: 3, read: true},
		{who: 0, wait: true, blocked: 2},
		{who: 0, args: []string{"xadd", "s", "2-1", "f", "w"}},
		{who: 2, read: true},
		{who: 0, wait: true, blocked: 1},
		{who: 0, args: []string{"xadd", "s", "3-1", "f", "x"}},
		{who: 4, read: true},
	},
	// FLUSHDB, FLUSHALL and SWAPDB wake the XREADGROUP clients of a stream
	// they take away (NOGROUP), and no other.
	"flushdb": {
		{who: 0, args: []string{"xgroup", "create", "s", "g", "$", "mkstream"}},
		{who: 1, args: []string{"xreadgroup", "group", "g", "c1", "block", "0", "streams", "s", ">"}, send: true, blocked: 1},
		{who: 2, args: []string{"blpop", "l", "0"}, send: true, blocked: 2},
		{who: 3, args: []string{"xread", "block", "0", "streams", "s", "$"}, send: true, blocked: 3},
		{who: 0, args: []string{"flushdb"}},
		{who: 1, read: true},
		{who: 0, wait: true, blocked: 2},
		{who: 0, args: []string{"rpush", "l", "a"}},
		{who: 2, read: true},
		{who: 0, args: []string{"xadd", "s", "1-1", "f", "v"}},
		{who: 3, read: true},
		{who: 0, args: []string{"xgroup", "create", "s", "g", "$"}},
		{who: 1, args: []string{"xreadgroup", "group", "g", "c1", "block", "0", "streams", "s", ">"}, send: true, blocked: 1},
		{who: 0, args: []string{"flushall"}},
		{who: 1, read: true},
	},
	"swapdb": {
		{who: 0, args: []string{"xgroup", "create", "s", "g", "$", "mkstream"}},
		{who: 1, args: []string{"xreadgroup", "group", "g", "c1", "block", "0", "streams", "s", ">"}, send: true, blocked: 1},
		{who: 0, args: []string{"swapdb", "0", "1"}},
		{who: 1, read: true},
		{who: 0, args: []string{"swapdb", "0", "1"}},
		{who: 0, args: []string{"xlen", "s"}},
	},
}

// TestDifferentialBlockingSeeds runs diffBlockSeeds on this server and on
// valkey-server, in RESP2 and RESP3, and compares every reply.
func TestDifferentialBlockingSeeds(t *testing.T) {
	theirs := testutil.ValkeyServer(t)
	_, ours := startServer(t, nil)
	for name, steps := range diffBlockSeeds {
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

// diffPubsubSeed is run by TestDifferentialPubsubSeeds as pubsub_test.go's
// script.
var diffPubsubSeed = []scriptStep{
	// A message a client publishes to itself (RESP3) comes after the
	// reply of its command: of PUBLISH, of EXEC, of EVAL.
	{0, []string{"hello", "3"}},
	{0, []string{"subscribe", "a"}},
	{0, []string{"psubscribe", "a*"}},
	{0, []string{"publish", "a", "self"}},
	{0, []string{"multi"}},
	{0, []string{"publish", "a", "in multi"}},
	{0, []string{"pubsub", "numsub", "a"}},
	{0, []string{"exec"}},
	{0, []string{"eval", "return redis.call('publish', 'a', 'scripted')", "0"}},
	{1, []string{"publish", "a", "other"}},
	{0, []string{"spublish", "a", "nobody"}},
	{0, []string{"ssubscribe", "a"}},
	{0, []string{"spublish", "a", "self"}},
	{0, []string{"reset"}},
	// Inside EXEC, SSUBSCRIBE is refused (valkey's deny_blocking), and
	// SUBSCRIBE is not.
	{1, []string{"multi"}},
	{1, []string{"ssubscribe", "b"}},
	{1, []string{"subscribe", "b"}},
	{1, []string{"exec"}},
	{1, []string{"reset"}},
}

// TestDifferentialPubsubSeeds runs diffPubsubSeed on both servers, a
// RESP3 subscriber blocked in BLPOP while a message comes, and QUIT from
// a subscribed client: once it has read the reply and the close, its
// subscriptions are gone.
func TestDifferentialPubsubSeeds(t *testing.T) {
	theirs := testutil.ValkeyServer(t)
	_, ours := startServer(t, nil)
	for _, proto := range []string{"2", "3"} {
		compareScript(t, ours, theirs, [3]string{proto, proto, proto}, diffPubsubSeed)
	}
	// A RESP3 subscriber blocked in BLPOP gets the messages published
	// meanwhile, then its reply.
	var got [2]string
	for side, addr := range []string{ours, theirs} {
		sub, pub := dialRaw(t, addr), dialRaw(t, addr)
		sub.do("hello", "3")
		pub.do("del", "bk")
		got[side] = sub.do("subscribe", "bc")
		sub.send(encode("blpop", "bk", "0") + encode("ping", "queued"))
		waitBlockedClients(t, pub, 1)
		got[side] += pub.do("publish", "bc", "while blocked")
		got[side] += sub.reply()
		got[side] += pub.do("rpush", "bk", "v") + sub.reply() + sub.reply()
	}
	if got[0] != got[1] {
		t.Errorf("RESP3, a subscriber blocked: ours %q, valkey-server %q", got[0], got[1])
	}
	for _, proto := range []string{"2", "3"} {
		for range 20 {
			got = [2]string{}
			for side, addr := range []string{ours, theirs} {
				sub, pub := dialRaw(t, addr), dialRaw(t, addr)
				sub.do("hello", proto)
				sub.send(encode("subscribe", "q") + encode("psubscribe", "q*") + encode("ssubscribe", "q") + encode("quit"))
				for range 4 {
					got[side] += sub.reply()
				}
				sub.expectClosed()
				got[side] += pub.do("pubsub", "numsub", "q") + pub.do("pubsub", "numpat") + pub.do("publish", "q", "m") +
					pub.do("spublish", "q", "m")
			}
			if got[0] != got[1] {
				t.Fatalf("RESP%s, SUBSCRIBE and QUIT: ours %q, valkey-server %q", proto, got[0], got[1])
			}
		}
	}
}
