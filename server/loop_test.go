package server

import (
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Tests of how connections are served, on either TCP engine (TestMain runs
// them on both); the ones about the event loops alone say so.

// sendSplit writes req in pieces cut at the given offsets, pausing after
// each so that the server reads it on its own.
func (rc *rawClient) sendSplit(req string, cuts ...int) {
	rc.tb.Helper()
	from := 0
	for _, at := range append(cuts, len(req)) {
		if at <= from {
			continue
		}
		rc.send(req[from:at])
		from = at
		time.Sleep(200 * time.Microsecond)
	}
}

// TestSplitAtEveryByte: a pipeline of requests (multibulk and inline) cut
// in two at each byte, and in three around each pair of bytes, gets the
// same replies as when sent at once.
func TestSplitAtEveryByte(t *testing.T) {
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	req := encode("SET", "key", "value") + "PING\r\n" + encode("GET", "key") + "ECHO \"a b\"\r\n" + encode("DEL", "key")
	want := []string{"+OK\r\n", "+PONG\r\n", "$5\r\nvalue\r\n", "$3\r\na b\r\n", ":1\r\n"}
	check := func(cuts ...int) {
		t.Helper()
		rc.sendSplit(req, cuts...)
		for _, w := range want {
			if got := rc.reply(); got != w {
				t.Fatalf("cut at %v: reply %q, want %q", cuts, got, w)
			}
		}
	}
	for i := 1; i < len(req); i++ {
		check(i)
	}
	for i := 1; i+2 < len(req); i += 3 {
		check(i, i+1, i+2)
	}
}

// TestSplitBigArgument: a request with an argument long enough to get an
// allocation of its own (bigArg), cut around its header, inside it and at
// its end, as well as in many small pieces.
func TestSplitBigArgument(t *testing.T) {
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	v := strings.Repeat("0123456789", bigArg/10+7)
	set := encode("SET", "big", v)
	head := strings.Index(set, v)
	req := set + encode("STRLEN", "big") + encode("GET", "big")
	cuts := [][]int{
		{head - 3}, {head - 2}, {head - 1}, {head}, {head + 1},
		{head + len(v)/2}, {head + len(v) - 1}, {head + len(v)}, {head + len(v) + 1},
		{head - 1, head + 1, head + len(v) + 1},
	}
	var many []int
	for i := 1; i < len(req); i += 997 {
		many = append(many, i)
	}
	cuts = append(cuts, many)
	for _, c := range cuts {
		rc.sendSplit(req, c...)
		rc.expect("+OK\r\n")
		rc.expect(fmt.Sprintf(":%d\r\n", len(v)))
		rc.expect(fmt.Sprintf("$%d\r\n%s\r\n", len(v), v))
	}
}

// TestDeepPipeline: many requests in one write, whose replies are far
// more than the socket buffers hold, read while the client still writes.
func TestDeepPipeline(t *testing.T) {
	srv, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	val := strings.Repeat("x", 200)
	rc.expectReply(t, []string{"set", "k", val}, "+OK\r\n")
	const n = 50000
	req := strings.Repeat(encode("GET", "k")+"PING\r\n", n)
	done := make(chan error, 1)
	go func() {
		_, err := rc.c.Write([]byte(req))
		done <- err
	}()
	wantGet := fmt.Sprintf("$%d\r\n%s\r\n", len(val), val)
	for i := range n {
		if got := rc.reply(); got != wantGet {
			t.Fatalf("reply %d: %q", 2*i, got)
		}
		if got := rc.reply(); got != "+PONG\r\n" {
			t.Fatalf("reply %d: %q", 2*i+1, got)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := srv.Stats(); st.Commands < 2*n {
		t.Errorf("stats %+v", st)
	}
}

// TestUnreadRepliesHoldRequests: a client that sends requests for far
// more than the server should buffer, and reads nothing for a while,
// makes it hold its requests back, not its replies; once the client reads,
// every reply comes, in order.
func TestUnreadRepliesHoldRequests(t *testing.T) {
	_, addr := startServer(t, nil)
	rc := dialRaw(t, addr)
	const size, n = 1 << 20, 256 // 256 MiB of replies
	val := strings.Repeat("v", size)
	rc.expectReply(t, []string{"set", "big", val}, "+OK\r\n")
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.HeapInuse
	rc.send(strings.Repeat(encode("GET", "big"), n))
	time.Sleep(500 * time.Millisecond)
	runtime.ReadMemStats(&ms)
	if grown := int64(ms.HeapInuse) - int64(before); grown > 64<<20 {
		t.Errorf("the heap grew by %d MiB for replies not read", grown>>20)
	}
	want := fmt.Sprintf("$%d\r\n%s\r\n", size, val)
	for i := range n {
		if got := rc.reply(); got != want {
			t.Fatalf("reply %d: %d bytes", i, len(got))
		}
	}
	rc.expectReply(t, []string{"ping"}, "+PONG\r\n")
}

// TestPeerVanishes: a client that resets its connection in the middle of
// a request, of a large argument, or of a large reply, leaves nothing
// behind, and the server serves the others.
func TestPeerVanishes(t *testing.T) {
	srv, addr := startServer(t, nil)
	keep := dialRaw(t, addr)
	big := strings.Repeat("b", 4<<20)
	keep.expectReply(t, []string{"set", "big", big}, "+OK\r\n")
	before := runtime.NumGoroutine()
	for _, partial := range []string{
		"*3\r\n$3\r\nSET\r\n$1",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nval",
		"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1000000\r\n" + strings.Repeat("v", 300<<10),
		"PING", // an inline request without its newline
		strings.Repeat(encode("GET", "big"), 8),
	} {
		for _, reset := range []bool{false, true} {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write([]byte(partial)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
			if reset {
				c.(*net.TCPConn).SetLinger(0) // an RST, not a FIN
			}
			c.Close()
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for srv.Stats().Connections > 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if st := srv.Stats(); st.Connections != 1 {
		t.Errorf("stats: %+v", st)
	}
	keep.expectReply(t, []string{"strlen", "big"}, fmt.Sprintf(":%d\r\n", len(big)))
	keep.expectReply(t, []string{"exists", "k"}, ":0\r\n")
	checkGoroutines(t, before)
}

// TestCloseManyIdle: Close ends thousands of idle connections, some in
// the middle of a request, promptly, and leaves no goroutine.
func TestCloseManyIdle(t *testing.T) {
	before := runtime.NumGoroutine()
	srv := New(testOpts(nil))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	const n = 2000
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
		req := encode("PING")
		if i%3 == 0 {
			req += "*2\r\n$3\r\nGET\r\n" // and half of another
		}
		if _, err := c.Write([]byte(req)); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 16)
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := c.Read(buf); err != nil || string(buf[:n]) != "+PONG\r\n" {
			t.Fatalf("read %q, %v", buf[:n], err)
		}
	}
	if st := srv.Stats(); st.Connections != n {
		t.Errorf("stats before Close: %+v", st)
	}
	srv.Close()
	<-served
	if st := srv.Stats(); st.Connections != 0 {
		t.Errorf("stats after Close: %+v", st)
	}
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(buf); err == nil {
			t.Fatalf("a connection is still open after Close")
		}
	}
	checkGoroutines(t, before)
}

// TestEventLoopsIdleConnections: on the event loops, connections have no
// goroutine, and an idle one holds no buffer, also after a request that
// grew its buffers and one that arrived in pieces.
func TestEventLoopsIdleConnections(t *testing.T) {
	if testEngine != TCPGnet {
		t.Skip("the event loops' own")
	}
	srv, addr := startServer(t, nil)
	dialRaw(t, addr).expectReply(t, []string{"ping"}, "+PONG\r\n") // the loops run
	goBefore := runtime.NumGoroutine()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heapBefore := ms.HeapAlloc
	const n = 500
	conns := make([]net.Conn, n)
	buf := make([]byte, 64)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c
		req := encode("ECHO", "hello")
		if i%2 == 0 {
			c.Write([]byte(req[:7]))
			time.Sleep(50 * time.Microsecond)
			req = req[7:]
		}
		c.Write([]byte(req))
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := c.Read(buf); err != nil || string(buf[:n]) != "$5\r\nhello\r\n" {
			t.Fatalf("read %q, %v", buf[:n], err)
		}
	}
	if got := runtime.NumGoroutine() - goBefore; got > 10 {
		t.Errorf("%d more goroutines for %d connections", got, n)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	// Both ends are in this process: the client's net.Conn and the
	// server's conn, reader and gnet connection, about 2 KiB in all; a
	// buffer kept would be 16 KiB more.
	if per := (int64(ms.HeapAlloc) - int64(heapBefore)) / n; per > 6<<10 {
		t.Errorf("%d bytes of heap per idle connection", per)
	}
	if st := srv.Stats(); st.Connections != n+1 {
		t.Errorf("stats %+v", st)
	}
	// A large request grows buffers, which go when it is done: the heap
	// grows by about the value stored alone.
	runtime.GC()
	runtime.GC() // the second empties sync.Pool's victim cache
	runtime.ReadMemStats(&ms)
	heapBefore = ms.HeapAlloc
	rc := newRawClient(t, conns[0])
	const size = 1 << 20
	rc.expectReply(t, []string{"set", "v", strings.Repeat("x", size)}, "+OK\r\n")
	rc.expectReply(t, []string{"strlen", "v"}, fmt.Sprintf(":%d\r\n", size))
	time.Sleep(50 * time.Millisecond)
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if grown := int64(ms.HeapAlloc) - int64(heapBefore); grown > size+256<<10 {
		t.Errorf("the heap grew by %d KiB for a value of %d KiB", grown>>10, size>>10)
	}
}
