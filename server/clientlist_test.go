package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// lineText is the text of a CLIENT INFO or LIST reply (bulk or verbatim).
func lineText(t *testing.T, reply string) string {
	t.Helper()
	i := strings.Index(reply, "\r\n")
	if i < 0 || (reply[0] != '$' && reply[0] != '=') {
		t.Fatalf("not a bulk reply: %q", reply)
	}
	s := strings.TrimSuffix(reply[i+2:], "\r\n")
	return strings.TrimPrefix(s, "txt:")
}

// fields splits a client line into its names, in order, and values.
func fields(line string) ([]string, map[string]string) {
	var names []string
	vals := map[string]string{}
	for _, f := range strings.Fields(line) {
		k, v, _ := strings.Cut(f, "=")
		names = append(names, k)
		vals[k] = v
	}
	return names, vals
}

// deterministic are the fields equal on both servers for the same state.
var deterministic = []string{"name", "flags", "db", "sub", "psub", "ssub", "multi", "watch", "cmd", "user", "redir", "resp", "lib-name", "lib-ver"}

// clientStates drives a connection through states, asking CLIENT INFO
// (and CLIENT LIST ID own-id, CLIENT LIST TYPE t) in each; it returns the
// lines.
func clientStates(t *testing.T, addr string) []string {
	rc, other := dialRaw(t, addr), dialRaw(t, addr)
	id := strings.Trim(rc.do("client", "id"), ":\r\n")
	var lines []string
	list := func() {
		l := lineText(t, other.do("client", "list", "id", id, "999999"))
		lines = append(lines, strings.TrimSuffix(l, "\n"))
	}
	info := func() {
		lines = append(lines, lineText(t, rc.do("client", "info")))
		l := lineText(t, rc.do("client", "list", "id", id, "999999"))
		lines = append(lines, strings.TrimSuffix(l, "\n"))
		list()
	}
	info()
	rc.do("client", "setname", "alice")
	rc.do("client", "setinfo", "lib-name", "mylib")
	rc.do("client", "setinfo", "lib-ver", "1.2")
	rc.do("select", "3")
	info()
	rc.do("watch", "k1", "k2")
	info()
	rc.do("set", "k1", "v")
	info() // dirty CAS
	rc.do("multi")
	rc.do("get", "k1")
	list() // CLIENT INFO would be queued
	rc.do("exec")
	rc.do("client", "tracking", "on")
	info()
	rc.do("client", "tracking", "off")
	rc.do("hello", "3")
	info()
	rc.do("subscribe", "a", "b")
	rc.reply()
	rc.do("psubscribe", "p*")
	rc.do("ssubscribe", "s")
	lines = append(lines, lineText(t, rc.do("client", "info")))
	list()
	lines = append(lines, strings.TrimSuffix(lineText(t, other.do("client", "list", "type", "pubsub")), "\n"))
	return lines
}

// TestClientListMatchesValkey compares CLIENT INFO's and CLIENT LIST's
// lines with valkey-server's: the field names and order, and the values
// that do not depend on ids, times or memory.
func TestClientListMatchesValkey(t *testing.T) {
	theirs := testutil.ValkeyServer(t)
	_, ours := startServer(t, nil)
	got, want := clientStates(t, ours), clientStates(t, theirs)
	if len(got) != len(want) {
		t.Fatalf("ours %d lines, valkey-server's %d", len(got), len(want))
	}
	for i := range want {
		gn, gv := fields(got[i])
		wn, wv := fields(want[i])
		if strings.Join(gn, " ") != strings.Join(wn, " ") {
			t.Errorf("line %d: fields\n%v\nwant\n%v", i, gn, wn)
		}
		for _, k := range deterministic {
			if gv[k] != wv[k] {
				t.Errorf("line %d: %s=%q, valkey-server %q\nours:   %s\ntheirs: %s", i, k, gv[k], wv[k], got[i], want[i])
			}
		}
	}
}

// TestClientListErrors compares CLIENT LIST's filters' replies, and
// LASTSAVE's, ROLE's, WAIT's, LOLWUT's, LATENCY's and SLOWLOG's, with
// valkey-server's.
func TestClientListErrors(t *testing.T) {
	theirs := testutil.ValkeyServer(t)
	_, ours := startServer(t, nil)
	o, th := dialRaw(t, ours), dialRaw(t, theirs)
	for _, args := range [][]string{
		{"client", "list", "type", "foo"}, {"client", "list", "id", "x"}, {"client", "list", "id", "1", "x"},
		{"client", "list", "foo"}, {"client", "list", "type", "normal", "id", "3"}, {"client", "list", "id", "0"},
		{"client", "list", "id", "-1"}, {"client", "list", "type", "master"}, {"client", "list", "type", "replica"},
		{"client", "list", "type", "slave"}, {"client", "list", "type", "PUBSUB"}, {"client", "list", "type"},
		{"lastsave", "x"}, {"role"}, {"role", "x"}, {"wait", "0", "0"}, {"wait", "x", "0"}, {"wait", "1", "-1"},
		{"wait", "1", "x"}, {"wait", "0"}, {"lolwut"}, {"lolwut", "version", "7"}, {"lolwut", "version", "x"},
		{"lolwut", "foo", "bar"}, {"lolwut", "version"},
		{"latency", "latest"}, {"latency", "history", "command"}, {"latency", "history"}, {"latency", "reset"},
		{"latency", "reset", "a", "b"}, {"latency", "foo"}, {"latency"}, {"slowlog", "get"}, {"slowlog", "get", "5"},
		{"slowlog", "get", "x"}, {"slowlog", "get", "-1"}, {"slowlog", "get", "-2"}, {"slowlog", "len"},
		{"memory", "usage", "nokey"}, {"memory", "usage"}, {"memory", "usage", "k", "samples"},
		{"memory", "usage", "k", "samples", "x"}, {"memory", "usage", "k", "foo"}, {"memory", "usage", "k", "samples", "-1"},
		{"memory", "usage", "nokey", "samples", "0"}, {"memory", "usage", "k", "samples", "5", "x"}, {"memory", "foo"},
		{"slowlog", "reset"}, {"slowlog", "foo"}, {"slowlog", "len", "x"}, {"slowlog", "help"}, {"slowlog"},
	} {
		g, w := o.do(args...), th.do(args...)
		if args[0] == "lolwut" { // the version differs
			g = strings.ReplaceAll(g, valkeyVersion, "V")
			w = strings.ReplaceAll(w, "8.0.1", "V")
			w = strings.ReplaceAll(w, valkeyVersion, "V")
		}
		if g != w {
			t.Errorf("%q: ours %q, valkey-server %q", args, g, w)
		}
	}
	if r := o.do("lastsave"); !strings.HasPrefix(r, ":") {
		t.Errorf("LASTSAVE %q", r)
	}
	o.do("set", "k", "v")
	o.do("rpush", "l", "a", "b", "c")
	for _, k := range []string{"k", "l"} {
		if n, err := strconv.Atoi(strings.Trim(o.do("memory", "usage", k, "samples", "0"), ":\r\n")); err != nil || n <= 0 {
			t.Errorf("MEMORY USAGE %s = %d, %v", k, n, err)
		}
	}
}

// TestClientListBlocked: a client blocked in BLPOP shows flags=b and
// cmd=blpop in another's CLIENT LIST, and N again once served.
func TestClientListBlocked(t *testing.T) {
	for _, addr := range []string{"", testutil.ValkeyServer(t)} {
		if addr == "" {
			_, addr = startServer(t, nil)
		}
		a, b := dialRaw(t, addr), dialRaw(t, addr)
		id := strings.Trim(a.do("client", "id"), ":\r\n")
		a.send(encode("blpop", "bk", "0"))
		var vals map[string]string
		for range 10000 {
			_, vals = fields(lineText(t, b.do("client", "list", "id", id)))
			if vals["flags"] == "b" {
				break
			}
		}
		if vals["flags"] != "b" || vals["cmd"] != "blpop" || vals["id"] != id {
			t.Fatalf("%s: blocked client's flags=%q cmd=%q id=%q", addr, vals["flags"], vals["cmd"], vals["id"])
		}
		b.do("rpush", "bk", "x")
		a.expect("*2\r\n$2\r\nbk\r\n$1\r\nx\r\n")
		_, vals = fields(lineText(t, b.do("client", "list", "id", id)))
		if vals["flags"] != "N" {
			t.Errorf("%s: served client's flags=%q", addr, vals["flags"])
		}
		if n, _ := strconv.Atoi(vals["tot-cmds"]); n != 2 {
			t.Errorf("%s: tot-cmds=%q, want 2", addr, vals["tot-cmds"])
		}
	}
}

// TestClientReplyMatchesValkey pipelines CLIENT REPLY's cases and compares
// every reply read up to a last PING with valkey-server's.
func TestClientReplyMatchesValkey(t *testing.T) {
	theirs := testutil.ValkeyServer(t)
	_, ours := startServer(t, nil)
	script := [][]string{
		{"set", "a", "1"}, {"client", "reply", "skip"}, {"get", "a"}, {"get", "a"},
		{"client", "reply", "skip"}, {"nosuchcmd"}, {"echo", "x"},
		{"client", "reply", "skip"}, {"client", "reply", "skip"}, {"echo", "skipped"}, {"echo", "y"},
		{"client", "reply", "off"}, {"set", "a", "2"}, {"get", "a"}, {"get"}, {"client", "reply", "skip"},
		{"client", "reply", "bogus"}, {"client", "reply", "on"}, {"get", "a"},
		{"client", "reply", "bogus"}, {"client", "reply"}, {"client", "reply", "ON"},
		{"client", "reply", "off"}, {"reset"}, {"echo", "after reset"},
		{"client", "reply", "off"}, {"hello", "3"}, {"client", "reply", "on"}, {"get", "a"},
		{"set", "big", strings.Repeat("x", 100<<10)}, {"client", "reply", "skip"}, {"get", "big"},
		{"ping", "end"},
	}
	run := func(addr string) []string {
		rc := dialRaw(t, addr)
		var req strings.Builder
		for _, args := range script {
			req.WriteString(encode(args...))
		}
		rc.send(req.String())
		var got []string
		for len(got) < 100 {
			r := rc.reply()
			got = append(got, r)
			if strings.Contains(r, "end") {
				break
			}
		}
		return got
	}
	got, want := run(ours), run(theirs)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("ours\n%q\nvalkey-server\n%q", got, want)
	}
}

// TestDebugMatchesValkey compares DEBUG SLEEP's and SET-ACTIVE-EXPIRE's
// replies and errors with a valkey-server allowing DEBUG, and the switch
// SET-ACTIVE-EXPIRE sets.
func TestDebugMatchesValkey(t *testing.T) {
	theirs := testutil.StartValkey(t, "--enable-debug-command", "yes")
	srv, ours := startServer(t, nil)
	o, th := dialRaw(t, ours), dialRaw(t, theirs)
	for _, args := range [][]string{
		{"debug", "set-active-expire", "0"}, {"debug", "set-active-expire", "2"}, {"debug", "set-active-expire", "x"},
		{"debug", "set-active-expire"}, {"debug", "foo"}, {"debug"}, {"debug", "set-active-expire", "1"},
		{"debug", "sleep", "x"}, {"debug", "sleep", "0"}, {"debug", "sleep", "0.01"}, {"debug", "sleep"},
		{"debug", "sleep", "1", "2"},
	} {
		if g, w := o.do(args...), th.do(args...); g != w {
			t.Errorf("%q: ours %q, valkey-server %q", args, g, w)
		}
	}
	for _, c := range []struct {
		arg string
		off bool
	}{{"0", true}, {"1", false}, {"x", true}, {"-3", false}} {
		o.do("debug", "set-active-expire", c.arg)
		if srv.noActiveExpire.Load() != c.off {
			t.Errorf("DEBUG SET-ACTIVE-EXPIRE %s: active expiry off %v", c.arg, !c.off)
		}
	}
}
