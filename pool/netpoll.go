package pool

import (
	"context"
	"net"
	"syscall"

	"github.com/seed54442f1a/rdmapool/internal/tcpdial"
)

// netpollConn is a *net.TCPConn as a Conn (engine TCPNetpoll): every
// method is the net package's, and Healthy peeks at the socket.
type netpollConn struct {
	*net.TCPConn
	raw  syscall.RawConn // kept: SyscallConn allocates
	peek func(fd uintptr) bool
	idle bool    // the last peek found the socket open with nothing to read
	pfd  pollSet // peekFD's (fd_unix.go)
}

var (
	_ Conn          = (*netpollConn)(nil)
	_ HealthChecker = (*netpollConn)(nil)
	_ syscall.Conn  = (*netpollConn)(nil)
)

func dialNetpoll(ctx context.Context, nd *net.Dialer, addr string) (*netpollConn, error) {
	tc, err := tcpdial.Connect(ctx, nd, addr)
	if err != nil {
		return nil, err
	}
	return newNetpoll(tc)
}

// NewTCPConn is the Conn of engine TCPNetpoll on a connection made
// elsewhere, for a Network or a TCPEngine that connects its own sockets
// (package gnettcp's connections move to one when their unread data
// passes a bound). The Conn also implements HealthChecker and
// syscall.Conn. On error, tc is closed.
func NewTCPConn(tc *net.TCPConn) (Conn, error) {
	c, err := newNetpoll(tc)
	if err != nil {
		return nil, err // not a nil *netpollConn in a Conn
	}
	return c, nil
}

func newNetpoll(tc *net.TCPConn) (*netpollConn, error) {
	raw, err := tc.SyscallConn()
	if err != nil {
		tc.Close()
		return nil, err
	}
	c := &netpollConn{TCPConn: tc, raw: raw}
	c.peek = c.peekFD // bound once: Healthy allocates nothing
	return c, nil
}

// Transport reports TCP.
func (*netpollConn) Transport() Transport { return TCP }

// SyscallConn returns the socket's syscall.RawConn, one for the
// connection's life (net.TCPConn's allocates one per call, and go-redis
// asks for one each time it takes a connection from its pool).
func (c *netpollConn) SyscallConn() (syscall.RawConn, error) { return c.raw, nil }

// Healthy reports, without blocking, whether the socket is open, its peer
// has not closed it, and nothing waits to be read: poll(2) with no wait
// finds it neither readable nor hung up (a MSG_PEEK would answer the same,
// but unix.Recvfrom allocates). The pool calls it on an idle connection
// only, so no Read runs at the same time.
func (c *netpollConn) Healthy() bool {
	c.idle = false
	if err := c.raw.Read(c.peek); err != nil {
		return false
	}
	return c.idle
}
