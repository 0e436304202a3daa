package pooltest

import (
	"context"
	"net"
	"testing"

	"golang.org/x/net/nettest"

	"github.com/seed54442f1a/rdmapool/pool"
)

// TestConn: the in-memory connections of both transports keep the net.Conn
// contract (golang.org/x/net/nettest's suite), with the server's end as
// the peer.
func TestConn(t *testing.T) {
	for _, tr := range []pool.Transport{pool.TCP, pool.RDMA} {
		t.Run(string(tr), func(t *testing.T) {
			l := NewListener()
			defer l.Close()
			n := New(l.Serve)
			defer n.Close()
			nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
				ctx := context.Background()
				var c pool.Conn
				if tr == pool.RDMA {
					c, err = n.DialRDMA(ctx, "10.0.0.1:1", nil)
				} else {
					c, err = n.DialTCP(ctx, "10.0.0.1:1", nil)
				}
				if err != nil {
					return nil, nil, nil, err
				}
				peer, err := l.Accept()
				if err != nil {
					c.Close()
					return nil, nil, nil, err
				}
				return c, peer, func() { c.Close(); peer.Close() }, nil
			})
		})
	}
}
