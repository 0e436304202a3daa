package pool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/seed54442f1a/rdmapool/qp"
)

// Network dials a Pool's connections: DialRDMA those over RDMA, DialTCP
// those over TCP. The Pool decides which to call (Policy, fallbacks,
// RDMARetryInterval) and counts, bounds and reports what they return; a
// Network only connects. With Options.Network nil, a Pool dials RDMA with
// qp.Dial and TCP with the engine Options.TCPEngine names; package
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

// TCPEngine chooses what drives a Pool's TCP connections.
type TCPEngine int

const (
	// TCPNetpoll (the default) gives each connection the Go runtime's
	// netpoller, as net.Dial does: a *net.TCPConn behind the Conn
	// contract. On the client side it is the faster engine (design.md has
	// the figures), and the kernel's receive window holds back a peer
	// whose data is not read.
	TCPNetpoll TCPEngine = iota
	// TCPGnet drives connections with the process's gnet event loops
	// (TCPConn).
	TCPGnet
)

func (e TCPEngine) String() string {
	switch e {
	case TCPNetpoll:
		return "netpoll"
	case TCPGnet:
		return "gnet"
	}
	return fmt.Sprintf("TCPEngine(%d)", int(e))
}

// ParseTCPEngine parses "netpoll" or "gnet".
func ParseTCPEngine(s string) (TCPEngine, error) {
	switch s {
	case "netpoll", "":
		return TCPNetpoll, nil
	case "gnet":
		return TCPGnet, nil
	}
	return 0, fmt.Errorf("unknown TCP engine %q (want netpoll or gnet)", s)
}

// netDefault is the Network of a Pool with no Options.Network.
type netDefault struct {
	engine TCPEngine
	tcp    tcpConfig // the gnet engine's connections' (tests)
}

func (netDefault) DialRDMA(ctx context.Context, addr string, opts *qp.Options) (Conn, error) {
	c, err := qp.Dial(ctx, addr, opts)
	if err != nil {
		return nil, err
	}
	return rdmaConn{c}, nil
}

func (n netDefault) DialTCP(ctx context.Context, addr string, nd *net.Dialer) (Conn, error) {
	if n.engine == TCPGnet {
		c, err := dialTCP(ctx, nd, addr, n.tcp)
		if err != nil {
			return nil, err // not a nil *TCPConn in a Conn
		}
		return c, nil
	}
	c, err := dialNetpoll(ctx, nd, addr)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// connectTCP connects with net.Dialer, nd's settings and ctx alone as its
// bound, which cancels the kernel's connect itself (no goroutine or socket
// outlives it).
func connectTCP(ctx context.Context, nd *net.Dialer, addr string) (*net.TCPConn, error) {
	var d net.Dialer
	if nd != nil {
		d = *nd
		d.Timeout, d.Deadline = 0, time.Time{}
	}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		// The net package reports a passed deadline as the context's error
		// or as the socket's (before the context has noticed), whichever
		// came first; match both.
		var oe *net.OpError
		var ne net.Error
		if errors.As(err, &oe) && errors.As(err, &ne) && ne.Timeout() && tcpDeadlinePassed(ctx) {
			oe.Err = tcpDialTimeout{}
		}
		return nil, err
	}
	return nc.(*net.TCPConn), nil
}
