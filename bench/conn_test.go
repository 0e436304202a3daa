package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/pool/gnettcp"
	"github.com/seed54442f1a/rdmapool/qp"
)

// transports are the connections compared: rdmapool's RDMA connection (a
// qp.Conn), its TCP connection over gnet (a gnettcp.Conn), and a plain
// net.Conn as the reference for TCP. Each dials an echo server of its kind
// in a child process.
var transports = []struct {
	name string
	dial func(b *testing.B) net.Conn
}{
	{"rdma", func(b *testing.B) net.Conn {
		rdmatest.Require(b)
		opts, err := rdmaOptions()
		if err != nil {
			b.Fatal(err)
		}
		addr := startEcho(b, "rdma "+rdmatest.Addr(b).String())
		c, err := qp.Dial(dialCtx(b), addr, opts)
		return closeLater(b, c, err)
	}},
	{"tcp", func(b *testing.B) net.Conn {
		c, err := gnettcp.Dial(dialCtx(b), startEcho(b, "tcp"))
		return closeLater(b, c, err)
	}},
	{"tcp-net.Conn", func(b *testing.B) net.Conn {
		var d net.Dialer
		c, err := d.DialContext(dialCtx(b), "tcp", startEcho(b, "tcp"))
		return closeLater(b, c, err)
	}},
}

func dialCtx(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Second)
	b.Cleanup(cancel)
	return ctx
}

func closeLater[C net.Conn](b *testing.B, c C, err error) net.Conn {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkConnRoundTrip: write a message, read its echo; one round trip
// per op, with its p50 and p99.
func BenchmarkConnRoundTrip(b *testing.B) {
	for _, tr := range transports {
		for _, size := range []int{64, 4 << 10} {
			b.Run(fmt.Sprintf("transport=%s/size=%d", tr.name, size), func(b *testing.B) {
				testutil.BenchRoundTrips(b, tr.dial(b), make([]byte, size), make([]byte, size))
			})
		}
	}
}

// BenchmarkConnPipelined: one goroutine writes 64-byte messages without
// waiting for answers while another reads the echoes; throughput in ops/s.
func BenchmarkConnPipelined(b *testing.B) {
	const size = 64
	for _, tr := range transports {
		b.Run("transport="+tr.name, func(b *testing.B) {
			c := tr.dial(b)
			b.ReportAllocs()
			b.SetBytes(size)
			b.ResetTimer()
			errc := make(chan error, 1)
			n := b.N
			go func() {
				msg := make([]byte, size)
				for range n {
					if _, err := c.Write(msg); err != nil {
						errc <- err
						return
					}
				}
				errc <- nil
			}()
			if _, err := io.CopyN(io.Discard, c, int64(n)*size); err != nil {
				b.Fatal(err)
			}
			if err := <-errc; err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}
