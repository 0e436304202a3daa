package pool

import (
	"context"
	"net"

	"github.com/seed54442f1a/rdmapool/qp"
)

// Network dials a Pool's connections: DialRDMA those over RDMA, DialTCP
// those over TCP. The Pool decides which to call (Policy, fallbacks,
// RDMARetryInterval) and counts, bounds and reports what they return; a
// Network only connects. With Options.Network nil, a Pool dials RDMA with
// qp.Dial and TCP with Options.TCPEngine; package
// pooltest has one in memory, so that tests of fallbacks, dial failures
// and limits need no network and no RDMA.
//
// ctx bounds each dial: when it ends, the dial returns and leaves nothing
// open. An error that says RDMA is unavailable (loader.ErrUnavailable,
// qp.ErrDeviceRemoved, or one matching syscall.ENODEV, ENOSYS,
// EHOSTUNREACH, EADDRNOTAVAIL, ENETUNREACH or ECONNREFUSED) makes Auto fall
// back to TCP; any other is the Get's error.
type Network interface {
	// DialRDMA connects to addr over RDMA; the Conn's Transport is RDMA.
	DialRDMA(ctx context.Context, addr string, opts *qp.Options) (Conn, error)
	// DialTCP connects to addr over TCP; the Conn's Transport is TCP. nd,
	// if not nil, has the dial's settings (LocalAddr, KeepAlive,
	// Control...) but not its Timeout or Deadline, which ctx replaces.
	DialTCP(ctx context.Context, addr string, nd *net.Dialer) (Conn, error)
}

// TCPEngine drives a Pool's TCP connections: it dials them, and what it
// returns runs them. The zero Options.TCPEngine (nil) is TCPNetpoll; the
// other engine, on gnet's event loops, is gnettcp.Engine, in package
// pool/gnettcp. It lives there, not here, so that a program that does not
// choose it does not link gnet and what gnet brings (ants, zap, multierr,
// lumberjack, bytebufferpool): an engine is a value that Options takes,
// not a name registered by an import, so the choice is written where it
// is made and checked by the compiler.
type TCPEngine interface {
	// DialTCP connects to addr over TCP as Network.DialTCP does: ctx
	// bounds the dial, nd (if not nil) has the dial's other settings, and
	// the Conn's Transport is TCP. Errors are *net.OpError values.
	DialTCP(ctx context.Context, addr string, nd *net.Dialer) (Conn, error)
	// String names the engine in reports: "netpoll", "gnet".
	String() string
}

// TCPNetpoll (the default) gives each connection the Go runtime's
// netpoller, as net.Dial does: a *net.TCPConn behind the Conn contract.
// On the client side it is the faster engine (design.md has the figures),
// and the kernel's receive window holds back a peer whose data is not
// read.
var TCPNetpoll TCPEngine = netpollEngine{}

type netpollEngine struct{}

func (netpollEngine) String() string { return "netpoll" }

func (netpollEngine) DialTCP(ctx context.Context, addr string, nd *net.Dialer) (Conn, error) {
	c, err := dialNetpoll(ctx, nd, addr)
	if err != nil {
		return nil, err // not a nil *netpollConn in a Conn
	}
	return c, nil
}

// netDefault is the Network of a Pool with no Options.Network.
type netDefault struct {
	engine TCPEngine // not nil
}

func (netDefault) DialRDMA(ctx context.Context, addr string, opts *qp.Options) (Conn, error) {
	c, err := qp.Dial(ctx, addr, opts)
	if err != nil {
		return nil, err
	}
	return rdmaConn{c}, nil
}

func (n netDefault) DialTCP(ctx context.Context, addr string, nd *net.Dialer) (Conn, error) {
	return n.engine.DialTCP(ctx, addr, nd)
}
