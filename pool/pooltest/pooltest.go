// Package pooltest has an in-memory pool.Network, so that a test decides
// how every dial ends (connected, a fallback reason, refused, hung) on any
// machine, with or without RDMA.
package pooltest

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/seed54442f1a/rdmapool/loader"
	"github.com/seed54442f1a/rdmapool/pool"
	"github.com/seed54442f1a/rdmapool/qp"
)

// Network is an in-memory pool.Network. Each dial that connects makes a
// pipe (net.Pipe: synchronous, with deadlines) and runs serve on its far
// end, on a goroutine of its own; when serve returns, that end is closed.
// A connection dialled as RDMA implements pool.ZeroCopyReader and
// pool.ZeroCopyWriter (by copying) and pool.HealthChecker, as qp.Conn
// does; one dialled as TCP implements pool.HealthChecker.
//
// By default every dial connects; OnDial changes that per transport.
type Network struct {
	serve func(net.Conn)

	mu     sync.Mutex
	onDial map[pool.Transport]DialFunc
	dials  map[pool.Transport]int
	ends   map[*end]struct{} // server ends open
	closed bool
	wg     sync.WaitGroup
	open   atomic.Int32
}

// DialFunc decides a dial: its error, if not nil, is the dial's (a
// *net.OpError with no Net gets the transport's). It may block, within
// ctx; one that returns nil after ctx has ended connects all the same, as
// a connect that completes as it is cancelled does.
type DialFunc func(ctx context.Context, addr string) error

var _ pool.Network = (*Network)(nil)

// New returns a Network whose connections serve answers.
func New(serve func(net.Conn)) *Network {
	return &Network{
		serve:  serve,
		onDial: map[pool.Transport]DialFunc{},
		dials:  map[pool.Transport]int{},
		ends:   map[*end]struct{}{},
	}
}

// OnDial makes f decide each later dial of transport t; nil lets them
// connect.
func (n *Network) OnDial(t pool.Transport, f DialFunc) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.onDial[t] = f
}

// Dials reports how many dials of t were tried, connected or not.
func (n *Network) Dials(t pool.Transport) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.dials[t]
}

// Open reports how many connections are open (dialled and not yet closed
// by their client).
func (n *Network) Open() int { return int(n.open.Load()) }

// Serving reports how many connections' server ends are open: serve has
// not returned on them.
func (n *Network) Serving() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.ends)
}

// Close closes the server end of every connection, which their clients see
// as the peer closing, and waits for serve to return on each. Later dials
// fail.
func (n *Network) Close() error {
	n.mu.Lock()
	n.closed = true
	ends := n.ends
	n.ends = map[*end]struct{}{}
	n.mu.Unlock()
	for e := range ends {
		e.Close()
	}
	n.wg.Wait()
	return nil
}

// DialRDMA connects over the in-memory RDMA.
func (n *Network) DialRDMA(ctx context.Context, addr string, _ *qp.Options) (pool.Conn, error) {
	c, err := n.dial(ctx, pool.RDMA, addr)
	if err != nil {
		return nil, err
	}
	return &rdmaConn{conn: c}, nil
}

// DialTCP connects over the in-memory TCP.
func (n *Network) DialTCP(ctx context.Context, addr string, _ *net.Dialer) (pool.Conn, error) {
	c, err := n.dial(ctx, pool.TCP, addr)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (n *Network) dial(ctx context.Context, t pool.Transport, addr string) (*conn, error) {
	n.mu.Lock()
	n.dials[t]++
	f := n.onDial[t]
	n.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, opError("dial", t, err)
	}
	if f != nil {
		if err := f(ctx, addr); err != nil {
			var oe *net.OpError
			if errors.As(err, &oe) && oe.Net == "" {
				oe.Net = string(t) // Refuse's and Hang's: the transport dialled
			}
			return nil, err
		}
	}
	cli, srv := net.Pipe()
	e := &end{Conn: srv}
	c := &conn{Conn: cli, t: t, peer: e, net: n}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		cli.Close()
		srv.Close()
		return nil, opError("dial", t, syscall.ECONNREFUSED)
	}
	n.ends[e] = struct{}{}
	n.wg.Add(1)
	n.mu.Unlock()
	n.open.Add(1)
	go func() {
		defer n.wg.Done()
		defer func() {
			n.mu.Lock()
			delete(n.ends, e)
			n.mu.Unlock()
			e.Close()
		}()
		n.serve(e)
	}()
	return c, nil
}

// The outcomes of dials, for OnDial.
var (
	// Refuse fails a dial as a refused connect does: nothing listens.
	Refuse DialFunc = func(_ context.Context, addr string) error {
		return &net.OpError{Op: "dial", Addr: stringAddr(addr), Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	}
	// NoLibraries fails a dial as qp.Dial does without librdmacm.
	NoLibraries DialFunc = func(context.Context, string) error {
		return loader.ErrUnavailable
	}
	// NoDevice fails a dial as qp.Dial does on a machine with no RDMA
	// device.
	NoDevice DialFunc = func(_ context.Context, addr string) error {
		return &net.OpError{Op: "dial", Net: "rdma", Addr: stringAddr(addr), Err: os.NewSyscallError("rdma_resolve_addr", syscall.ENODEV)}
	}
	// Hang makes a dial wait until its context ends; its error names the
	// transport dialled.
	Hang DialFunc = func(ctx context.Context, addr string) error {
		<-ctx.Done()
		return &net.OpError{Op: "dial", Addr: stringAddr(addr), Err: ctx.Err()}
	}
)

// Fail returns a DialFunc that fails every dial with err.
func Fail(err error) DialFunc { return func(context.Context, string) error { return err } }

// Echo serves a connection by writing back what it reads.
func Echo(c net.Conn) { io.Copy(c, c) }

// Listener hands a Network's connections to a server that takes a
// net.Listener: give its Serve to New, and the server's Accept returns the
// server end of each connection dialled.
type Listener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

// NewListener returns a Listener; close it to end the server's Accept.
func NewListener() *Listener {
	return &Listener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Serve hands c to Accept and returns once the server has closed it, or at
// once if the Listener is closed.
func (l *Listener) Serve(c net.Conn) {
	sc := &serverConn{Conn: c, closed: make(chan struct{})}
	select {
	case l.conns <- sc:
		<-sc.closed
	case <-l.done:
	}
}

// Accept returns the next connection dialled, or an error matching
// net.ErrClosed once the Listener is closed.
func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "pipe", Err: net.ErrClosed}
	}
}

// Close ends Accept; the connections accepted stay open.
func (l *Listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr is a placeholder: the connections are in memory.
func (l *Listener) Addr() net.Addr { return stringAddr("pooltest") }

// serverConn tells Serve when the server has closed it.
type serverConn struct {
	net.Conn
	closed chan struct{}
	once   sync.Once
}

func (c *serverConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return c.Conn.Close()
}

// end is the server end of a pipe. It counts the Writes under way: with a
// synchronous pipe, a Write that has not returned is data its client has
// not read, which the client's Healthy reports.
type end struct {
	net.Conn
	writing atomic.Int32
	closed  atomic.Bool
}

func (e *end) Write(b []byte) (int, error) {
	e.writing.Add(1)
	defer e.writing.Add(-1)
	return e.Conn.Write(b)
}

func (e *end) Close() error {
	e.closed.Store(true)
	return e.Conn.Close()
}

// conn is the client end of a pipe, as a pool.Conn over TCP.
type conn struct {
	net.Conn
	t      pool.Transport
	peer   *end
	net    *Network
	closed atomic.Bool
	rmu    sync.Mutex
	left   []byte // leased or read ahead, unconsumed (rdmaConn)
	buf    [4096]byte
	wbuf   []byte // reserved (rdmaConn)
}

var (
	_ pool.Conn           = (*conn)(nil)
	_ pool.HealthChecker  = (*conn)(nil)
	_ pool.ZeroCopyReader = (*rdmaConn)(nil)
	_ pool.ZeroCopyWriter = (*rdmaConn)(nil)
	_ pool.HealthChecker  = (*rdmaConn)(nil)
)

// Transport is the transport the connection was dialled as.
func (c *conn) Transport() pool.Transport { return c.t }

// Healthy reports whether neither end has closed and the server has
// nothing unread on its way.
func (c *conn) Healthy() bool {
	return !c.closed.Load() && !c.peer.closed.Load() && c.peer.writing.Load() == 0
}

func (c *conn) Read(b []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if len(c.left) > 0 {
		n := copy(b, c.left)
		c.left = c.left[n:]
		return n, nil
	}
	n, err := c.Conn.Read(b)
	return n, c.mapErr("read", err)
}

func (c *conn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	return n, c.mapErr("write", err)
}

// Close closes the client end; the server's Reads see io.EOF.
func (c *conn) Close() error {
	if c.closed.Swap(true) {
		return opError("close", c.t, net.ErrClosed)
	}
	c.net.open.Add(-1)
	return c.Conn.Close()
}

// mapErr makes the errors of a pipe closed by its client match
// net.ErrClosed, as the pool.Conn contract says.
func (c *conn) mapErr(op string, err error) error {
	if err != nil && c.closed.Load() && errors.Is(err, io.ErrClosedPipe) {
		return opError(op, c.t, net.ErrClosed)
	}
	return err
}

// rdmaConn is a conn with the zero-copy interfaces of an RDMA one, by
// copying.
type rdmaConn struct{ *conn }

// Lease waits for data and returns it; it stays valid until Release.
func (c *rdmaConn) Lease() ([]byte, error) {
	c.rmu.Lock()
	if len(c.left) == 0 {
		n, err := c.Conn.Read(c.buf[:])
		if err != nil {
			c.rmu.Unlock()
			return nil, c.mapErr("read", err)
		}
		c.left = c.buf[:n]
	}
	return c.left, nil // rmu stays held until Release
}

// Release consumes the first n bytes of the Lease.
func (c *rdmaConn) Release(n int) error {
	defer c.rmu.Unlock()
	if n < 0 || n > len(c.left) {
		return errors.New("pooltest: Release of more than was leased")
	}
	c.left = c.left[n:]
	return nil
}

// Reserve returns n bytes to fill; Commit sends them.
func (c *rdmaConn) Reserve(n int) ([]byte, error) {
	if c.closed.Load() {
		return nil, opError("write", c.t, net.ErrClosed)
	}
	if cap(c.wbuf) < n {
		c.wbuf = make([]byte, n)
	}
	c.wbuf = c.wbuf[:n]
	return c.wbuf, nil
}

// Commit sends the first n bytes of the Reserve.
func (c *rdmaConn) Commit(n int) error {
	if n < 0 || n > len(c.wbuf) {
		return errors.New("pooltest: Commit of more than was reserved")
	}
	_, err := c.Write(c.wbuf[:n])
	return err
}

func opError(op string, t pool.Transport, err error) error {
	return &net.OpError{Op: op, Net: string(t), Err: err}
}

type stringAddr string

func (stringAddr) Network() string  { return "pipe" }
func (a stringAddr) String() string { return string(a) }
