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

// dialTransport dials RDMA or TCP as the policy says; Auto is dialAuto.
// For a TCP connection Auto makes although RDMA was preferred it returns
// the FallbackError to report once the connection is the caller's.
func (p *Pool) dialTransport(ctx context.Context, ds *dialSpec) (Conn, *FallbackError, error) {
	var nd *net.Dialer
	if ds != nil {
		if ds.tls != nil {
			return p.dialTLS(ctx, ds)
		}
		nd = ds.nd
	}
	switch p.opts.Policy {
	case TCPOnly:
		c, err := p.net.DialTCP(ctx, p.opts.Addr, nd)
		if err != nil {
			return nil, nil, err
		}
		p.dials[1].Add(1)
		return c, nil, nil
	case RDMAOnly:
		c, err := p.dialRDMA(ctx)
		if err != nil {
			return nil, nil, withRemedy(err)
		}
		p.dials[0].Add(1)
		return c, nil, nil
	}
	return p.dialAuto(ctx, nd)
}

// dialRDMA dials RDMA, unless the pool's quick look (the default Network
// only) already says this machine has no RDMA device.
func (p *Pool) dialRDMA(ctx context.Context) (Conn, error) {
	if p.noDevice != nil {
		if err := p.noDevice(p.opts.RDMAAddr); err != nil {
			return nil, err
		}
	}
	return p.net.DialRDMA(ctx, p.opts.RDMAAddr, p.opts.RDMA)
}

// dialAuto is Auto's dial, happy eyeballs between the transports (as RFC
// 8305 is between address families): it starts RDMA, and TCP beside it once
// RDMA has failed or has not connected within FallbackDelay, or half the
// time ctx leaves, whichever is shorter; the first to
// connect wins, and the other is cancelled, and closed should it connect
// all the same (on a goroutine Close waits for). After an RDMA failure
// that says RDMA is unavailable (fallbackReason) it dials TCP alone for
// RDMARetryInterval; any other outcome leaves RDMA preferred for the next
// dial. A dial that fails fails with a *DialError, which has both
// transports' errors.
func (p *Pool) dialAuto(ctx context.Context, nd *net.Dialer) (Conn, *FallbackError, error) {
	p.mu.Lock()
	var fe *FallbackError
	if !time.Now().After(p.tcpUntil) && p.rdmaErr != nil {
		fe = &FallbackError{Reason: p.rdmaErr.Reason, Err: p.rdmaErr.Err, Skipped: true}
	}
	p.mu.Unlock()
	if fe == nil && p.noDevice != nil {
		// Decided before any goroutine starts: without a device, the dial
		// is TCP's alone, on this goroutine, as cheap as net.Dialer's.
		if err := p.noDevice(p.opts.RDMAAddr); err != nil {
			fe = p.rdmaFailed(err)
		}
	}
	if fe != nil {
		c, err := p.net.DialTCP(ctx, p.opts.Addr, nd)
		if err != nil {
			return nil, nil, &DialError{TCP: err, Fallback: fe}
		}
		p.dials[1].Add(1)
		return c, fe, nil
	}

	type result struct {
		c   Conn
		err error
		t   Transport
	}
	results := make(chan result, 2) // each dial's goroutine sends once, never blocking
	detached := false
	// The RDMA dial has the caller's deadline, and its cancellation as
	// long as it is linked: an RDMA dial that loses the race may be left
	// to finish, to learn its setup time (DefaultFallbackDelay).
	rbase := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		rbase, cancel = context.WithDeadline(rbase, dl)
		defer func() {
			if !detached {
				cancel()
			}
		}()
	}
	rctx, rcancel := context.WithCancel(rbase)
	unlink := context.AfterFunc(ctx, func() {
		if ctx.Err() != context.DeadlineExceeded { // rbase has the deadline: its own error
			rcancel()
		}
	})
	tctx, tcancel := context.WithCancel(ctx)
	defer func() {
		if !detached {
			unlink()
			rcancel()
		}
	}()
	defer tcancel()
	rdmaStart := time.Now()
	go func() {
		c, err := p.net.DialRDMA(rctx, p.opts.RDMAAddr, p.opts.RDMA)
		if err == nil {
			p.learnSetup(time.Since(rdmaStart))
		}
		results <- result{c, err, RDMA}
	}()
	pending, tcpStarted := 1, false
	startTCP := func() {
		pending, tcpStarted = pending+1, true
		go func() {
			c, err := p.net.DialTCP(tctx, p.opts.Addr, nd)
			results <- result{c, err, TCP}
		}()
	}
	var delay <-chan time.Time
	fallbackDelay := p.fallbackDelay()
	if d := fallbackDelay; d > 0 {
		// Never more than half the time the dial has: a client with a
		// short dial timeout still gets TCP within it.
		if dl, ok := ctx.Deadline(); ok {
			d = min(d, time.Until(dl)/2)
		}
		t := time.NewTimer(d)
		defer t.Stop()
		delay = t.C
	}
	var rdmaErr, tcpErr error
	for pending > 0 {
		select {
		case <-delay:
			delay = nil
			if !tcpStarted {
				startTCP()
			}
			continue
		case r := <-results:
			pending--
			if r.err == nil {
				if pending > 0 {
					// The loser: cancelled, and closed if it connects all the
					// same. A path it finds dead is remembered.
					learn := false
					switch {
					case r.t == RDMA:
						tcancel()
					case p.adaptive && unlink():
						learn, detached = true, true // left to finish within its deadline
					default:
						rcancel()
					}
					p.reap(func() {
						var l result
						select {
						case l = <-results:
						case <-p.stopped.Done(): // Close: learn no more
							rcancel()
							l = <-results
						}
						if learn {
							rcancel()
						}
						if l.err == nil {
							l.c.Close()
						} else if l.t == RDMA && fallbackReason(l.err) != "" {
							p.rdmaFailed(l.err)
						}
					})
				}
				if r.t == RDMA {
					p.dials[0].Add(1)
					p.rdmaWorks()
					return r.c, nil, nil
				}
				p.dials[1].Add(1)
				if rdmaErr != nil {
					return r.c, p.rdmaFailed(rdmaErr), nil
				}
				return r.c, &FallbackError{Reason: ReasonSlow, Err: &slowError{fallbackDelay}}, nil
			}
			if r.t == TCP {
				tcpErr = r.err
				continue
			}
			rdmaErr = r.err
			if !tcpStarted {
				startTCP()
			}
		}
	}
	fe = p.rdmaFailed(rdmaErr)
	return nil, nil, &DialError{TCP: tcpErr, Fallback: fe}
}

// fallbackDelay is the delay of Auto's race: Options.FallbackDelay, or, by
// default, what the pool learnt of its RDMA setup (DefaultFallbackDelay).
func (p *Pool) fallbackDelay() time.Duration {
	d := p.opts.FallbackDelay
	if p.adaptive {
		p.mu.Lock()
		d = min(max(d, 2*p.setup), maxFallbackDelay)
		p.mu.Unlock()
	}
	return d
}

// learnSetup records the setup time of an RDMA connection: a decaying
// maximum, which a slower setup raises at once.
func (p *Pool) learnSetup(d time.Duration) {
	p.mu.Lock()
	p.setup = max(d, p.setup-p.setup/8)
	p.mu.Unlock()
}

// reap runs f, which ends a losing dial, on a goroutine that Close waits
// for.
func (p *Pool) reap(f func()) {
	p.mu.Lock()
	p.reaping++
	p.mu.Unlock()
	go func() {
		f()
		p.mu.Lock()
		if p.reaping--; p.reaping == 0 {
			p.reaped.Broadcast()
		}
		p.mu.Unlock()
	}()
}

// rdmaFailed returns the FallbackError for an RDMA dial's error; one that
// says RDMA is unavailable makes the pool dial TCP alone for
// RDMARetryInterval.
func (p *Pool) rdmaFailed(err error) *FallbackError {
	reason := fallbackReason(err)
	if reason == "" {
		return &FallbackError{Reason: ReasonFailed, Err: err}
	}
	fe := &FallbackError{Reason: reason, Err: err}
	p.mu.Lock()
	p.rdmaErr = fe
	p.tcpUntil = time.Now().Add(p.opts.RDMARetryInterval)
	p.mu.Unlock()
	return fe
}

// rdmaWorks notes that Auto connected over RDMA: the next fallback is a
// change of transport, reported again.
func (p *Pool) rdmaWorks() {
	p.mu.Lock()
	p.hooked = ""
	p.mu.Unlock()
}

// slowError is the FallbackError.Err of ReasonSlow.
type slowError struct{ delay time.Duration }

func (e *slowError) Error() string {
	return fmt.Sprintf("RDMA had not connected after %v (FallbackDelay), and TCP connected first", e.delay)
}

// DialError is the error of a failed dial under Auto: TCP's error, and why
// RDMA was not used (Fallback: the RDMA dial's own error, or, when RDMA was
// not tried, the earlier one that made the pool keep to TCP). Its text is
// the TCP error's, then the RDMA one's, and errors.Is and errors.As see
// both: a refused connection matches syscall.ECONNREFUSED, and a
// *FallbackError has the RDMA reason. A timeout of either dial makes it a
// timeout (net.Error).
type DialError struct {
	TCP      error          // the TCP dial's error, a *net.OpError
	Fallback *FallbackError // why RDMA was not used, with the RDMA error
}

func (e *DialError) Error() string {
	return fmt.Sprintf("%v (RDMA not used: %s: %v)", e.TCP, e.Fallback.Reason, e.Fallback.Err)
}

func (e *DialError) Unwrap() []error { return []error{e.TCP, e.Fallback} }

// Timeout reports whether the TCP dial, or the RDMA one, timed out.
func (e *DialError) Timeout() bool {
	var ne net.Error
	if errors.As(e.TCP, &ne) && ne.Timeout() {
		return true
	}
	return !e.Fallback.Skipped && errors.As(e.Fallback.Err, &ne) && ne.Timeout()
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
// RDMA was preferred, and tells the hook once per change: the first
// fallback, one for another reason, or one after an RDMA connection.
func (p *Pool) reportFallback(fe *FallbackError) {
	p.mu.Lock()
	p.fallbacks[fe.Reason]++
	p.lastFall = fe
	var hook func(*FallbackError)
	if fe.Reason != p.hooked {
		p.hooked, p.covered = fe.Reason, 0
		hook = p.opts.OnFallback
	}
	p.covered++
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
