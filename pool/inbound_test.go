package pool

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestTCPInboundBounded: a peer sends 256 MiB to a connection nobody
// reads. On TCPNetpoll the kernel's window stops it after a few MiB; on
// TCPGnet, which reads whatever arrives, the connection is closed past
// tcpMaxInbound, and Read returns what was buffered, then ErrInboundLimit.
// Either way the process does not hold the 256 MiB.
func TestTCPInboundBounded(t *testing.T) {
	const total = 256 << 20
	for _, eng := range []TCPEngine{TCPNetpoll, TCPGnet} {
		t.Run(eng.String(), func(t *testing.T) {
			var sent atomic.Int64
			done := make(chan struct{})
			s := newTCPServer(t, func(c net.Conn) {
				defer close(done)
				defer c.Close()
				chunk := make([]byte, 1<<20)
				for sent.Load() < total {
					n, err := c.Write(chunk)
					sent.Add(int64(n))
					if err != nil {
						return
					}
				}
			})
			runtime.GC()
			rss0 := vmRSS(t)
			var m0 runtime.MemStats
			runtime.ReadMemStats(&m0)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := netDefault{engine: eng}.DialTCP(ctx, s.addr(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			// Until the peer finishes (the connection closed under it) or
			// stops (the kernel's window is full): a slow machine, the VM
			// under emulation, may take many seconds to send 64 MiB.
			for last, still, deadline := int64(-1), 0, time.Now().Add(60*time.Second); ; {
				select {
				case <-done:
				case <-time.After(100 * time.Millisecond):
					if n := sent.Load(); n != last {
						last, still = n, 0
						if time.Now().Before(deadline) {
							continue
						}
						t.Fatalf("the peer was still sending after 60 s (%d MiB)", n>>20)
					}
					if still++; still < 10 {
						continue
					}
				}
				break
			}
			rss1 := vmRSS(t)
			runtime.GC() // the heap's live bytes, not the garbage of a growing buffer
			var m1 runtime.MemStats
			runtime.ReadMemStats(&m1)
			grew := int64(m1.HeapInuse) - int64(m0.HeapInuse)
			t.Logf("%s: peer sent %d MiB; live heap grew %d MiB; RSS %d -> %d MiB", eng, sent.Load()>>20, grew>>20, rss0>>20, rss1>>20)
			if grew > tcpMaxInbound+tcpMaxInbound/2 {
				t.Errorf("the heap grew by %d MiB", grew>>20)
			}
			switch eng {
			case TCPNetpoll:
				if sent.Load() > 64<<20 {
					t.Errorf("the peer sent %d MiB to a connection nobody reads", sent.Load()>>20)
				}
			case TCPGnet:
				n, err := io.Copy(io.Discard, c)
				if !errors.Is(err, ErrInboundLimit) || n < tcpMaxInbound-(1<<20) || n > tcpMaxInbound {
					t.Errorf("read %d MiB, then %v; want about %d MiB, then ErrInboundLimit", n>>20, err, tcpMaxInbound>>20)
				}
			}
		})
	}
}

// vmRSS is the process's resident set, in bytes, or 0 where /proc has none.
func vmRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmRSS:" {
			var kb int64
			for _, d := range f[1] {
				kb = kb*10 + int64(d-'0')
			}
			return kb << 10
		}
	}
	return 0
}
