package qp

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// Listener accepts Valkey-over-RDMA connections, such as those of
// valkey-cli --rdma or of Dial. It is a net.Listener.
//
// A listener bound to one address keeps, from its first connection on, the
// resources of the next connection but its queue pair made in advance
// (a connection's registered memory and completion queue), so that a
// client's connect waits only for the queue pair to be created.
type Listener struct {
	t       *verbs.Table
	opts    Options
	ec      *eventChannel
	id      verbs.Ptr[verbs.CMID]
	addr    Addr
	acceptQ chan *Conn
	done    chan struct{}
	evDone  chan struct{} // the event loop returned
	shut    chan struct{} // shutdown finished
	once    sync.Once
	err     error // why the listener ended, set before done closes

	mu      sync.Mutex
	pending map[*Conn]struct{} // accepted by rdma_cm, not yet by Accept

	// spare is the next connection's resources but its QP, made after a
	// connection is accepted, on the listener's own device (a listener
	// bound to one address: the ids of its requests are on the same
	// device), so that a request waits only for its QP. Only the event
	// loop touches it, and then shutdown, after the loop has returned.
	spare *Conn
}

var _ net.Listener = (*Listener)(nil)

// Listen listens on addr ("ip:port"; an empty ip means every RDMA device,
// port 0 picks a free port).
func Listen(addr string, opts *Options) (*Listener, error) {
	l, err := listen(addr, opts)
	if err != nil {
		return nil, &net.OpError{Op: "listen", Net: "rdma", Addr: stringAddr(addr), Err: fileLimitError(err)}
	}
	return l, nil
}

func listen(addr string, opts *Options) (*Listener, error) {
	o, t, err := prepare(opts)
	if err != nil {
		return nil, err
	}
	aps, err := resolve(context.Background(), addr, true)
	if err != nil {
		return nil, err
	}
	ec, id, err := newID(t)
	if err != nil {
		return nil, err
	}
	sa, err := t.Sockaddr(aps[0]) // of a name's addresses, the first, as net.Listen
	if err == nil {
		err = t.BindAddr(id, sa)
		verbs.Release(t, sa)
	}
	if err == nil {
		err = t.Listen(id, o.Backlog)
	}
	if err != nil {
		ec.shut()
		t.DestroyID(id)
		ec.release()
		return nil, err
	}
	local, _ := verbs.CMIDAddrs(id)
	l := &Listener{
		t: t, opts: o, ec: ec, id: id, addr: Addr{local},
		acceptQ: make(chan *Conn, o.Backlog),
		done:    make(chan struct{}),
		evDone:  make(chan struct{}),
		shut:    make(chan struct{}),
		pending: map[*Conn]struct{}{},
	}
	go l.loop()
	return l, nil
}

// Addr returns the address the listener is bound to.
func (l *Listener) Addr() net.Addr { return l.addr }

// Accept waits for the next connection.
func (l *Listener) Accept() (net.Conn, error) { return l.AcceptConn(context.Background()) }

// AcceptConn waits for the next connection or for ctx to end.
func (l *Listener) AcceptConn(ctx context.Context) (*Conn, error) {
	select {
	case c := <-l.acceptQ:
		// A connection the listener's shutdown has taken to close is not
		// handed out.
		if l.claim(c) {
			return c, nil
		}
	case <-l.done:
	case <-ctx.Done():
		return nil, &net.OpError{Op: "accept", Net: "rdma", Addr: l.addr, Err: ctx.Err()}
	}
	<-l.done
	return nil, &net.OpError{Op: "accept", Net: "rdma", Addr: l.addr, Err: l.err}
}

// Close stops listening and closes the connections not yet accepted.
// Accepted connections are not affected.
func (l *Listener) Close() error {
	l.end(net.ErrClosed)
	<-l.shut
	return nil
}

func (l *Listener) end(err error) {
	l.once.Do(func() {
		l.err = err
		close(l.done)
		go l.shutdown()
	})
}

func (l *Listener) shutdown() {
	l.ec.shut() // ends the event loop
	<-l.evDone
	if c := l.spare; c != nil {
		l.spare = nil
		c.fail(net.ErrClosed)
		<-c.torndown // before the device may be released
	}
	l.ec.drainRequests()
	l.t.DestroyID(l.id)
	l.ec.release()
	if l.err == ErrDeviceRemoved {
		l.t.ReleaseDeadDevices()
	}
	l.mu.Lock()
	conns := make([]*Conn, 0, len(l.pending))
	for c := range l.pending {
		conns = append(conns, c)
	}
	l.pending = nil
	l.mu.Unlock()
	// At once: each Close may wait out its linger (Options.CloseLinger).
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() { c.Close() })
	}
	wg.Wait()
	close(l.shut)
}

// loop handles the listener's rdma_cm events: connection requests, and the
// removal of its device.
func (l *Listener) loop() {
	defer close(l.evDone)
	for {
		ev, err := l.ec.next()
		if err != nil {
			select {
			case <-l.done: // our shutdown, which closes the file
			default:
				l.end(fmt.Errorf("rdma: reading the listener's rdma_cm events: %w", err))
			}
			return
		}
		switch ev.typ {
		case verbs.EventConnectRequest:
			l.handleRequest(ev.id, ev.box)
		case verbs.EventDeviceRemoval:
			if v := verbs.IDContext(l.id); !v.IsNil() {
				deviceGone(l.t.ContextDeviceName(v))
			}
			l.end(ErrDeviceRemoved)
			return
		}
	}
}

// handleRequest creates a new id's resources, posts every receive and
// accepts. The id is on the process's shared event channel, with ec its
// share, so its connection outlives the listener. The connection reaches
// Accept once ESTABLISHED.
func (l *Listener) handleRequest(id verbs.Ptr[verbs.CMID], ec *eventChannel) {
	t := l.t
	if ec == nil {
		t.Reject(id)
		t.DestroyID(id)
		return
	}
	c := l.takeSpare(id, ec)
	var err error
	if c != nil {
		err = c.setupQP()
	} else {
		c = newConn(t, l.opts, id, ec, true)
		err = c.setup()
	}
	c.onEstablish = l.deliver
	c.onTeardown = l.untrack
	if err != nil {
		t.Reject(id)
		c.fail(err)
		return
	}
	defer l.makeSpare()
	param, pp, err := verbs.New[verbs.ConnParam](t)
	if err != nil {
		c.fail(err)
		return
	}
	*param = verbs.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7}
	err = t.Accept(id, pp)
	verbs.Release(t, pp)
	if err != nil {
		c.fail(err)
		return
	}
	if !l.track(c) {
		c.fail(net.ErrClosed)
		return
	}
	c.evStarted.Store(true)
	go c.eventLoop()
}

// takeSpare returns the spare, given id and its share ec of the event
// channel, if it is on id's device; a spare on another is freed.
func (l *Listener) takeSpare(id verbs.Ptr[verbs.CMID], ec *eventChannel) *Conn {
	c := l.spare
	if c == nil {
		return nil
	}
	l.spare = nil
	if c.res.ctx != verbs.IDContext(id) {
		c.fail(net.ErrClosed)
		return nil
	}
	c.id, c.ec = id, ec
	return c
}

// makeSpare makes the spare, if the listener is bound to a device and has
// none. A failure (locked memory running out, say) leaves it without: the
// next request makes its own resources and meets the error itself.
func (l *Listener) makeSpare() {
	ctx := verbs.IDContext(l.id)
	if l.spare != nil || ctx.IsNil() {
		return
	}
	select {
	case <-l.done:
		return
	default:
	}
	c := newConn(l.t, l.opts, verbs.Ptr[verbs.CMID]{}, nil, true)
	if err := c.prepare(ctx); err != nil {
		c.fail(err)
		return
	}
	l.spare = c
}

func (l *Listener) track(c *Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		return false
	}
	l.pending[c] = struct{}{}
	return true
}

func (l *Listener) untrack(c *Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.pending, c)
}

// claim takes c, from the accept queue, off the listener's hands; it
// reports false if the listener has shut down, which closes every
// connection not yet accepted. (One that failed while queued has left
// pending already, and is handed out: its calls return its error.)
func (l *Listener) claim(c *Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		return false
	}
	delete(l.pending, c)
	return true
}

// deliver queues an established connection for Accept; with the backlog
// full, the connection is closed.
func (l *Listener) deliver(c *Conn) {
	select {
	case l.acceptQ <- c:
	default:
		l.untrack(c)
		go c.Close()
	}
}
