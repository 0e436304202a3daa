package qp

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
	"github.com/seed54442f1a/rdmapool/loader"
)

// Dial connects to a Valkey-over-RDMA server at addr ("host:port"): it
// resolves the address and the route with rdma_cm (making the connection's
// resources, but for the QP, while the route resolves), creates the QP,
// posts every receive and connects, as libvalkey does; then both sides
// advertise their receive buffers. ctx bounds the whole of it.
//
// Errors are *net.OpError values; one that says the RDMA libraries cannot be
// loaded matches loader.ErrUnavailable, a refused connection
// syscall.ECONNREFUSED, and an unreachable address syscall.EHOSTUNREACH.
func Dial(ctx context.Context, addr string, opts *Options) (*Conn, error) {
	c, err := dial(ctx, addr, opts)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "rdma", Addr: stringAddr(addr), Err: fileLimitError(err)}
	}
	return c, nil
}

func dial(ctx context.Context, addr string, opts *Options) (*Conn, error) {
	o, t, err := prepare(opts)
	if err != nil {
		return nil, err
	}
	aps, err := resolve(ctx, addr, false)
	if err != nil {
		return nil, err
	}
	// Each address a name resolves to in turn, as net.Dial does: the
	// first may be of a family, or on a path, that RDMA cannot reach.
	// As there, with a deadline each address but the last gets its share
	// of the time left (at least 2 s), so that one that does not answer
	// leaves time for the next; and the caller's giving up is the error
	// then, not an earlier address's.
	var first error
	for i, ap := range aps {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if dl, ok := ctx.Deadline(); ok && i < len(aps)-1 {
			left := time.Until(dl)
			actx, cancel = context.WithTimeout(ctx, min(left, max(left/time.Duration(len(aps)-i), 2*time.Second)))
		}
		c, err := dialOne(actx, t, o, ap)
		cancel()
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// dialOne connects to one address.
func dialOne(ctx context.Context, t *verbs.Table, o Options, ap netip.AddrPort) (*Conn, error) {
	ec, id, err := newID(t)
	if err != nil {
		return nil, err
	}
	c := newConn(t, o, id, ec, false)
	if err := c.connect(ctx, ap); err != nil {
		c.fail(err)
		<-c.torndown
		return nil, err
	}
	return c, nil
}

// prepare is what Dial and Listen both start from: options with defaults
// and the bound libraries.
func prepare(opts *Options) (Options, *verbs.Table, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return o, nil, err
	}
	if _, err := loader.Load(); err != nil {
		return o, nil, err
	}
	raiseFileLimit()
	return o, verbs.Bound(), nil
}

// newID makes an rdma_cm id on the process's shared event channel.
func newID(t *verbs.Table) (*eventChannel, verbs.Ptr[verbs.CMID], error) {
	cm, err := acquireCM(t)
	if err != nil {
		return nil, verbs.Ptr[verbs.CMID]{}, err
	}
	id, err := t.CreateID(cm.ch, 0, verbs.PSTCP)
	if err != nil {
		cm.release()
		return nil, verbs.Ptr[verbs.CMID]{}, err
	}
	return cm.open(id.Addr()), id, nil
}

func (c *Conn) connect(ctx context.Context, ap netip.AddrPort) error {
	t := c.t
	var src verbs.Ptr[verbs.Sockaddr] // NULL: any
	if c.opts.LocalAddr.IsValid() {
		var err error
		if src, err = t.Sockaddr(netip.AddrPortFrom(c.opts.LocalAddr, 0)); err != nil {
			return err
		}
		defer verbs.Release(t, src)
	}
	dst, err := t.Sockaddr(ap)
	if err != nil {
		return err
	}
	defer verbs.Release(t, dst)
	ms := timeoutMS(ctx)
	if err := t.ResolveAddr(c.id, src, dst, ms); err != nil {
		return err
	}
	if _, err := c.ec.await(ctx, "resolving "+ap.String(), verbs.EventAddrResolved); err != nil {
		return err
	}
	if err := t.ResolveRoute(c.id, timeoutMS(ctx)); err != nil {
		return err
	}
	// The resources but the QP need only the device, known now: they are
	// made while the route resolves.
	if err := c.prepare(verbs.IDContext(c.id)); err != nil {
		return err
	}
	if _, err := c.ec.await(ctx, "resolving the route to "+ap.String(), verbs.EventRouteResolved); err != nil {
		return err
	}
	if err := c.setupQP(); err != nil {
		return err
	}
	param, pp, err := verbs.New[verbs.ConnParam](t)
	if err != nil {
		return err
	}
	// The QP is our own, not the id's: its number goes in the parameters.
	// rnr_retry_count 7 is what the server's QP is to use toward us.
	*param = verbs.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7, QPNum: c.res.qpNum()}
	err = t.Connect(c.id, pp)
	verbs.Release(t, pp)
	if err != nil {
		return err
	}
	// The server's REP comes as CONNECT_RESPONSE, since the id has no QP:
	// ours is made ready here and the connection completed (ownqp.go). On
	// iWARP the kernel connects the QP itself and reports ESTABLISHED.
	ev, err := c.ec.await(ctx, "connecting to "+ap.String(), verbs.EventConnectResponse, verbs.EventEstablished)
	if err != nil {
		return err
	}
	if ev.typ == verbs.EventConnectResponse {
		if err := c.establish(); err != nil {
			return fmt.Errorf("rdma: connecting to %s: %w", ap, err)
		}
	}
	c.onEstablished()
	// The feature exchange, then the receive buffer (features.go).
	if err := c.ask(); err != nil {
		return err
	}
	k, err := c.awaitPeer(ctx, featureReplyWait)
	if err != nil {
		return err
	}
	if err := c.advertiseFirst(k); err != nil {
		return err
	}
	c.evStarted.Store(true)
	go c.eventLoop()
	return nil
}

// establish makes the client's own QP ready to send and receive and
// completes the connection (rdma_establish sends the RTU), after the
// server's CONNECT_RESPONSE. A teardown under way (the reactor failed the
// connection) is waited for or waits: it frees the QP under smu, and the id
// after, when an establish that takes smu finds the life ended.
func (c *Conn) establish() error {
	c.smu.Lock()
	defer c.smu.Unlock()
	if c.life.ended() {
		return c.endErr()
	}
	if err := c.res.readyOwnQP(); err != nil {
		return err
	}
	return c.t.Establish(c.id)
}

// timeoutMS is what rdma_resolve_addr and rdma_resolve_route may take: the
// time ctx leaves, between 100 ms and 10 s.
func timeoutMS(ctx context.Context) int {
	d := 10 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	return int(max(d, 100*time.Millisecond) / time.Millisecond)
}

// resolve turns "host:port" into addresses: one for an IP address, each
// that a name resolves to; an empty host is allowed only for listening
// (any address).
func resolve(ctx context.Context, addr string, listen bool) ([]netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	pn, err := net.DefaultResolver.LookupPort(ctx, "tcp", port)
	if err != nil {
		return nil, err
	}
	if host == "" {
		if !listen {
			return nil, fmt.Errorf("missing host in %q", addr)
		}
		return []netip.AddrPort{netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(pn))}, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.AddrPort{netip.AddrPortFrom(a, uint16(pn))}, nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	aps := make([]netip.AddrPort, len(ips))
	for i, ip := range ips {
		aps[i] = netip.AddrPortFrom(ip.Unmap(), uint16(pn))
	}
	return aps, nil
}

type stringAddr string

func (stringAddr) Network() string  { return "rdma" }
func (a stringAddr) String() string { return string(a) }
