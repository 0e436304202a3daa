package server

import (
	"bufio"
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// TestCommandTable: every row of the command table says its arity,
// flags, keys (or that it has none), ACL categories and docs, and can run.
// A container (CLIENT, CONFIG, CLUSTER) has no flags of its own, as in
// valkey, and runs nothing itself: its subcommands do.
func TestCommandTable(t *testing.T) {
	for _, cmd := range commandTable() {
		top := commands[cmd.name]
		container := top != nil && top.subs != nil && top.run == nil
		switch {
		case cmd.name != strings.ToLower(cmd.name):
			t.Errorf("%s: name not in lower case", cmd.name)
		case cmd.arity == 0:
			t.Errorf("%s: no arity", cmd.name)
		case cmd.flags == 0 && !container:
			t.Errorf("%s: no flags", cmd.name)
		case cmd.acl == 0:
			t.Errorf("%s: no ACL categories", cmd.name)
		case !cmd.keys.none && (cmd.keys.first <= 0 || cmd.keys.step <= 0 || cmd.keys.flags == 0):
			t.Errorf("%s: keys %+v: neither a key range nor noKeys", cmd.name, cmd.keys)
		case cmd.keys.none && cmd.keys != noKeys:
			t.Errorf("%s: noKeys with a key range", cmd.name)
		case cmd.doc.group == "" || cmd.doc.since == "" || cmd.doc.summary == "":
			t.Errorf("%s: docs incomplete: %+v", cmd.name, cmd.doc)
		case cmd.run == nil && !container:
			t.Errorf("%s: nothing to run", cmd.name)
		case cmd.flags&fWrite != 0 && cmd.flags&fReadonly != 0:
			t.Errorf("%s: both write and readonly", cmd.name)
		}
	}
}

// elements splits an aggregate reply into its elements' replies (a map's
// keys and values alike); nil if reply is no aggregate.
func elements(tb testing.TB, reply string) []string {
	tb.Helper()
	if reply == "" || !strings.ContainsRune("*%~", rune(reply[0])) {
		return nil
	}
	r := bufio.NewReader(strings.NewReader(reply))
	head, _ := r.ReadString('\n')
	n := 0
	for _, ch := range head[1 : len(head)-2] {
		n = n*10 + int(ch-'0')
	}
	if head[0] == '%' {
		n *= 2
	}
	out := make([]string, n)
	for i := range out {
		var b bytes.Buffer
		if err := readReply(r, &b); err != nil {
			tb.Fatalf("reply %q: %v", reply, err)
		}
		out[i] = b.String()
	}
	return out
}

// TestCommandInfoMatchesValkey compares COMMAND INFO of every row with
// valkey-server 8.0's, in RESP2 and RESP3: byte for byte for a command
// without subcommands (name, arity, flags, first and last key, step, ACL
// categories, tips, key specs); the first seven fields, and that valkey
// has each of ours, for a container (valkey has more subcommands, in
// another order).
func TestCommandInfoMatchesValkey(t *testing.T) {
	theirs := testutil.ValkeyServer(t)
	_, ours := startServer(t, nil)
	for _, proto := range []string{"2", "3"} {
		a, b := dialRaw(t, ours), dialRaw(t, theirs)
		a.do("hello", proto)
		b.do("hello", proto)
		// A few at once, as clients ask.
		multi := []string{"command", "info", "GET", "set", "mset", "nosuch", "client|setname"}
		if got, want := a.do(multi...), b.do(multi...); got != want {
			t.Errorf("RESP%s %q: %s", proto, multi, diff(got, want))
		}
		for _, cmd := range commandTable() {
			got, want := a.do("command", "info", cmd.name), b.do("command", "info", cmd.name)
			if c := commands[cmd.name]; c == nil || c.subs == nil {
				if got != want {
					t.Errorf("RESP%s COMMAND INFO %s: %s", proto, cmd.name, diff(got, want))
				}
				continue
			}
			g, w := elements(t, elements(t, got)[0]), elements(t, elements(t, want)[0])
			if len(g) != 10 || len(w) != 10 {
				t.Fatalf("RESP%s COMMAND INFO %s: %d and %d fields", proto, cmd.name, len(g), len(w))
			}
			if !slices.Equal(g[:7], w[:7]) {
				t.Errorf("RESP%s COMMAND INFO %s:\n ours %q\n valkey-server %q", proto, cmd.name, g[:7], w[:7])
			}
			theirSubs := map[string]string{}
			for _, s := range elements(t, w[9]) {
				theirSubs[elements(t, s)[0]] = s
			}
			for _, s := range elements(t, g[9]) {
				if name := elements(t, s)[0]; theirSubs[name] != s {
					t.Errorf("RESP%s COMMAND INFO %s: subcommand\n ours %q\n valkey-server %q", proto, cmd.name, s, theirSubs[name])
				}
			}
		}
	}
}

// TestCommandSubcommands compares the rest of COMMAND with valkey-server:
// COUNT, LIST (with each filter), DOCS (the fields we give), GETKEYS,
// GETKEYSANDFLAGS and the errors, limited to the commands we have.
func TestCommandSubcommands(t *testing.T) {
	theirs := testutil.ValkeyServer(t)
	_, ours := startServer(t, nil)
	a, b := dialRaw(t, ours), dialRaw(t, theirs)

	var names, top []string
	for _, cmd := range commandTable() {
		names = append(names, cmd.name)
		if !strings.Contains(cmd.name, "|") {
			top = append(top, cmd.name)
		}
	}
	ourName := func(n string) bool { return slices.Contains(names, n) }
	if got := a.do("command", "count"); got != ":"+strconv.Itoa(len(top))+"\r\n" {
		t.Errorf("COMMAND COUNT = %q, want %d", got, len(top))
	}
	for _, filter := range [][]string{nil, {"filterby", "aclcat", "fast"}, {"filterby", "ACLCAT", "keyspace"},
		{"filterby", "aclcat", "nosuch"}, {"filterby", "pattern", "c*"}, {"filterby", "pattern", "*|*"},
		{"filterby", "module", "x"}} {
		args := append([]string{"command", "list"}, filter...)
		got := elements(t, a.do(args...))
		var want []string
		for _, n := range elements(t, b.do(args...)) {
			if ourName(n[strings.Index(n, "\n")+1 : len(n)-2]) {
				want = append(want, n)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%q:\n ours %q\n valkey-server's that we have %q", args, got, want)
		}
		if filter == nil && len(got) != len(names) {
			t.Errorf("COMMAND LIST: %d names, want %d", len(got), len(names))
		}
	}
	for _, args := range [][]string{
		{"command", "list", "filterby", "nosuch", "x"}, {"command", "list", "x"},
		{"command", "list", "filterby", "aclcat"},
		{"command", "getkeys", "get", "k"}, {"command", "getkeys", "mset", "a", "1", "b", "2"},
		{"command", "getkeys", "del", "a", "b", "c"}, {"command", "getkeys", "set", "k", "v", "get"},
		{"command", "getkeys", "ping"}, {"command", "getkeys", "get"}, {"command", "getkeys", "nosuch", "x"},
		{"command", "getkeys", "client", "setname", "x"}, {"command", "getkeys", "watch", "a", "b"},
		{"command", "getkeysandflags", "mset", "a", "1"}, {"command", "getkeysandflags", "lpop", "l", "2"},
		{"command", "getkeysandflags", "rename", "a", "b"}, {"command", "getkeysandflags", "renamenx", "a", "b"},
		{"command", "getkeys", "rename", "a", "b"},
		{"command", "getkeys", "zunionstore", "d", "2", "a", "b", "weights", "1", "2"},
		{"command", "getkeysandflags", "zunionstore", "d", "2", "a", "b"},
		{"command", "getkeys", "zunion", "3", "a", "b", "c"}, {"command", "getkeys", "zunion", "x", "a"},
		{"command", "getkeys", "zunion", "5", "a"}, {"command", "getkeys", "sintercard", "0", "a"},
		{"command", "getkeysandflags", "sintercard", "2", "a", "b", "limit", "1"},
		{"command", "getkeysandflags", "smove", "a", "b", "m"}, {"command", "getkeysandflags", "sunionstore", "d", "a", "b"},
		{"command", "getkeys", "sort", "k"}, {"command", "getkeysandflags", "sort", "k", "store", "d", "get", "store", "store", "e"},
		{"command", "getkeys", "sort", "k", "limit", "store", "1", "by", "store", "store"},
		{"command", "getkeysandflags", "sort_ro", "k", "by", "x*"},
		{"command", "getkeys"}, {"command", "nosuch"}, {"command", "count", "x"},
		{"command", "docs", "nosuch"}, {"command", "help"},
	} {
		if got, want := a.do(args...), b.do(args...); got != want {
			t.Errorf("%q:\n ours %q\n valkey-server %q", args, got, want)
		}
	}
	// COMMAND DOCS: a map with the summary, since and group valkey gives,
	// and for a container its subcommands'.
	for _, proto := range []string{"2", "3"} {
		a.do("hello", proto)
		b.do("hello", proto)
		got := elements(t, a.do(append([]string{"command", "docs"}, top...)...))
		want := map[string]map[string]string{}
		w := elements(t, b.do(append([]string{"command", "docs"}, top...)...))
		for i := 0; i < len(w); i += 2 {
			want[w[i]] = pairs(t, w[i+1])
		}
		if len(got) != 2*len(top) {
			t.Fatalf("RESP%s COMMAND DOCS: %d elements, want %d", proto, len(got), 2*len(top))
		}
		for i := 0; i < len(got); i += 2 {
			g := pairs(t, got[i+1])
			for _, field := range []string{"summary", "since", "group"} {
				if g[field] == "" || g[field] != want[got[i]][field] {
					t.Errorf("RESP%s COMMAND DOCS %s: %s %q, valkey-server %q", proto, got[i], field, g[field], want[got[i]][field])
				}
			}
		}
	}
}

// pairs reads a map reply (an array of pairs in RESP2) of bulk keys.
func pairs(tb testing.TB, reply string) map[string]string {
	e := elements(tb, reply)
	m := map[string]string{}
	for i := 0; i+1 < len(e); i += 2 {
		m[e[i][strings.Index(e[i], "\n")+1:len(e[i])-2]] = e[i+1]
	}
	return m
}

// diff shows where ours and valkey-server's replies part.
func diff(ours, theirs string) string {
	i := 0
	for i < len(ours) && i < len(theirs) && ours[i] == theirs[i] {
		i++
	}
	from := max(0, i-60)
	return fmt.Sprintf("from byte %d:\n ours          %q\n valkey-server %q", i, ours[from:min(len(ours), i+60)], theirs[from:min(len(theirs), i+60)])
}
