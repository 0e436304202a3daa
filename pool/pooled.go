package pool

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// PooledConn is a connection from a Pool, as one Get handed it out. Each
// Get returns a new PooledConn, even for a connection used before, so a
// PooledConn stands for one use.
//
// Close returns the connection to the pool, unless it cannot be reused
// safely, when it is closed for good: an error was seen on it; a Write (or
// Commit) was not followed by a Read (or Lease) that began after it and
// returned data, so a reply may still be on its way to whoever gets the
// connection next; a Read, Write, Lease or Reserve is still running (from
// another goroutine, as net.Conn allows), or a Lease or Reserve was not
// ended. Discard always closes it. Once either has been called, the
// PooledConn is spent: further Closes and Discards do nothing, and Read,
// Write and the deadline setters fail with an error matching
// net.ErrClosed, whoever uses the connection now.
//
// A PooledConn implements ZeroCopyReader, ZeroCopyWriter and
// HealthChecker exactly when its connection does (an RDMA one implements
// all three, a TCP one HealthChecker).
type PooledConn interface {
	Conn
	// Discard closes the connection for good and frees its place in the
	// pool. Calling it again, or after Close, does nothing.
	Discard() error
	// SyscallConn returns the connection's socket, for a caller that
	// polls it itself, when it has one of its own (engine TCPNetpoll);
	// otherwise an error matching errors.ErrUnsupported. What is read or
	// written through the socket is not seen by the PooledConn, so a
	// connection whose socket was taken is never reused: Close closes it.
	SyscallConn() (syscall.RawConn, error)

	pooled() *pooledConn
}

// poolEntry is a connection the pool holds, idle or handed out.
type poolEntry struct {
	conn     Conn
	pool     *Pool
	created  time.Time
	lastUsed time.Time
	broken   atomic.Bool
	once     bool // closed when it comes back, never reused (TLS)
	kind     uint8
}

// The optional interfaces of a connection, in poolEntry.kind.
const (
	kindReader uint8 = 1 << iota // ZeroCopyReader
	kindWriter                   // ZeroCopyWriter
	kindHealth                   // HealthChecker
)

func newEntry(p *Pool, c Conn, now time.Time, once bool) *poolEntry {
	e := &poolEntry{conn: c, pool: p, created: now, lastUsed: now, once: once}
	if _, ok := c.(ZeroCopyReader); ok {
		e.kind |= kindReader
	}
	if _, ok := c.(ZeroCopyWriter); ok {
		e.kind |= kindWriter
	}
	if _, ok := c.(HealthChecker); ok {
		e.kind |= kindHealth
	}
	return e
}

// pooledConn is a PooledConn of a connection with none of the optional
// interfaces, and the part every other one embeds.
type pooledConn struct {
	Conn
	e     *poolEntry
	done  atomic.Bool  // Close or Discard was called
	calls atomic.Int32 // Reads, Writes, Leases, Reserves and deadline setters running now
	held  atomic.Int32 // Leases and Reserves not yet Released or Committed
	// writes counts the Writes and Commits that sent something; readTo is
	// the count a Read or Lease that returned data saw when it began. The
	// connection is between requests only when they are equal.
	writes, readTo atomic.Uint64
}

func (c *pooledConn) init(e *poolEntry)   { c.Conn, c.e = e.conn, e }
func (c *pooledConn) pooled() *pooledConn { return c }

// The PooledConns of connections with optional interfaces: one type for
// each set, so that a type assertion finds exactly the connection's.
type (
	zcReader struct{ c *pooledConn }
	zcWriter struct{ c *pooledConn }
	health   struct{ c *pooledConn }

	pcR struct {
		pooledConn
		zcReader
	}
	pcW struct {
		pooledConn
		zcWriter
	}
	pcH struct {
		pooledConn
		health
	}
	pcRW struct {
		pooledConn
		zcReader
		zcWriter
	}
	pcRH struct {
		pooledConn
		zcReader
		health
	}
	pcWH struct {
		pooledConn
		zcWriter
		health
	}
	pcRWH struct {
		pooledConn
		zcReader
		zcWriter
		health
	}
)

var (
	_ PooledConn     = (*pooledConn)(nil)
	_ ZeroCopyReader = (*pcR)(nil)
	_ ZeroCopyWriter = (*pcW)(nil)
	_ HealthChecker  = (*pcH)(nil)
	_ ZeroCopyReader = (*pcRW)(nil)
	_ ZeroCopyWriter = (*pcRW)(nil)
	_ ZeroCopyReader = (*pcRH)(nil)
	_ HealthChecker  = (*pcRH)(nil)
	_ ZeroCopyWriter = (*pcWH)(nil)
	_ HealthChecker  = (*pcWH)(nil)
	_ ZeroCopyReader = (*pcRWH)(nil)
	_ ZeroCopyWriter = (*pcRWH)(nil)
	_ HealthChecker  = (*pcRWH)(nil)
)

// handle hands e out: a new PooledConn for this use of it, in one
// allocation.
func (e *poolEntry) handle() PooledConn {
	switch e.kind {
	case kindReader:
		x := &pcR{}
		x.init(e)
		x.zcReader.c = &x.pooledConn
		return x
	case kindWriter:
		x := &pcW{}
		x.init(e)
		x.zcWriter.c = &x.pooledConn
		return x
	case kindHealth:
		x := &pcH{}
		x.init(e)
		x.health.c = &x.pooledConn
		return x
	case kindReader | kindWriter:
		x := &pcRW{}
		x.init(e)
		x.zcReader.c, x.zcWriter.c = &x.pooledConn, &x.pooledConn
		return x
	case kindReader | kindHealth:
		x := &pcRH{}
		x.init(e)
		x.zcReader.c, x.health.c = &x.pooledConn, &x.pooledConn
		return x
	case kindWriter | kindHealth:
		x := &pcWH{}
		x.init(e)
		x.zcWriter.c, x.health.c = &x.pooledConn, &x.pooledConn
		return x
	case kindReader | kindWriter | kindHealth:
		x := &pcRWH{}
		x.init(e)
		x.zcReader.c, x.zcWriter.c, x.health.c = &x.pooledConn, &x.pooledConn, &x.pooledConn
		return x
	}
	x := &pooledConn{}
	x.init(e)
	return x
}

// Read reads, and marks the connection broken on any error, a timeout
// included: a request whose reply was not read leaves the connection out of
// step with the protocol.
func (c *pooledConn) Read(b []byte) (int, error) {
	c.calls.Add(1) // before the look at done: see Close
	defer c.calls.Add(-1)
	if c.done.Load() {
		return 0, c.spent("read")
	}
	w := c.writes.Load()
	n, err := c.Conn.Read(b)
	if err != nil {
		c.e.broken.Store(true)
	}
	if n > 0 {
		c.readTo.Store(w)
	}
	return n, err
}

// Write writes, and marks the connection broken on any error.
func (c *pooledConn) Write(b []byte) (int, error) {
	c.calls.Add(1) // before the look at done: see Close
	defer c.calls.Add(-1)
	if c.done.Load() {
		return 0, c.spent("write")
	}
	n, err := c.Conn.Write(b)
	if err != nil {
		c.e.broken.Store(true)
	}
	if n > 0 {
		c.writes.Add(1)
	}
	return n, err
}

func (c *pooledConn) lease() ([]byte, error) {
	c.calls.Add(1)
	defer c.calls.Add(-1)
	if c.done.Load() {
		return nil, c.spent("read")
	}
	w := c.writes.Load()
	b, err := c.Conn.(ZeroCopyReader).Lease()
	if err != nil {
		c.e.broken.Store(true)
		return nil, err
	}
	c.held.Add(1)
	if len(b) > 0 {
		c.readTo.Store(w)
	}
	return b, nil
}

// release ends a Lease whatever the state of the PooledConn: a Close
// before it found the Lease held and closed the connection.
func (c *pooledConn) release(n int) error {
	err := c.Conn.(ZeroCopyReader).Release(n)
	if err == nil {
		c.held.Add(-1)
	}
	return err
}

func (c *pooledConn) reserve(n int) ([]byte, error) {
	c.calls.Add(1)
	defer c.calls.Add(-1)
	if c.done.Load() {
		return nil, c.spent("write")
	}
	b, err := c.Conn.(ZeroCopyWriter).Reserve(n)
	if err != nil {
		c.e.broken.Store(true)
		return nil, err
	}
	c.held.Add(1)
	return b, nil
}

// commit ends a Reserve whatever the state of the PooledConn, as release
// does a Lease.
func (c *pooledConn) commit(n int) error {
	err := c.Conn.(ZeroCopyWriter).Commit(n)
	if err != nil {
		c.e.broken.Store(true)
		return err
	}
	c.held.Add(-1)
	if n > 0 {
		c.writes.Add(1)
	}
	return nil
}

func (c *pooledConn) healthy() bool {
	return !c.done.Load() && c.Conn.(HealthChecker).Healthy()
}

// Lease is the connection's ZeroCopyReader.Lease.
func (z zcReader) Lease() ([]byte, error) { return z.c.lease() }

// Release is the connection's ZeroCopyReader.Release.
func (z zcReader) Release(n int) error { return z.c.release(n) }

// Reserve is the connection's ZeroCopyWriter.Reserve.
func (z zcWriter) Reserve(n int) ([]byte, error) { return z.c.reserve(n) }

// Commit is the connection's ZeroCopyWriter.Commit.
func (z zcWriter) Commit(n int) error { return z.c.commit(n) }

// Healthy is the connection's HealthChecker.Healthy, false once the
// PooledConn is spent.
func (h health) Healthy() bool { return h.c.healthy() }

// SetDeadline sets the connection's deadlines; Close clears them.
func (c *pooledConn) SetDeadline(t time.Time) error { return c.setDeadline(deadlineBoth, t) }

// SetReadDeadline sets the connection's read deadline; Close clears it.
func (c *pooledConn) SetReadDeadline(t time.Time) error { return c.setDeadline(deadlineRead, t) }

// SetWriteDeadline sets the connection's write deadline; Close clears it.
func (c *pooledConn) SetWriteDeadline(t time.Time) error { return c.setDeadline(deadlineWrite, t) }

// Which deadline setDeadline sets.
const (
	deadlineBoth = iota
	deadlineRead
	deadlineWrite
)

func (c *pooledConn) setDeadline(which int, t time.Time) error {
	c.calls.Add(1) // a deadline set after Close cleared them would land on the next user
	defer c.calls.Add(-1)
	if c.done.Load() {
		return c.spent("set")
	}
	switch which {
	case deadlineRead:
		return c.Conn.SetReadDeadline(t)
	case deadlineWrite:
		return c.Conn.SetWriteDeadline(t)
	default:
		return c.Conn.SetDeadline(t)
	}
}

// SyscallConn returns the socket of a TCPNetpoll connection and marks the
// connection not to be reused (see PooledConn).
func (c *pooledConn) SyscallConn() (syscall.RawConn, error) {
	if c.done.Load() {
		return nil, c.spent("syscallconn")
	}
	sc, ok := c.Conn.(*netpollConn)
	if !ok {
		return nil, fmt.Errorf("pool: %w: this %s connection has no socket of its own", errors.ErrUnsupported, c.Transport())
	}
	c.e.broken.Store(true)
	return sc.SyscallConn()
}

// spent is the error of a call on a PooledConn after its Close or Discard.
func (c *pooledConn) spent(op string) error {
	return &net.OpError{Op: op, Net: string(c.Transport()), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: net.ErrClosed}
}

// Close returns the connection to its pool, or closes it for good when it
// cannot be reused safely (see PooledConn). Calling it again, or after
// Discard, does nothing.
func (c *pooledConn) Close() error {
	if c.done.Swap(true) {
		return nil
	}
	// A call that began before the Swap is counted by now; one that
	// begins after it sees done and fails.
	if c.calls.Load() > 0 || c.held.Load() > 0 || c.writes.Load() != c.readTo.Load() {
		c.e.pool.discard(c.e)
		return nil
	}
	c.e.conn.SetDeadline(time.Time{})
	c.e.pool.put(c.e)
	return nil
}

// Discard closes the connection for good and frees its place in the pool.
// Calling it again, or after Close, does nothing.
func (c *pooledConn) Discard() error {
	if c.done.Swap(true) {
		return nil
	}
	c.e.pool.discard(c.e)
	return nil
}

// clientConn is a connection a Dialer hands to a client library: the Conn
// itself, whose Close closes it for good and frees its place in the pool.
// The client never hands it back, so it needs none of PooledConn's
// guards, and its Reads and Writes are the Conn's own.
type clientConn struct {
	Conn
	e    *poolEntry
	done atomic.Bool
}

// Close closes the connection and frees its place in the pool; later
// Closes return the Conn's error, which matches net.ErrClosed.
func (c *clientConn) Close() error { return closeClient(&c.done, c.e, c.Conn) }

// clientNetpoll is a clientConn of engine TCPNetpoll, with the
// *net.TCPConn embedded rather than behind an interface: a client's Read
// or Write costs the one dynamic call it costs on its own connection. Its
// SyscallConn lets a client look at the socket as at its own (go-redis
// peeks at a connection it takes from its pool).
type clientNetpoll struct {
	*netpollConn
	e    *poolEntry
	done atomic.Bool
}

// Close is clientConn's.
func (c *clientNetpoll) Close() error { return closeClient(&c.done, c.e, c.netpollConn) }

func closeClient(done *atomic.Bool, e *poolEntry, c Conn) error {
	if done.Swap(true) {
		return c.Close()
	}
	e.pool.discard(e)
	return nil
}

var _ syscall.Conn = (*clientNetpoll)(nil)

// client hands e to a client library.
func (e *poolEntry) client() net.Conn {
	if nc, ok := e.conn.(*netpollConn); ok {
		return &clientNetpoll{netpollConn: nc, e: e}
	}
	return &clientConn{Conn: e.conn, e: e}
}
