package qp_test

import (
	"net"
	"testing"

	"golang.org/x/net/nettest"

	"github.com/seed54442f1a/rdmapool/qp"
)

// TestNetConn runs golang.org/x/net/nettest's net.Conn conformance suite
// over soft-RoCE: basic I/O, ping-pong, racing reads and writes, deadlines
// in the past, present and future, Close during I/O, and every method
// called concurrently (under the race detector in CI). Both ends are
// tested as the conn under test, the dialing client and the accepted
// server connection.
func TestNetConn(t *testing.T) {
	for _, side := range []string{"client", "server"} {
		t.Run(side, func(t *testing.T) {
			// A small receive buffer, so that the write-timeout cases fill
			// the peer's buffer quickly and writes wrap around it.
			e := newEnv(t, &qp.Options{RecvBufferSize: 16 << 10})
			nettest.TestConn(t, func() (c1, c2 net.Conn, stop func(), err error) {
				cli, srv, err := e.pairErr()
				if err != nil {
					return nil, nil, nil, err
				}
				stop = func() {
					cli.Close()
					srv.Close()
				}
				if side == "server" {
					return srv, cli, stop, nil
				}
				return cli, srv, stop, nil
			})
		})
	}
}
