package pooltest

import (
	"context"
	"net"
	"sync"
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
			peers := make(chan net.Conn, 1)
			n := New(func(c net.Conn) {
				cs := &closeSignal{Conn: c, done: make(chan struct{})}
				peers <- cs
				<-cs.done
			})
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
				peer := <-peers
				return c, peer, func() { c.Close(); peer.Close() }, nil
			})
		})
	}
}

// closeSignal lets serve return once the test has closed the server's end.
type closeSignal struct {
	net.Conn
	done chan struct{}
	once sync.Once
}

func (c *closeSignal) Close() error {
	c.once.Do(func() { close(c.done) })
	return c.Conn.Close()
}
