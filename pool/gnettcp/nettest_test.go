package gnettcp

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"golang.org/x/net/nettest"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// TestNetConnTCP: a Conn under golang.org/x/net/nettest's net.Conn
// conformance suite (basic I/O, racing reads and writes, deadlines in the
// past, present and future, Close during I/O, every method called
// concurrently), with both write modes. The peer, c2, is a plain accepted
// net.Conn. Package pool runs the suite over a Pool's and a Dialer's
// connections on this engine too (TestNetConnPooled).
func TestNetConnTCP(t *testing.T) {
	tcpBothWriteModes(t, func(t *testing.T) {
		testutil.LeakCheck(t, false)
		accepted := make(chan net.Conn, 1)
		s := testutil.NewServer(t, func(c net.Conn) { accepted <- c })
		nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, err := dialTCP(ctx, nil, s.Addr(), tcpTest)
			if err != nil {
				return nil, nil, nil, err
			}
			select {
			case peer := <-accepted:
				return c, peer, func() { c.Close(); peer.Close() }, nil
			case <-ctx.Done():
				c.Close()
				return nil, nil, nil, errors.New("the server accepted no connection")
			}
		})
	})
}
