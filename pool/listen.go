package pool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/seed54442f1a/rdmapool/qp"
)

// ListenOptions configure Listen. The zero value (or nil) is policy Auto
// with the RDMA port equal to the TCP port, as valkey-server serves when
// --rdma-port is --port.
type ListenOptions struct {
	// Policy chooses the transports: Auto (the zero value) listens on TCP,
	// and on RDMA beside it where this machine can (else it says why, to
	// OnFallback and in Stats); RDMAOnly on RDMA alone, and Listen fails
	// where RDMA cannot be had, saying what to do; TCPOnly on TCP alone.
	// Listen rejects any other value.
	Policy Policy
	// RDMAAddr is where RDMA listens, "ip:port"; empty means Listen's host
	// with RDMAPort.
	RDMAAddr string
	// RDMAPort is the RDMA port when RDMAAddr is empty (valkey-server's
	// --rdma-port); 0 means the TCP port: the one TCP was given when
	// Listen's port is 0. (rdma_cm's ports are apart from the kernel's TCP
	// ports: one number serves both.) Under RDMAOnly, 0 means Listen's port.
	RDMAPort int
	// OnFallback, if set, is called when policy Auto serves TCP alone,
	// with why: by Listen, before it returns, when RDMA cannot listen
	// here; and once if the RDMA listener stops while TCP goes on (its
	// device went away), on the goroutine that accepts RDMA clients, which
	// Close waits for: the hook must not call Close. Stats.RDMAOff holds
	// the same error.
	OnFallback func(*FallbackError)
	// RDMA configures the RDMA listener (Backlog) and its connections
	// (RecvBufferSize, SpinWait...).
	RDMA *qp.Options
}

// Listener serves clients over RDMA and TCP on one address: the
// Valkey-over-RDMA transport that Dialer and Pool dial (qp.Listen) beside
// a TCP listener, as valkey-server serves --rdma-port beside --port. It is
// a net.Listener, so that a Go service's own server takes it as it is:
//
//	l, err := pool.Listen(":8080", nil) // Auto: TCP, and RDMA where this machine can
//	grpcServer.Serve(l)                  // or http.Serve(l, handler)
//
// and its clients dial through a Dialer (grpc.WithContextDialer,
// http.Transport.DialContext: Dialer.DialContext), over RDMA where both
// ends can and TCP otherwise.
//
// Accept returns the next client of either transport, the first to come,
// as a Conn: the RDMA ones are *qp.Conn inside (with the zero-copy calls,
// ZeroCopyReader and ZeroCopyWriter), the TCP ones *net.TCPConn (with
// HealthChecker and syscall.Conn). A service tells them apart by the
// Conn's Transport (http.Server's ConnContext sees the net.Conn), or by
// the address's Network, "rdma" or "tcp" (in a gRPC handler,
// peer.FromContext(ctx).Addr).
//
// A transient accept error (the process is out of file descriptors) is
// Accept's error, as net.Listener's is, and both http.Server and
// grpc.Server wait and Accept again. A listener that ends with an error of
// its own makes every Accept return that error until Close; under Auto,
// an RDMA listener that ends so (its device removed) leaves TCP serving,
// and is reported as RDMA that cannot be had is.
//
// Close closes both listeners and the connections accepted by them but
// not yet by Accept, makes every waiting and later Accept return an error
// matching net.ErrClosed, and returns once nothing of the Listener runs.
// Connections Accept returned are the caller's to close.
type Listener struct {
	opts ListenOptions
	tcp  *net.TCPListener // nil under RDMAOnly
	rdma *qp.Listener     // nil when RDMA does not listen

	// Each transport's accept goroutine (pump) hands what it accepted, a
	// connection or an error, to one Accept through handoff, unbuffered:
	// a connection is the pump's until an Accept has taken it, and the
	// pump's to close when done closes first.
	handoff chan accepted
	done    chan struct{} // closed by Close, before the listeners
	pumps   sync.WaitGroup
	once    sync.Once

	accepted     [2]atomic.Uint64 // by transport: RDMA, TCP
	acceptErrors atomic.Uint64
	rdmaUp       atomic.Bool // the RDMA listener serves

	mu      sync.Mutex
	rdmaOff *FallbackError // why Auto serves TCP alone
}

type accepted struct {
	c   Conn
	err error
}

var _ net.Listener = (*Listener)(nil)

// portTries bounds Listen's attempts, under Auto with port 0, at a TCP
// port whose number is free for RDMA too.
const portTries = 8

// Listen listens on addr, "host:port", by opts.Policy (nil means the zero
// ListenOptions: Auto): on TCP at addr, and on RDMA at addr's host and, by
// default, the same port number. An empty host listens on every interface
// and every RDMA device; port 0 picks a free port, the same for both.
//
// Under Auto, RDMA that cannot be had here (the libraries missing, no RDMA
// device, the host not an RDMA device's address, its port taken) leaves
// TCP serving alone, and Listen says why to ListenOptions.OnFallback and in
// Stats.RDMAOff. Under RDMAOnly, Listen fails instead, with the words a
// Dialer's RDMAOnly dial uses: the error (errors.Is: syscall.ENODEV,
// loader.ErrUnavailable...) and what to do about it.
func Listen(addr string, opts *ListenOptions) (*Listener, error) {
	var o ListenOptions
	if opts != nil {
		o = *opts
	}
	switch o.Policy {
	case Auto, RDMAOnly, TCPOnly:
	default:
		return nil, fmt.Errorf("rdmapool: listen: unknown %v", o.Policy)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("rdmapool: listen: bad address %q: %w", addr, err)
	}
	l := &Listener{opts: o, handoff: make(chan accepted), done: make(chan struct{})}
	switch o.Policy {
	case TCPOnly:
		tl, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, err
		}
		l.tcp = tl.(*net.TCPListener)
	case RDMAOnly:
		rl, err := listenRDMA(rdmaListenAddr(&o, host, port), o.RDMA)
		if err != nil {
			return nil, withListenRemedy(err)
		}
		l.rdma = rl
	case Auto:
		if err := l.listenAuto(addr, host, port); err != nil {
			return nil, err
		}
	}
	fe := l.rdmaOff // before the pumps, the one goroutine that may change it
	l.start()
	if fe != nil && o.OnFallback != nil {
		o.OnFallback(fe)
	}
	return l, nil
}

// listenAuto listens on TCP, then on RDMA at the port it says, or records
// why RDMA cannot be had. With port 0 it takes another TCP port while the
// number TCP got is taken for RDMA.
func (l *Listener) listenAuto(addr, host, port string) error {
	chosen := (port == "" || port == "0") && l.opts.RDMAAddr == "" && l.opts.RDMAPort == 0
	for try := 1; ; try++ {
		tl, err := net.Listen("tcp", addr)
		if err != nil {
			return err
		}
		tport := strconv.Itoa(tl.Addr().(*net.TCPAddr).Port)
		rl, err := listenRDMA(rdmaListenAddr(&l.opts, host, tport), l.opts.RDMA)
		if err != nil && chosen && try < portTries && errors.Is(err, syscall.EADDRINUSE) {
			tl.Close()
			continue
		}
		l.tcp = tl.(*net.TCPListener)
		if err != nil {
			l.rdmaOff = listenFallback(err)
			return nil
		}
		l.rdma = rl
		return nil
	}
}

// rdmaListenAddr is where RDMA listens: o.RDMAAddr, else host with
// o.RDMAPort, else with port.
func rdmaListenAddr(o *ListenOptions, host, port string) string {
	if o.RDMAAddr != "" {
		return o.RDMAAddr
	}
	if o.RDMAPort != 0 {
		port = strconv.Itoa(o.RDMAPort)
	}
	return net.JoinHostPort(host, port)
}

// listenRDMA listens with qp.Listen, unless the quick look at the kernel's
// device list says this machine has no RDMA device (the look a Pool's
// dials take, which loads no library).
func listenRDMA(addr string, opts *qp.Options) (*qp.Listener, error) {
	if err := lookNoDevice("listen", addr); err != nil {
		return nil, err
	}
	return qp.Listen(addr, opts)
}

// listenFallback is the FallbackError of an RDMA listener that cannot be
// had, or that stopped: its Err says what to do, where there is something.
func listenFallback(err error) *FallbackError {
	reason := fallbackReason(err)
	if reason == "" {
		reason = ReasonFailed
	}
	return &FallbackError{Reason: reason, Err: withListenRemedy(err)}
}

// withListenRemedy is withRemedy for an RDMA listener's error. Where the
// kernel lists RDMA devices (the look found some), ENODEV or EADDRNOTAVAIL
// from binding says the address is none of theirs: a matter of the
// address, not of a missing device or route.
func withListenRemedy(err error) error {
	var own interface{ remedy() string }
	if errors.As(err, &own) {
		return withRemedy(err)
	}
	switch fallbackReason(err) {
	case ReasonNoDevice, ReasonNoRoute:
		return &remedyError{err: err, remedy: "no RDMA device has this address: listen on an address of an interface " +
			"with an RDMA device (rdmapool info lists their GIDs), or on an empty host for every device"}
	}
	return withRemedy(err)
}

// start starts a pump for each transport that listens.
func (l *Listener) start() {
	if tl := l.tcp; tl != nil {
		l.pumps.Add(1)
		go l.pump(TCP, func() (Conn, error) {
			for {
				tc, err := tl.AcceptTCP()
				if err != nil {
					return nil, err
				}
				// An error here is that client's (NewTCPConn has closed
				// it), not the listener's: accept the next.
				if c, err := NewTCPConn(tc); err == nil {
					return c, nil
				}
			}
		})
	}
	if rl := l.rdma; rl != nil {
		l.rdmaUp.Store(true)
		l.pumps.Add(1)
		go l.pump(RDMA, func() (Conn, error) {
			c, err := rl.AcceptConn(context.Background())
			if err != nil {
				return nil, err
			}
			return rdmaConn{c}, nil
		})
	}
}

// pump accepts t's connections and hands each, or each error, to an
// Accept, until Close. After a transient error it goes on; after any
// other the listener is done for: under Auto an RDMA one leaves TCP
// serving (rdmaStopped), else every Accept returns the error until Close.
func (l *Listener) pump(t Transport, accept func() (Conn, error)) {
	defer l.pumps.Done()
	for {
		c, err := accept()
		if err == nil {
			if !l.hand(accepted{c: c}) {
				c.Close() // Close came first: the connection is still ours
				return
			}
			continue
		}
		select {
		case <-l.done:
			return // Close's own error
		default:
		}
		if temporary(err) {
			if !l.hand(accepted{err: err}) {
				return
			}
			continue
		}
		if t == RDMA {
			l.rdmaUp.Store(false)
			if l.tcp != nil {
				l.rdmaStopped(err)
				return
			}
		}
		for l.hand(accepted{err: err}) {
		}
		return
	}
}

// hand gives a to an Accept; it reports false if Close came first.
func (l *Listener) hand(a accepted) bool {
	select {
	case l.handoff <- a:
		return true
	case <-l.done:
		return false
	}
}

// rdmaStopped records that Auto's RDMA listener ended with err, and says
// so to the hook.
func (l *Listener) rdmaStopped(err error) {
	fe := listenFallback(err)
	l.mu.Lock()
	l.rdmaOff = fe
	l.mu.Unlock()
	if h := l.opts.OnFallback; h != nil {
		h(fe)
	}
}

// temporary reports whether err says to accept again (net.Error's
// Temporary, which http.Server and grpc.Server go by).
func temporary(err error) bool {
	var te interface{ Temporary() bool }
	return errors.As(err, &te) && te.Temporary()
}

// Accept waits for the next client of either transport and returns it, a
// Conn. After Close its error matches net.ErrClosed.
func (l *Listener) Accept() (net.Conn, error) {
	c, err := l.AcceptConn(context.Background())
	if err != nil {
		return nil, err // not a nil Conn in a net.Conn
	}
	return c, nil
}

// AcceptConn is Accept, which also returns when ctx ends, with an error
// matching ctx's.
func (l *Listener) AcceptConn(ctx context.Context) (Conn, error) {
	select {
	case <-l.done:
		return nil, l.opError(net.ErrClosed)
	default:
	}
	select {
	case a := <-l.handoff:
		if a.err != nil {
			l.acceptErrors.Add(1)
			return nil, a.err
		}
		if a.c.Transport() == RDMA {
			l.accepted[0].Add(1)
		} else {
			l.accepted[1].Add(1)
		}
		return a.c, nil
	case <-l.done:
		return nil, l.opError(net.ErrClosed)
	case <-ctx.Done():
		return nil, l.opError(ctx.Err())
	}
}

func (l *Listener) opError(err error) error {
	a := l.Addr()
	return &net.OpError{Op: "accept", Net: a.Network(), Addr: a, Err: err}
}

// Close closes both listeners; see Listener. It returns nil, each time.
func (l *Listener) Close() error {
	l.once.Do(func() {
		close(l.done)
		if l.tcp != nil {
			l.tcp.Close()
		}
		if l.rdma != nil {
			l.rdma.Close()
		}
		l.rdmaUp.Store(false)
		l.pumps.Wait()
	})
	return nil
}

// Addr returns TCP's address, or, under RDMAOnly, RDMA's.
func (l *Listener) Addr() net.Addr {
	if l.tcp != nil {
		return l.tcp.Addr()
	}
	return l.rdma.Addr()
}

// TCPAddr returns the TCP listener's address (a *net.TCPAddr), or nil
// under RDMAOnly.
func (l *Listener) TCPAddr() net.Addr {
	if l.tcp == nil {
		return nil
	}
	return l.tcp.Addr()
}

// RDMAAddr returns the RDMA listener's address (a qp.Addr), or nil when
// RDMA did not listen.
func (l *Listener) RDMAAddr() net.Addr {
	if l.rdma == nil {
		return nil
	}
	return l.rdma.Addr()
}

// ListenerStats are a Listener's counters.
type ListenerStats struct {
	// Accepted counts the connections Accept returned, by transport.
	Accepted map[Transport]uint64
	// AcceptErrors counts the errors Accept returned, other than those
	// of Close and of AcceptConn's context.
	AcceptErrors uint64
	// RDMA reports whether RDMA listens: false under TCPOnly, where RDMA
	// cannot be had, after the RDMA listener stopped, and after Close.
	RDMA bool
	// RDMAOff is why Auto serves TCP alone: RDMA could not listen, or
	// stopped. nil when RDMA listens, and under the other policies.
	RDMAOff *FallbackError
}

// Stats returns the listener's counters.
func (l *Listener) Stats() ListenerStats {
	l.mu.Lock()
	off := l.rdmaOff
	l.mu.Unlock()
	return ListenerStats{
		Accepted:     map[Transport]uint64{RDMA: l.accepted[0].Load(), TCP: l.accepted[1].Load()},
		AcceptErrors: l.acceptErrors.Load(),
		RDMA:         l.rdmaUp.Load(),
		RDMAOff:      off,
	}
}
