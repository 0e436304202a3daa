package testutil

import (
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// TCPServer listens on a free loopback port and runs serve on each
// connection it accepts, on its own goroutine. When the test ends it
// closes the listener and every connection and waits for the goroutines.
func TCPServer(tb testing.TB, serve func(net.Conn)) *net.TCPAddr {
	tb.Helper()
	return NewServer(tb, serve).l.Addr().(*net.TCPAddr)
}

// Server is TCPServer's server, for a test that closes its connections
// (Kill) while it runs.
type Server struct {
	l     net.Listener
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns []net.Conn
}

// NewServer is TCPServer, returning the Server.
func NewServer(tb testing.TB, serve func(net.Conn)) *Server {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &Server{l: l}
	s.wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			s.wg.Go(func() { serve(c) })
		}
	})
	tb.Cleanup(func() {
		l.Close()
		s.Kill()
		s.wg.Wait()
	})
	return s
}

// Addr is the server's address, host:port.
func (s *Server) Addr() string { return s.l.Addr().String() }

// Kill closes every connection the server has accepted so far.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

// Echo writes back what it reads. (With plain read and write: the splice
// path of TCPConn.ReadFrom caches pipes until the next GC, which a
// descriptor count would take for a leak.)
func Echo(c net.Conn) {
	defer c.Close()
	io.CopyBuffer(struct{ io.Writer }{c}, struct{ io.Reader }{c}, make([]byte, 64<<10))
}

// LeakCheck fails the test if it ends with more goroutines than it
// started with (event loops included), or, with fds, more open
// descriptors. Call it first, so that its cleanup runs last.
func LeakCheck(t *testing.T, fds bool) {
	t.Helper()
	g := runtime.NumGoroutine()
	f := -1
	if fds {
		// The runtime's poller opens its descriptors with the first
		// network use, for good: have them open before counting.
		if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
			l.Close()
		}
		f = CountFDs(t)
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > g && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > g {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines left behind:\n%s", n-g, buf[:runtime.Stack(buf, true)])
		}
		if f >= 0 {
			if n := CountFDs(t); n > f {
				t.Errorf("%d file descriptors left open", n-f)
			}
		}
	})
}

// CountFDs counts the process's open file descriptors; it skips the test
// where /proc/self/fd cannot be read.
func CountFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count file descriptors: %v", err)
	}
	return len(ents)
}
