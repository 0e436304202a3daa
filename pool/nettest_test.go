package pool

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/net/nettest"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/qp"
)

// The pool's connections under golang.org/x/net/nettest's net.Conn
// conformance suite: basic I/O, racing reads and writes, deadlines in the
// past, present and future, Close during I/O, and every method called
// concurrently (under the race detector in CI). The peer, c2, is a plain
// accepted connection: net's on TCP, qp's on RDMA.

// TestNetConnPooled: a PooledConn, as Get hands it out (with Discard for
// Close), over each TCP engine (testEngines) and, where this machine has an RDMA device,
// over RDMA; and a Dialer's connection, as a client library gets it.
func TestNetConnPooled(t *testing.T) {
	for _, eng := range testEngines {
		t.Run("tcp-"+eng.String(), func(t *testing.T) {
			peers := newPeerServer(t)
			p := newPool(t, Options{Addr: peers.Addr(), Policy: TCPOnly, TCPEngine: eng})
			nettest.TestConn(t, pipe(pooled(p), peers.accept))
		})
		t.Run("dialer-"+eng.String(), func(t *testing.T) {
			peers := newPeerServer(t)
			d := &Dialer{Options: Options{Policy: TCPOnly, TCPEngine: eng}}
			defer d.Close()
			dial := func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", peers.Addr()) }
			nettest.TestConn(t, pipe(dial, peers.accept))
		})
	}
	t.Run("rdma", func(t *testing.T) {
		rdmatest.Require(t)
		opts := &qp.Options{RecvBufferSize: 16 << 10}
		l, err := qp.Listen(netip.AddrPortFrom(rdmatest.Addr(t), 0).String(), opts)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		p := newPool(t, Options{Addr: l.Addr().String(), Policy: RDMAOnly, RDMA: opts})
		nettest.TestConn(t, pipe(pooled(p), func(ctx context.Context) (net.Conn, error) { return l.AcceptConn(ctx) }))
	})
}

// pipe makes the suite's pipes: c1 from dial, c2 its peer from accept.
func pipe(dial, accept func(context.Context) (net.Conn, error)) nettest.MakePipe {
	return func() (c1, c2 net.Conn, stop func(), err error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := dial(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		peer, err := accept(ctx)
		if err != nil {
			c.Close()
			return nil, nil, nil, err
		}
		return c, peer, func() { c.Close(); peer.Close() }, nil
	}
}

// pooled dials by p.Get, with Discard for Close: the suite expects Close
// to close the connection (its peer to see EOF, pending calls to return),
// where a PooledConn's Close may hand the connection back to the pool for
// the next Get, which would hand it out again with its peer gone.
func pooled(p *Pool) func(context.Context) (net.Conn, error) {
	return func(ctx context.Context) (net.Conn, error) {
		c, err := p.Get(ctx)
		if err != nil {
			return nil, err
		}
		return discardOnClose{c}, nil
	}
}

type discardOnClose struct{ PooledConn }

func (c discardOnClose) Close() error { return c.Discard() }

// peerServer hands each accepted TCP connection to accept.
type peerServer struct {
	*testutil.Server
	accepted chan net.Conn
}

func newPeerServer(t *testing.T) *peerServer {
	t.Helper()
	ps := &peerServer{accepted: make(chan net.Conn, 1)}
	ps.Server = testutil.NewServer(t, func(c net.Conn) { ps.accepted <- c })
	return ps
}

// accept returns the next connection the server accepted.
func (ps *peerServer) accept(ctx context.Context) (net.Conn, error) {
	select {
	case c := <-ps.accepted:
		return c, nil
	case <-ctx.Done():
		return nil, errors.New("the server accepted no connection")
	}
}
