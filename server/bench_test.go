package server

import (
	"bytes"
	"net"
	"runtime"
	"strings"
	"testing"
)

// Benchmarks over loopback TCP with a client that allocates nothing, so
// that allocs/op are the server's. An op is sent alone and waited for
// (depth=1), or in a pipeline of 100 ops (depth=100).

// pipeClient sends a fixed request and reads a reply of known length.
type pipeClient struct {
	c     net.Conn
	req   []byte
	reply int
	buf   []byte
}

func newPipeClient(tb testing.TB, addr string, cmd string, reply string, depth int) *pipeClient {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return &pipeClient{c: c, req: []byte(strings.Repeat(cmd, depth)), reply: len(reply) * depth, buf: make([]byte, 64<<10)}
}

func (p *pipeClient) roundTrip(tb testing.TB) {
	if _, err := p.c.Write(p.req); err != nil {
		tb.Fatal(err)
	}
	for n := 0; n < p.reply; {
		m, err := p.c.Read(p.buf[:min(len(p.buf), p.reply-n)])
		if err != nil {
			tb.Fatal(err)
		}
		n += m
	}
}

func benchCommands(b *testing.B, setup, cmd, reply string) {
	for _, depth := range []int{1, 100} {
		b.Run("depth="+itoa(depth), func(b *testing.B) {
			_, addr := startServer(b, nil)
			if setup != "" {
				rc := dialRaw(b, addr)
				rc.send(setup)
				rc.reply()
			}
			p := newPipeClient(b, addr, cmd, reply, depth)
			p.roundTrip(b) // warm up the buffers
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += depth {
				p.roundTrip(b)
			}
		})
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + string(rune('0'+n%10))
}

func BenchmarkServerPing(b *testing.B) {
	benchCommands(b, "", encode("PING"), "+PONG\r\n")
}

// BenchmarkServerSetGet: an op is a SET of a 16-byte value followed by a
// GET of it (two commands: the allocation is the SET's stored copy).
func BenchmarkServerSetGet(b *testing.B) {
	v := "0123456789abcdef"
	benchCommands(b, encode("SET", "key:1", v), encode("SET", "key:1", v)+encode("GET", "key:1"),
		"+OK\r\n$16\r\n"+v+"\r\n")
}

// TestAllocsPerCommand measures the allocations per command in steady
// state: none for PING and GET, one (the stored copy of the value) for a SET
// of an existing key.
func TestAllocsPerCommand(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts differ under the race detector")
	}
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	rc.expectReply(t, []string{"set", "key:1", "v"}, "+OK\r\n")
	rc.expectReply(t, []string{"rpush", "list", "last"}, ":1\r\n")
	v := strings.Repeat("v", 100)
	end := []byte(encode("ECHO", "end!"))
	for _, tc := range []struct {
		name, cmd, reply string
		n                int     // commands in cmd
		max              float64 // allocations per command
	}{
		{"PING", encode("PING"), "+PONG\r\n", 1, 0.01},
		{"PING inline", "PING\r\n", "+PONG\r\n", 1, 0.01},
		{"GET", encode("GET", "key:1"), "$1\r\nv\r\n", 1, 0.01},
		{"GET missing", encode("GET", "nokey"), "$-1\r\n", 1, 0.01},
		{"SET", encode("SET", "key:1", v), "+OK\r\n", 1, 1.01},
		{"INCR", encode("INCR", "counter"), "", 1, 1.01},
		{"LPUSH+LPOP", encode("LPUSH", "list", v) + encode("LPOP", "list"), "", 2, 0.51},
	} {
		p := newPipeClient(t, addr, tc.cmd, tc.reply, 100)
		if tc.reply == "" {
			p.reply = 0 // variable length: read after the write below
		}
		run := func() {
			if p.reply > 0 {
				p.roundTrip(t)
				return
			}
			// Replies of varying length: send, then ask for a known one.
			p.c.Write(p.req)
			p.c.Write(end)
			for {
				n, err := p.c.Read(p.buf)
				if err != nil {
					t.Fatal(err)
				}
				if bytes.HasSuffix(p.buf[:n], []byte("$4\r\nend!\r\n")) {
					break
				}
			}
		}
		for range 10 {
			run()
		}
		const rounds = 200
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range rounds {
			run()
		}
		runtime.ReadMemStats(&after)
		per := float64(after.Mallocs-before.Mallocs) / float64(rounds*100*tc.n)
		t.Logf("%s: %.3f allocations per command", tc.name, per)
		if per > tc.max {
			t.Errorf("%s: %.3f allocations per command, want at most %.2f", tc.name, per, tc.max)
		}
	}
}
