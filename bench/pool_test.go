package bench

import (
	"context"
	"io"
	"testing"

	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/pool"
	"github.com/seed54442f1a/rdmapool/pool/gnettcp"
)

// BenchmarkPoolGetPut: take an idle connection from a pool (its health
// check included) and give it back, over each transport.
func BenchmarkPoolGetPut(b *testing.B) {
	for _, tr := range []struct {
		name string
		opts func(b *testing.B) pool.Options
	}{
		{"rdma", func(b *testing.B) pool.Options {
			rdmatest.Require(b)
			return pool.Options{Addr: startEcho(b, "rdma "+rdmatest.Addr(b).String()), Policy: pool.RDMAOnly}
		}},
		{"tcp", func(b *testing.B) pool.Options {
			return pool.Options{Addr: startEcho(b, "tcp"), Policy: pool.TCPOnly}
		}},
	} {
		b.Run("transport="+tr.name, func(b *testing.B) {
			p, err := pool.New(tr.opts(b))
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			ctx := context.Background()
			c, err := p.Get(ctx)
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
			b.ReportAllocs()
			for b.Loop() {
				c, err := p.Get(ctx)
				if err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
		})
	}
}

// TestEchoServer: the child echo server the benchmarks use starts, echoes
// and stops (over TCP; RDMA's is exercised by the benchmarks in the VM).
func TestEchoServer(t *testing.T) {
	c, err := gnettcp.Dial(t.Context(), startEcho(t, "tcp"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "ping" {
		t.Fatalf("echo: %q, %v", got, err)
	}
}
