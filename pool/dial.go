package pool

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"
)

// dialSpec says how a Get dials, for a Dialer's client library.
type dialSpec struct {
	nd  *net.Dialer // for TCP: its settings, and its Timeout bounds the dial
	tls *tls.Config // TCP with TLS, whatever the policy; never reused
}

// dial opens a connection by the pool's policy, or as ds says, at once: a
// failed dial sets the backoff that paces the background top-up to
// MinIdle (doubling from MinBackoff to MaxBackoff), but no Get waits for
// it. A dial that fails because ctx ended is not a failure of the target
// and neither counts nor backs off. The pool's Close cancels the dial; a
// connection dialled as the pool closed is closed, and dial returns
// ErrClosed.
func (p *Pool) dial(ctx context.Context, ds *dialSpec) (*poolEntry, error) {
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
	return newEntry(p, c, now, ds != nil && ds.tls != nil), nil
}

// dialTransport dials RDMA or TCP as the policy says. Auto falls back to
// TCP when RDMA is unavailable and sticks to TCP for RDMARetryInterval; for
// each TCP connection it makes meanwhile it returns the FallbackError to
// report once the connection is the caller's. A TCP dial that fails after a
// fallback returns a *DialError, which keeps both reasons.
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
		c, err := p.net.DialRDMA(ctx, p.opts.RDMAAddr, p.opts.RDMA)
		if err == nil {
			p.dials[0].Add(1)
			return c, nil, nil
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
	c, err := p.net.DialTCP(ctx, p.opts.Addr, nd)
	if err != nil {
		if fe != nil {
			err = &DialError{TCP: err, Fallback: fe}
		}
		return nil, nil, err
	}
	p.dials[1].Add(1)
	return c, fe, nil
}

// DialError is the error of a dial that did not use RDMA (Auto, RDMA
// unavailable) and failed over TCP. Its text is the TCP error's, then why
// RDMA was not used, and errors.Is and errors.As see both: a refused
// connection matches syscall.ECONNREFUSED, and a *FallbackError has the
// RDMA reason. A TCP timeout makes it a timeout (net.Error).
type DialError struct {
	TCP      error          // the TCP dial's error, a *net.OpError
	Fallback *FallbackError // why RDMA was not used
}

func (e *DialError) Error() string {
	return fmt.Sprintf("%v (RDMA not used: %s: %v)", e.TCP, e.Fallback.Reason, e.Fallback.Err)
}

func (e *DialError) Unwrap() []error { return []error{e.TCP, e.Fallback} }

// Timeout reports whether the TCP dial timed out.
func (e *DialError) Timeout() bool {
	var ne net.Error
	return errors.As(e.TCP, &ne) && ne.Timeout()
}

// Temporary is the TCP error's.
func (e *DialError) Temporary() bool {
	var ne interface{ Temporary() bool }
	return errors.As(e.TCP, &ne) && ne.Temporary()
}

var _ net.Error = (*DialError)(nil)

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
	c, err := p.net.DialTCP(ctx, p.opts.Addr, ds.nd)
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

// tlsConn is TLS over a TCP Conn, as a Conn.
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

var errTLSRDMA = errors.New("rdmapool: RDMA has no TLS; use policy auto or tcp to connect with TLS over TCP")

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
