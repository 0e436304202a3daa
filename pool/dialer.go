package pool

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
)

// Dialer dials Valkey servers through a Pool per target address, with the
// exact signatures that go-redis and valkey-go take, without importing
// either:
//
//	rdb := redis.NewClient(&redis.Options{Addr: addr, Dialer: d.DialContext})
//	vk, _ := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, DialCtxFn: d.DialValkey})
//
// The zero value is ready to use, and adds no limit of its own: the client
// library's pool decides how many connections it opens. The client keeps
// its own idle connections, so a connection from a Dialer is closed for
// good when the client closes it; the Pool chooses the transport, counts
// what is open and records fallbacks (Stats, Options.OnFallback). A failed
// dial fails at once, with no backoff of the Dialer's: the client runs its
// own.
//
// A Dialer has one Pool per address, shared by every client that dials
// through it: two clients of the same address count against one MaxOpen,
// and their fallbacks are one Pool's. With MaxOpen set, a dial past it
// waits for a connection to close, for WaitTimeout at most, and then
// fails with an error matching ErrExhausted. Give clients that must not
// share a limit a Dialer each.
type Dialer struct {
	// Options is the template for each target's Pool; its Addr is ignored
	// (the client gives it). A RDMAAddr set here is every target's: for
	// the nodes of a cluster, leave it empty and set RDMAPort (one RDMA
	// port for every node) or RDMAAddrOf (each node's own).
	Options Options

	mu     sync.Mutex
	pools  map[string]*Pool
	closed bool
}

// Pool returns the pool for addr, creating it.
func (d *Dialer) Pool(addr string) (*Pool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, ErrClosed
	}
	if p, ok := d.pools[addr]; ok {
		return p, nil
	}
	o := d.Options
	o.Addr = addr
	o.MinIdle = 0 // the client library keeps its own idle connections
	p, err := New(o)
	if err != nil {
		return nil, err
	}
	if d.pools == nil {
		d.pools = map[string]*Pool{}
	}
	d.pools[addr] = p
	return p, nil
}

// DialContext has the signature of go-redis v9's Options.Dialer.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if network != "tcp" && network != "tcp4" && network != "tcp6" {
		return nil, &net.OpError{Op: "dial", Net: network, Err: fmt.Errorf("rdmapool: network %q is not supported (want tcp)", network)}
	}
	return d.dial(ctx, addr)
}

// DialValkey has the signature of valkey-go's ClientOption.DialCtxFn.
//
// Of the *net.Dialer, a TCP dial uses every setting (LocalAddr, KeepAlive,
// Control...), and its Timeout bounds the dial, with the Pool's
// DialTimeout, whichever is shorter; an RDMA dial, which has no such
// settings, takes only the Timeout. (A connection the Pool already holds
// idle is handed out as it is.)
//
// With a TLS config, RDMA (which has no TLS) is not used: policy RDMAOnly
// fails, the others connect over TCP with TLS, through the Pool (counted
// and bounded by MaxOpen, with its dial timeout), and Auto
// records each such connection as a fallback (ReasonTLS) without making the
// Pool's other dials use TCP. Without a ServerName, the config takes the
// target's host, as tls.Dialer does.
func (d *Dialer) DialValkey(ctx context.Context, addr string, nd *net.Dialer, cfg *tls.Config) (net.Conn, error) {
	p, err := d.Pool(addr)
	if err != nil {
		return nil, err
	}
	if cfg != nil && p.opts.Policy == RDMAOnly {
		return nil, &net.OpError{Op: "dial", Net: "rdma", Err: errTLSRDMA}
	}
	e, err := p.get(ctx, &dialSpec{nd: nd, tls: cfg})
	if err != nil {
		return nil, err
	}
	return e.client(), nil
}

func (d *Dialer) dial(ctx context.Context, addr string) (net.Conn, error) {
	p, err := d.Pool(addr)
	if err != nil {
		return nil, err
	}
	e, err := p.get(ctx, nil)
	if err != nil {
		return nil, err
	}
	return e.client(), nil
}

// Stats returns the stats of each target's pool. The client keeps its
// own idle connections, so Open counts the connections it holds, idle in
// its pool or busy: Idle is 0 and InUse equals Open.
func (d *Dialer) Stats() map[string]Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := make(map[string]Stats, len(d.pools))
	for a, p := range d.pools {
		m[a] = p.Stats()
	}
	return m
}

// Close closes every pool.
func (d *Dialer) Close() error {
	d.mu.Lock()
	pools := d.pools
	d.pools, d.closed = nil, true
	d.mu.Unlock()
	for _, p := range pools {
		p.Close()
	}
	return nil
}
