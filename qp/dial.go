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
// resolves the address and the route with rdma_cm, creates the connection's
// resources, posts every receive and connects, as libvalkey does; then both
// sides advertise their receive buffers. ctx bounds the whole of it.
//
// Errors are *net.OpError values; one that says the RDMA libraries cannot be
// loaded matches loader.ErrUnavailable, a refused connection
// syscall.ECONNREFUSED, and an unreachable address syscall.EHOSTUNREACH.
func Dial(ctx context.Context, addr string, opts *Options) (*Conn, error) {
	c, err := dial(ctx, addr, opts)
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "rdma", Addr: stringAddr(addr), Err: err}
	}
	return c, nil
}

func dial(ctx context.Context, addr string, opts *Options) (*Conn, error) {
	e, err := newEndpoint(ctx, addr, opts, false)
	if err != nil {
		return nil, err
	}
	c := newConn(e.t, e.opts, e.id, e.ec, false)
	if err := c.connect(ctx, e.ap); err != nil {
		c.setErr(err)
		<-c.torndown
		return nil, err
	}
	return c, nil
}

// endpoint is what Dial and Listen both start from: options with defaults,
// the bound libraries, the resolved address, and an rdma_cm id on its own
// event channel.
type endpoint struct {
	opts Options
	t    *verbs.Table
	ap   netip.AddrPort
	ec   *eventChannel
	id   uintptr
}

func newEndpoint(ctx context.Context, addr string, opts *Options, listen bool) (endpoint, error) {
	var e endpoint
	var err error
	if e.opts, err = opts.withDefaults(); err != nil {
		return e, err
	}
	if _, err := loader.Load(); err != nil {
		return e, err
	}
	e.t = verbs.Bound()
	if e.ap, err = resolve(ctx, addr, listen); err != nil {
		return e, err
	}
	if e.ec, err = newEventChannel(e.t); err != nil {
		return e, err
	}
	if e.id, err = e.t.CreateID(e.ec.ch, 0, verbs.PSTCP); err != nil {
		e.ec.close()
		return e, err
	}
	return e, nil
}

func (c *Conn) connect(ctx context.Context, ap netip.AddrPort) error {
	t := c.t
	var src uintptr
	if c.opts.LocalAddr.IsValid() {
		var err error
		if src, err = t.Sockaddr(netip.AddrPortFrom(c.opts.LocalAddr, 0)); err != nil {
			return err
		}
		defer t.Free(src)
	}
	dst, err := t.Sockaddr(ap)
	if err != nil {
		return err
	}
	defer t.Free(dst)
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
	if _, err := c.ec.await(ctx, "resolving the route to "+ap.String(), verbs.EventRouteResolved); err != nil {
		return err
	}
	if err := c.setup(); err != nil {
		return err
	}
	param, pp, err := verbs.New[verbs.ConnParam](t)
	if err != nil {
		return err
	}
	*param = verbs.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7}
	err = t.Connect(c.id, pp)
	t.Free(pp)
	if err != nil {
		return err
	}
	if _, err := c.ec.await(ctx, "connecting to "+ap.String(), verbs.EventEstablished); err != nil {
		return err
	}
	if err := c.onEstablished(); err != nil {
		return err
	}
	c.evStarted.Store(true)
	go c.eventLoop()
	return nil
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

// resolve turns "host:port" into an address; an empty host is allowed only
// for listening (any address).
func resolve(ctx context.Context, addr string, listen bool) (netip.AddrPort, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.AddrPort{}, err
	}
	pn, err := net.DefaultResolver.LookupPort(ctx, "tcp", port)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if host == "" {
		if !listen {
			return netip.AddrPort{}, fmt.Errorf("missing host in %q", addr)
		}
		return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(pn)), nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return netip.AddrPortFrom(a, uint16(pn)), nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(ips[0].Unmap(), uint16(pn)), nil
}

type stringAddr string

func (stringAddr) Network() string  { return "rdma" }
func (a stringAddr) String() string { return string(a) }
