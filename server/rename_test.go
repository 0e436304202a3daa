package server

import (
	"strconv"
	"sync"
	"testing"
)

// TestRenameConcurrent: RENAMEs both ways between two keys of different
// shards, with MOVEs and EXECs on the same keys, neither deadlock nor lose
// the value: at the end exactly one of the keys holds it.
func TestRenameConcurrent(t *testing.T) {
	srv, addr := startServer(t, nil)
	a, b := "a", "b"
	for i := 0; srv.ks.shard([]byte(a)) == srv.ks.shard([]byte(b)); i++ {
		b = "b" + strconv.Itoa(i)
	}
	dialRaw(t, addr).do("set", a, "v")
	const rounds = 2000
	var wg sync.WaitGroup
	for _, pair := range [][2]string{{a, b}, {b, a}} {
		wg.Go(func() {
			rc := dialRaw(t, addr)
			for range rounds {
				if got := rc.do("rename", pair[0], pair[1]); got != "+OK\r\n" && got != "-ERR no such key\r\n" {
					t.Errorf("RENAME %s %s = %q", pair[0], pair[1], got)
					return
				}
			}
		})
	}
	wg.Go(func() { // a transaction on both keys' shards, and MOVE there and back
		rc := dialRaw(t, addr)
		for range rounds / 4 {
			rc.send(encode("multi") + encode("renamenx", a, b) + encode("exists", a, b) + encode("exec"))
			for range 3 {
				rc.reply()
			}
			if got := rc.reply(); got != "*2\r\n:0\r\n:1\r\n" && got != "*2\r\n:1\r\n:1\r\n" && got != "*2\r\n-ERR no such key\r\n:1\r\n" {
				t.Errorf("EXEC = %q", got)
				return
			}
			if rc.do("move", b, "1") == ":1\r\n" {
				rc.do("select", "1")
				rc.do("move", b, "0")
				rc.do("select", "0")
			}
		}
	})
	wg.Wait()
	rc := dialRaw(t, addr)
	if got := rc.do("exists", a, b); got != ":1\r\n" {
		t.Errorf("EXISTS a b = %q at the end, want 1", got)
	}
	if got := rc.do("mget", a, b); got != "*2\r\n$1\r\nv\r\n$-1\r\n" && got != "*2\r\n$-1\r\n$1\r\nv\r\n" {
		t.Errorf("MGET a b = %q at the end", got)
	}
}

// TestRenameWatch: RENAME changes both keys for WATCH, as valkey's
// signalModifiedKey on each; a RENAMENX that does nothing changes neither.
func TestRenameWatch(t *testing.T) {
	_, addr := startServer(t, nil)
	x, y := dialRaw(t, addr), dialRaw(t, addr)
	for _, tc := range []struct {
		watch, cmd []string
		changed    bool
	}{
		{[]string{"watch", "src"}, []string{"rename", "src", "dst"}, true},
		{[]string{"watch", "dst"}, []string{"rename", "src", "dst"}, true},
		{[]string{"watch", "dst"}, []string{"renamenx", "src", "dst"}, false},
		{[]string{"watch", "src"}, []string{"rename", "src", "src"}, false},
	} {
		x.do("flushall")
		x.do("set", "src", "1")
		if !tc.changed {
			x.do("set", "dst", "2")
		}
		x.do(tc.watch...)
		y.do(tc.cmd...)
		x.do("multi")
		x.do("ping")
		got := x.do("exec")
		if changed := got == "*-1\r\n"; changed != tc.changed {
			t.Errorf("%q after %q: EXEC = %q, want a change seen: %v", tc.cmd, tc.watch, got, tc.changed)
		}
	}
}
