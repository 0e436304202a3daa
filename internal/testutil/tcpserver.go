package testutil

import (
	"net"
	"sync"
	"testing"
)

// TCPServer listens on a free loopback port and runs serve on each
// connection it accepts, on its own goroutine. When the test ends it
// closes the listener and every connection and waits for the goroutines.
func TCPServer(tb testing.TB, serve func(net.Conn)) *net.TCPAddr {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() { serve(c) })
		}
	})
	tb.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return l.Addr().(*net.TCPAddr)
}
