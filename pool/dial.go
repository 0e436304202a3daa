package pool

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/seed54442f1a/rdmapool/qp"
)

// dialSpec says how a Get dials, for a Dialer's client library.
type dialSpec struct {
	nd  *net.Dialer // for TCP: its settings, and its Timeout bounds the dial
	tls *tls.Config // TCP with TLS, whatever the policy; never reused
}

// dial opens a connection by the pool's policy, or as ds says. After a
// failed dial, the next waits out a backoff (doubling from MinBackoff to
// MaxBackoff), within ctx; a dial that fails because ctx ended is not a
// failure of the target, and neither counts nor backs off. The pool's
// Close ends the wait and cancels the dial; a connection dialled as the
// pool closed is closed, and dial returns ErrClosed.
func (p *Pool) dial(ctx context.Context, ds *dialSpec) (*poolEntry, error) {
	p.mu.Lock()
	wait := time.Until(p.nextDial)
	p.mu.Unlock()
	if wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-p.stopped.Done():
			t.Stop()
			return nil, ErrClosed
		}
	}
	timeout := p.opts.DialTimeout
	if ds != nil && ds.nd != nil && ds.nd.Timeout > 0 {
		timeout = min(timeout, ds.nd.Timeout)
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer context.AfterFunc(p.stopped, cancel)()
	c, fe, err := p.dialTransport(dctx, ds)
	p.mu.Lock()
	switch {
	case p.closed:
		p.mu.Unlock()
		if err == nil {
			c.Close()
		}
		return nil, ErrClosed
	case err != nil && callerGaveUp(ctx):
		// The caller gave up (not DialTimeout), which says nothing of the
		// target: no dial error, no backoff.
		p.mu.Unlock()
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = cerr
		}
		return nil, err
	case err != nil:
		p.backoff = min(max(p.backoff*2, p.opts.MinBackoff), p.opts.MaxBackoff)
		p.nextDial = time.Now().Add(p.backoff)
		p.mu.Unlock()
		p.dialErrors.Add(1)
		return nil, err
	}
	p.backoff, p.nextDial = 0, time.Time{}
	p.mu.Unlock()
	if fe != nil {
		p.reportFallback(fe)
	}
	now := time.Now()
	return &poolEntry{conn: c, pool: p, created: now, lastUsed: now, once: ds != nil && ds.tls != nil}, nil
}

// dialTransport dials RDMA or TCP as the policy says. Auto falls back to
// TCP when RDMA is unavailable and sticks to TCP for RDMARetryInterval; for
// each TCP connection it makes meanwhile it returns the FallbackError to
// report once the connection is the caller's.
func (p *Pool) dialTransport(ctx context.Context, ds *dialSpec) (Conn, *FallbackError, error) {
	var nd *net.Dialer
	if ds != nil {
		if ds.tls != nil {
			return p.dialTLS(ctx, ds)
		}
		nd = ds.nd
	}
	var fe *FallbackError
	tryRDMA := p.opts.Policy == RDMAOnly
	if p.opts.Policy == Auto {
		p.mu.Lock()
		tryRDMA = time.Now().After(p.tcpUntil) || p.rdmaErr == nil
		if !tryRDMA {
			fe = &FallbackError{Reason: p.rdmaErr.Reason, Err: p.rdmaErr.Err, Skipped: true}
		}
		p.mu.Unlock()
	}
	if tryRDMA {
		c, err := qp.Dial(ctx, p.opts.RDMAAddr, p.opts.RDMA)
		if err == nil {
			p.dials[0].Add(1)
			return rdmaConn{c}, nil, nil
		}
		reason := fallbackReason(err)
		if p.opts.Policy == RDMAOnly || reason == "" {
			return nil, nil, err
		}
		fe = &FallbackError{Reason: reason, Err: err}
		p.mu.Lock()
		p.rdmaErr = fe
		p.tcpUntil = time.Now().Add(p.opts.RDMARetryInterval)
		p.mu.Unlock()
	}
	c, err := dialTCP(ctx, nd, p.opts.Addr)
	if err != nil {
		return nil, nil, err
	}
	p.dials[1].Add(1)
	return c, fe, nil
}

// dialTLS dials TCP and does the TLS handshake, both within ctx. Under
// Auto, the connection is a fallback (RDMA has no TLS) to report, but the
// pool's other dials still try RDMA. Without ServerName, the config takes
// the target's host, as tls.Dialer does.
func (p *Pool) dialTLS(ctx context.Context, ds *dialSpec) (Conn, *FallbackError, error) {
	cfg := ds.tls
	if cfg.ServerName == "" {
		host, _, _ := net.SplitHostPort(p.opts.Addr)
		cfg = cfg.Clone()
		cfg.ServerName = host
	}
	c, err := dialTCP(ctx, ds.nd, p.opts.Addr)
	if err != nil {
		return nil, nil, err
	}
	tc := tls.Client(c, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		c.Close()
		return nil, nil, err
	}
	p.dials[1].Add(1)
	var fe *FallbackError
	if p.opts.Policy == Auto {
		fe = &FallbackError{Reason: ReasonTLS, Err: errTLSRDMA}
	}
	return tlsConn{tc}, fe, nil
}

// tlsConn is TLS over a TCPConn, as a Conn.
type tlsConn struct{ *tls.Conn }

func (tlsConn) Transport() Transport { return TCP }

// reportFallback records in Stats that a connection uses TCP although
// RDMA was preferred, and tells the hook.
func (p *Pool) reportFallback(fe *FallbackError) {
	p.mu.Lock()
	p.fallbacks[fe.Reason]++
	p.lastFall = fe
	hook := p.opts.OnFallback
	p.mu.Unlock()
	if hook != nil {
		hook(fe)
	}
}

// PooledConn is a connection from a Pool, as one Get handed it out. Each
// Get returns a new PooledConn, even for a connection used before, so a
// PooledConn stands for one use: Close returns the connection to the pool
// unless an error was seen on it, when it is closed for good; Discard always
// closes it. Once either has been called, the PooledConn is spent: further
// Closes and Discards do nothing, and Read, Write and the deadline setters
// fail with an error matching net.ErrClosed, whoever uses the connection
// now. A Close while a Read, Write or deadline setter of the PooledConn is
// still running (from another goroutine, as net.Conn allows) closes the
// connection for good, which ends that call: back in the pool, the call
// would share it with the connection's next user. (Conn, the connection itself, is not guarded:
// do not keep it past Close.)
type PooledConn struct {
	Conn
	e     *poolEntry
	done  atomic.Bool  // Close or Discard was called
	calls atomic.Int32 // Reads, Writes and deadline setters running now
}

// poolEntry is a connection the pool holds, idle or handed out.
type poolEntry struct {
	conn     Conn
	pool     *Pool
	created  time.Time
	lastUsed time.Time
	broken   atomic.Bool
	once     bool // closed when it comes back, never reused (TLS)
}

// handle hands e out: a new PooledConn for this use of it.
func (e *poolEntry) handle() *PooledConn { return &PooledConn{Conn: e.conn, e: e} }

// Read reads, and marks the connection broken on any error, a timeout
// included: a request whose reply was not read leaves the connection out of
// step with the protocol.
func (c *PooledConn) Read(b []byte) (int, error) {
	c.calls.Add(1) // before the look at done: see Close
	defer c.calls.Add(-1)
	if c.done.Load() {
		return 0, c.spent("read")
	}
	n, err := c.Conn.Read(b)
	if err != nil {
		c.e.broken.Store(true)
	}
	return n, err
}

// Write writes, and marks the connection broken on any error.
func (c *PooledConn) Write(b []byte) (int, error) {
	c.calls.Add(1) // before the look at done: see Close
	defer c.calls.Add(-1)
	if c.done.Load() {
		return 0, c.spent("write")
	}
	n, err := c.Conn.Write(b)
	if err != nil {
		c.e.broken.Store(true)
	}
	return n, err
}

// SetDeadline sets the connection's deadlines; Close clears them.
func (c *PooledConn) SetDeadline(t time.Time) error {
	c.calls.Add(1) // a deadline set after Close cleared them would land on the next user
	defer c.calls.Add(-1)
	if c.done.Load() {
		return c.spent("set")
	}
	return c.Conn.SetDeadline(t)
}

// SetReadDeadline sets the connection's read deadline; Close clears it.
func (c *PooledConn) SetReadDeadline(t time.Time) error {
	c.calls.Add(1) // a deadline set after Close cleared them would land on the next user
	defer c.calls.Add(-1)
	if c.done.Load() {
		return c.spent("set")
	}
	return c.Conn.SetReadDeadline(t)
}

// SetWriteDeadline sets the connection's write deadline; Close clears it.
func (c *PooledConn) SetWriteDeadline(t time.Time) error {
	c.calls.Add(1) // a deadline set after Close cleared them would land on the next user
	defer c.calls.Add(-1)
	if c.done.Load() {
		return c.spent("set")
	}
	return c.Conn.SetWriteDeadline(t)
}

// spent is the error of a call on a PooledConn after its Close or Discard.
func (c *PooledConn) spent(op string) error {
	return &net.OpError{Op: op, Net: string(c.Transport()), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: net.ErrClosed}
}

// Close returns the connection to its pool, or closes it for good if a Read
// or Write of this PooledConn is still running. Calling it again, or after
// Discard, does nothing.
func (c *PooledConn) Close() error {
	if c.done.Swap(true) {
		return nil
	}
	// A call that began before the Swap is counted by now; one that
	// begins after it sees done and fails.
	if c.calls.Load() > 0 {
		c.e.pool.discard(c.e)
		return nil
	}
	c.e.conn.SetDeadline(time.Time{})
	c.e.pool.put(c.e)
	return nil
}

// Discard closes the connection for good and frees its place in the pool.
// Calling it again, or after Close, does nothing.
func (c *PooledConn) Discard() error {
	if c.done.Swap(true) {
		return nil
	}
	c.e.pool.discard(c.e)
	return nil
}

var errTLSRDMA = errors.New("rdmapool: RDMA has no TLS; use policy auto or tcp to connect with TLS over TCP")

var _ net.Conn = (*PooledConn)(nil)

// callerGaveUp reports whether ctx has ended, or its deadline has passed: a
// connect times out on the deadline itself, which can be a moment before
// the context's timer marks it done.
func callerGaveUp(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}
