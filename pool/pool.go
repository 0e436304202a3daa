package pool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed54442f1a/rdmapool/qp"
)

// Options configure a Pool. Addr is required.
type Options struct {
	// Addr is the target's TCP address, host:port.
	Addr string
	// RDMAAddr is the target's RDMA address; empty means Addr's host with
	// RDMAPort, or Addr itself when RDMAPort is 0.
	RDMAAddr string
	// RDMAPort is the RDMA port when RDMAAddr is empty (valkey-server's
	// --rdma-port); 0 means the TCP port.
	RDMAPort int
	// RDMAAddrOf, if set, maps Addr to the RDMA address when RDMAAddr is
	// empty: for a Dialer shared by the nodes of a cluster whose RDMA
	// ports differ from their TCP ports (RDMAAddrTable, RDMAPortOffset).
	// An empty answer means the default (RDMAPort); an error fails New,
	// and so the Dialer's dial of that node.
	RDMAAddrOf func(addr string) (string, error)
	// Policy chooses the transport; the zero value is Auto, and New
	// rejects a value other than Auto, RDMAOnly and TCPOnly.
	Policy Policy
	// MinIdle connections are kept open, dialled in the background.
	MinIdle int
	// MaxOpen bounds the connections open at once, idle or in use; 0 (the
	// default) means no bound. At the bound, Get waits for a connection to
	// come back, for WaitTimeout at most.
	MaxOpen int
	// WaitTimeout bounds a Get's wait at MaxOpen, whatever its context;
	// the Get then fails with an error matching ErrExhausted. 0 means 5 s.
	WaitTimeout time.Duration
	// MaxIdleTime closes connections idle for longer; 0 means 5 minutes,
	// negative never.
	MaxIdleTime time.Duration
	// MaxLifetime closes connections older than this when they come back
	// or sit idle; 0 means never.
	MaxLifetime time.Duration
	// DialTimeout bounds one dial; 0 means 5 s.
	DialTimeout time.Duration
	// RDMARetryInterval is how long Auto uses TCP after a fallback before
	// it tries RDMA again; 0 means 30 s.
	RDMARetryInterval time.Duration
	// MinBackoff and MaxBackoff bound the wait between the failed dials
	// of the background top-up to MinIdle; 0 means 10 ms and 2 s. A Get
	// never waits for them: it dials at once, and a failed dial fails at
	// once (client libraries run their own backoff).
	MinBackoff, MaxBackoff time.Duration
	// FallbackDelay is how long Auto gives an RDMA dial before it starts a
	// TCP dial beside it (happy eyeballs), at most half the time the dial
	// has (DialTimeout, the context's deadline); the first to connect is
	// used and the other cancelled. An RDMA dial that fails starts TCP at
	// once. 0 means the default, which follows the path's setup time
	// (DefaultFallbackDelay); negative, TCP only once RDMA has failed.
	FallbackDelay time.Duration
	// OnFallback, if set, is called (on the dialling goroutine, once the
	// connection is made) when the pool's connections start to use TCP
	// although RDMA was preferred: for the first such connection, for one
	// whose reason differs from the last call's, and for the first after
	// an RDMA connection; not for each connection (Stats.FallbackConns
	// counts those the last call covers, Stats.Fallbacks all of them). The
	// dialling goroutine may be the pool's own, which Close waits for: the
	// hook must not call Close.
	OnFallback func(*FallbackError)
	// RDMA configures RDMA connections.
	RDMA *qp.Options
	// TCPEngine dials and drives TCP connections: nil means TCPNetpoll;
	// package pool/gnettcp has gnet's event loops (gnettcp.Engine).
	TCPEngine TCPEngine
	// Network, if set, dials the connections instead of qp.Dial and the
	// TCP engine (package pooltest has an in-memory one); TCPEngine is
	// then ignored.
	Network Network
}

// DefaultFallbackDelay is Options.FallbackDelay's default, RFC 8305's
// Connection Attempt Delay. An RDMA connection's setup (rdma_cm's address
// and route resolution, the connect, the feature exchange) takes a few
// milliseconds on hardware. In the soft-RoCE VM under TCG emulation it
// took 70-200 ms at the median and 0.5-0.65 s at p90 through a pool with
// up to 40 connections open (docs/benchmarks.md): there a longer delay
// keeps every dial on RDMA, at the cost of that much more per dial on an
// RDMA path that hangs. A client with a shorter dial timeout gets TCP
// within half of it (Options.FallbackDelay).
//
// Left at the default, the delay follows the path: twice the slowest
// recent RDMA setup the pool saw (a decaying maximum), at least
// DefaultFallbackDelay and at most maxFallbackDelay. An RDMA dial that
// loses the race to TCP is then not cancelled but left to finish (within
// the dial's deadline) and closed, so that its setup time is learnt: on a
// slow path (emulation, a loaded CM) the next dials wait long enough for
// RDMA, while a hung path, which never finishes, teaches nothing.
const DefaultFallbackDelay = 250 * time.Millisecond

// maxFallbackDelay bounds the delay an adaptive FallbackDelay learns.
const maxFallbackDelay = 2 * time.Second

// Stats are a pool's counters.
//
// Open counts the connections the pool has made and not yet closed, Idle
// those it holds for a later Get, InUse the others. Through a Dialer, the
// client library keeps its own idle connections, and a connection is
// closed for good when the client closes it: there Idle is always 0 and
// InUse equals Open, the connections the client holds, idle in its pool or
// busy.
type Stats struct {
	Open, Idle, InUse int
	Waits             uint64        // Gets that had to wait for a connection
	WaitTime          time.Duration // total time Gets waited
	Dials             map[Transport]uint64
	Fallbacks         map[FallbackReason]uint64 // connections that use TCP although RDMA was preferred, by reason
	LastFallback      *FallbackError            // the latest of those; nil if none
	// FallbackConns counts the connections made over TCP under the reason
	// of OnFallback's last call, since that call: the connections it
	// covers.
	FallbackConns uint64
	DialErrors    uint64
	Unhealthy     uint64 // connections found dead and closed
	Evicted       uint64 // closed for idleness or age, or for a TLS connection's place
}

// ErrClosed is returned by Get on a closed pool; it matches net.ErrClosed.
var ErrClosed = fmt.Errorf("rdmapool: pool closed: %w", net.ErrClosed)

// ErrExhausted is matched by the error of a Get that waited at MaxOpen
// until WaitTimeout passed or its context ended (the error then matches
// the context's error too).
var ErrExhausted = errors.New("rdmapool: pool exhausted: MaxOpen connections in use")

// Pool holds connections to one target.
type Pool struct {
	opts Options
	net  Network

	mu        sync.Mutex
	idle      []*poolEntry // LIFO: the most recently used is reused first
	open      int
	waiters   []chan struct{}
	closed    bool
	tcpUntil  time.Time      // Auto uses TCP until then, after a fallback
	rdmaErr   *FallbackError // why the last RDMA dial fell back
	backoff   time.Duration
	nextDial  time.Time // after a failed dial, no new dial before this
	lastFall  *FallbackError
	fallbacks map[FallbackReason]uint64
	hooked    FallbackReason // of OnFallback's last call; "" after an RDMA connection
	covered   uint64         // fallbacks since OnFallback's last call
	reaping   int            // losing dials not yet ended (reap)
	// setup is the slowest recent RDMA setup (decaying: fallbackDelay),
	// adaptive whether the FallbackDelay is the default, which follows it.
	setup    time.Duration
	adaptive bool
	reaped   *sync.Cond                  // on mu: reaping fell to 0
	noDevice func(rdmaAddr string) error // the default Network's quick look; nil for others

	dials      [2]atomic.Uint64 // by transport: RDMA, TCP
	waits      atomic.Uint64
	waitNanos  atomic.Int64
	dialErrors atomic.Uint64
	unhealthy  atomic.Uint64
	evicted    atomic.Uint64

	stopped context.Context // ends when the pool closes, cancelling dials
	stop    context.CancelFunc
	done    chan struct{}
	kick    chan struct{} // wakes the maintainer to top up MinIdle
	// maintaining says the maintainer runs (on mu): from New with MinIdle,
	// else from the first connection that goes idle. A Dialer's pools,
	// whose connections never go idle, start none.
	maintaining bool
}

// New returns a pool for the target; it dials MinIdle connections in the
// background.
func New(opts Options) (*Pool, error) {
	if opts.Addr == "" {
		return nil, errors.New("rdmapool: pool: Addr is required")
	}
	if _, _, err := net.SplitHostPort(opts.Addr); err != nil {
		return nil, fmt.Errorf("rdmapool: pool: bad Addr %q: %w", opts.Addr, err)
	}
	switch opts.Policy {
	case Auto, RDMAOnly, TCPOnly:
	default:
		return nil, fmt.Errorf("rdmapool: pool: unknown %v", opts.Policy)
	}
	if err := resolveRDMAAddr(&opts); err != nil {
		return nil, err
	}
	if opts.TCPEngine == nil {
		opts.TCPEngine = TCPNetpoll
	}
	if opts.MaxOpen <= 0 {
		opts.MaxOpen = math.MaxInt
	}
	if opts.MinIdle > opts.MaxOpen {
		opts.MinIdle = opts.MaxOpen
	}
	if opts.WaitTimeout <= 0 {
		opts.WaitTimeout = 5 * time.Second
	}
	if opts.MaxIdleTime == 0 {
		opts.MaxIdleTime = 5 * time.Minute
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 5 * time.Second
	}
	adaptive := opts.FallbackDelay == 0
	if adaptive {
		opts.FallbackDelay = DefaultFallbackDelay
	}
	if opts.RDMARetryInterval <= 0 {
		opts.RDMARetryInterval = 30 * time.Second
	}
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = 10 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 2 * time.Second
	}
	p := &Pool{
		opts: opts, net: opts.Network, fallbacks: map[FallbackReason]uint64{}, adaptive: adaptive,
		done: make(chan struct{}), kick: make(chan struct{}, 1),
	}
	if p.net == nil {
		p.net = netDefault{engine: opts.TCPEngine}
		p.noDevice = noRDMADevice
	}
	p.reaped = sync.NewCond(&p.mu)
	p.stopped, p.stop = context.WithCancel(context.Background())
	if opts.MinIdle > 0 {
		p.mu.Lock()
		p.startMaintainer()
		p.mu.Unlock()
	}
	return p, nil
}

// Get returns an idle connection, or dials one, or, when MaxOpen are
// open, waits for one to come back until ctx ends or WaitTimeout passes
// (ErrExhausted). Close the connection to return it. The PooledConn is new
// each time: once closed, it no longer touches the connection, which a
// later Get may hand to someone else.
func (p *Pool) Get(ctx context.Context) (PooledConn, error) {
	e, err := p.get(ctx, nil)
	if err != nil {
		return nil, err
	}
	return e.handle(), nil
}

// get is Get, dialling as ds says when it dials (nil: the pool's way). A
// TLS connection is dialled afresh, never reused: it takes a free place,
// or the place of the least recently used idle connection, which it
// closes, or waits for one.
func (p *Pool) get(ctx context.Context, ds *dialSpec) (*poolEntry, error) {
	fresh := ds != nil && ds.tls != nil
	var waitStart time.Time
	var waitTimer *time.Timer
	defer func() {
		if !waitStart.IsZero() {
			p.waitNanos.Add(int64(time.Since(waitStart)))
		}
	}()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, ErrClosed
		}
		if n := len(p.idle); n > 0 && !fresh {
			c := p.idle[n-1]
			p.idle[n-1] = nil // the array keeps no closed connection alive
			p.idle = p.idle[:n-1]
			p.mu.Unlock()
			if p.expired(c, time.Now()) {
				p.evicted.Add(1)
				p.discard(c)
				continue
			}
			if !healthy(c.conn) {
				p.unhealthy.Add(1)
				p.discard(c)
				continue
			}
			return c, nil
		}
		var lru *poolEntry
		if p.open >= p.opts.MaxOpen && fresh && len(p.idle) > 0 {
			lru = p.idle[0]
			n := copy(p.idle, p.idle[1:])
			p.idle[n] = nil
			p.idle = p.idle[:n]
		}
		if lru != nil || p.open < p.opts.MaxOpen {
			if lru == nil {
				p.open++
			}
			p.mu.Unlock()
			if lru != nil { // its place is ours
				p.evicted.Add(1)
				lru.conn.Close()
			}
			c, err := p.dial(ctx, ds)
			if err != nil {
				p.release()
				return nil, err
			}
			return c, nil
		}
		w := make(chan struct{}, 1)
		p.waiters = append(p.waiters, w)
		p.mu.Unlock()
		if waitStart.IsZero() {
			waitStart = time.Now()
			p.waits.Add(1)
			waitTimer = time.NewTimer(p.opts.WaitTimeout)
			defer waitTimer.Stop()
		}
		select {
		case <-w:
		case <-waitTimer.C:
			p.unwait(w)
			return nil, fmt.Errorf("%w (%d open; waited %v)", ErrExhausted, p.opts.MaxOpen, p.opts.WaitTimeout)
		case <-ctx.Done():
			p.unwait(w)
			return nil, fmt.Errorf("%w (%d open): %w", ErrExhausted, p.opts.MaxOpen, ctx.Err())
		}
	}
}

// unwait takes a Get that gave up off the waiters; a slot handed to it
// meanwhile goes to the next.
func (p *Pool) unwait(w chan struct{}) {
	p.mu.Lock()
	for i, x := range p.waiters {
		if x == w {
			p.waiters = append(p.waiters[:i], p.waiters[i+1:]...)
			break
		}
	}
	p.mu.Unlock()
	select {
	case <-w: // a slot was handed to us meanwhile: pass it on
		p.notify()
	default:
	}
}

// notify wakes one waiter, if any.
func (p *Pool) notify() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notifyLocked()
}

func (p *Pool) notifyLocked() {
	if len(p.waiters) > 0 {
		w := p.waiters[0]
		p.waiters = p.waiters[1:]
		w <- struct{}{}
	}
}

// release gives back the slot of a connection that was closed or never
// opened.
func (p *Pool) release() {
	p.mu.Lock()
	p.open--
	p.notifyLocked()
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// discard closes a connection and gives back its slot.
func (p *Pool) discard(c *poolEntry) {
	c.conn.Close()
	p.release()
}

// put returns a connection from Get.
func (p *Pool) put(c *poolEntry) {
	if c.broken.Load() || c.once {
		p.discard(c)
		return
	}
	if p.expired(c, time.Now()) {
		p.evicted.Add(1)
		p.discard(c)
		return
	}
	c.lastUsed = time.Now()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.discard(c)
		return
	}
	p.idle = append(p.idle, c)
	p.notifyLocked()
	p.startMaintainer()
	p.mu.Unlock()
}

func (p *Pool) expired(c *poolEntry, now time.Time) bool {
	if p.opts.MaxLifetime > 0 && now.Sub(c.created) > p.opts.MaxLifetime {
		return true
	}
	return p.opts.MaxIdleTime > 0 && !c.lastUsed.IsZero() && now.Sub(c.lastUsed) > p.opts.MaxIdleTime
}

// HealthChecker is implemented by connections that can tell, without
// blocking or allocating, that they are open, their peer has not closed
// them and no data waits to be read. Both of rdmapool's transports do.
type HealthChecker interface {
	Healthy() bool
}

// healthy checks, without blocking, that an idle connection is still
// usable. Data or EOF on an idle connection means it is broken (the peer
// closed, or it is out of step). Both transports tell (HealthChecker); a
// TLS connection, which the pool never hands out twice, is not checked. (A
// read with a deadline in the past cannot stand in: as on net.TCPConn, it
// fails before it looks at the connection.)
func healthy(c Conn) bool {
	if hc, ok := c.(HealthChecker); ok {
		return hc.Healthy()
	}
	return true
}

// Close closes every idle connection, wakes every waiter and cancels the
// dials under way (their Gets return ErrClosed); connections in use are
// closed when they come back.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	idle := p.idle
	p.idle = nil
	waiters := p.waiters
	p.waiters = nil
	p.mu.Unlock()
	for _, w := range waiters {
		w <- struct{}{}
	}
	p.stop() // wakes Gets in the dial backoff and cancels the dials under way
	p.mu.Lock()
	maintaining := p.maintaining
	p.mu.Unlock()
	if maintaining {
		<-p.done
	}
	p.mu.Lock()
	for p.reaping > 0 { // losing dials, cancelled: each closes what it made
		p.reaped.Wait()
	}
	p.mu.Unlock()
	// In parallel: closing an RDMA connection waits for its teardown
	// (tens of milliseconds under emulation), and a pool may hold many.
	var wg sync.WaitGroup
	for _, c := range idle {
		wg.Go(func() { p.discard(c) })
	}
	wg.Wait()
	return nil
}

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := Stats{
		Open: p.open, Idle: len(p.idle), InUse: p.open - len(p.idle),
		Waits: p.waits.Load(), WaitTime: time.Duration(p.waitNanos.Load()),
		Dials:        map[Transport]uint64{RDMA: p.dials[0].Load(), TCP: p.dials[1].Load()},
		Fallbacks:    map[FallbackReason]uint64{},
		LastFallback: p.lastFall, FallbackConns: p.covered,
		DialErrors: p.dialErrors.Load(), Unhealthy: p.unhealthy.Load(), Evicted: p.evicted.Load(),
	}
	for k, v := range p.fallbacks {
		s.Fallbacks[k] = v
	}
	return s
}

// startMaintainer starts the maintainer, once; p.mu is held. Not after
// Close, which no longer waits for it.
func (p *Pool) startMaintainer() {
	if !p.maintaining && !p.closed {
		p.maintaining = true
		go p.maintain()
	}
}

// maintain evicts idle connections past MaxIdleTime or MaxLifetime and
// keeps MinIdle open, backing off after failed dials.
func (p *Pool) maintain() {
	defer close(p.done)
	period := time.Second
	if p.opts.MaxIdleTime > 0 {
		period = min(period, p.opts.MaxIdleTime/2)
	}
	if p.opts.MaxLifetime > 0 {
		period = min(period, p.opts.MaxLifetime/2)
	}
	t := time.NewTicker(max(period, 10*time.Millisecond))
	defer t.Stop()
	for {
		p.evictIdle()
		p.topUp()
		select {
		case <-p.stopped.Done():
			return
		case <-t.C:
		case <-p.kick:
		}
	}
}

func (p *Pool) evictIdle() {
	now := time.Now()
	p.mu.Lock()
	var old []*poolEntry
	keep := p.idle[:0]
	for _, c := range p.idle {
		if p.expired(c, now) {
			old = append(old, c)
		} else {
			keep = append(keep, c)
		}
	}
	clear(p.idle[len(keep):]) // the evicted left at the tail
	p.idle = keep
	p.mu.Unlock()
	for _, c := range old {
		p.evicted.Add(1)
		p.discard(c)
	}
}

func (p *Pool) topUp() {
	for {
		p.mu.Lock()
		if p.closed || len(p.idle) >= p.opts.MinIdle || p.open >= p.opts.MaxOpen || time.Now().Before(p.nextDial) {
			p.mu.Unlock()
			return
		}
		p.open++
		p.mu.Unlock()
		c, err := p.dial(context.Background(), nil) // the pool's Close cancels it
		if err != nil {
			p.release()
			return
		}
		p.put(c)
	}
}
