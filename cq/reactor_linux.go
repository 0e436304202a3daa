package cq

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed54442f1a/rdmapool/internal/netpass"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// device is the reactor's CQs on one device (an ibv_context) and the
// completion channel they all report to. It lives while a queue pair on the
// device is attached: the last Release destroys its CQs, then the channel.
// (A CQ is never destroyed while its channel lives on: soft-RoCE in Linux
// 6.1 can queue a CQ's event after the CQ is destroyed, and
// ibv_get_cq_event would then dereference the freed CQ.)
type device struct {
	ctx     verbs.Ptr[verbs.Context]
	ch      verbs.Ptr[verbs.CompChannel]
	maxCQE  int
	queues  []*queue
	members int // attached and not yet released
}

// room returns the first CQ of d with n entries free, or nil.
func (d *device) room(n int) *queue {
	for _, q := range d.queues {
		if !q.broken.Load() && q.size-q.used >= n {
			return q
		}
	}
	return nil
}

// firstCQSize is the entries of a device's first CQ, at least: two queue
// pairs of the default depth (2 × 2046 entries). Each further CQ is twice
// the last one, up to the device's max_cqe, so that a process with one
// connection pays for a small CQ and one with thousands has few.
const firstCQSize = 4095

type op struct {
	addDevice    *device
	addQueue     *queue
	removeDevice *device
	stop         bool
	err          *error // where the reactor says why an add failed, before done
	done         chan struct{}
}

// Reactor polls CQs and dispatches their completions.
type Reactor struct {
	opts Options
	t    *verbs.Table

	epfd, evfd int
	ep         *os.File        // epfd, registered with the Go netpoller
	epRC       syscall.RawConn // ep's, to wait for events through the netpoller
	mu         sync.Mutex
	ops        []op
	pending    atomic.Bool
	done       chan struct{}

	devMu   sync.Mutex
	devices map[uintptr]*device // by context address (devMu)

	// Owned by the reactor goroutine.
	queues []*queue // every CQ polled, for pollCold
	// coldNext is where in queues the next timeout's pollCold begins.
	coldNext int
	hot      []*queue                    // in poll order
	byCQ     map[uintptr]*queue          // by the CQ's address, for events
	chans    map[int32]*device           // by channel fd: the channels in the epoll set
	wcs      verbs.Ptr[verbs.WC]         // C array of Batch WCs
	evOut    verbs.Ptr[verbs.CQEventOut] // for ibv_get_cq_event's out parameters

	woken atomic.Bool // a wake's eventfd write is pending; see wake
	epoch time.Time   // the reactor's clock: queue.emptyFrom counts from it

	polls, empty, completions, wakeups, stale, timeouts, handoffs, passes atomic.Uint64
	cqs, members, hotCQs, channels                                        atomic.Int64
}

// New starts a reactor. The libraries must be bound (loader.Load).
func New(opts Options) (*Reactor, error) {
	t := verbs.Bound()
	if t == nil {
		return nil, errors.New("cq: the RDMA libraries are not loaded")
	}
	if opts.IdleSpin == 0 {
		opts.IdleSpin = 50 * time.Microsecond
	}
	if opts.Batch <= 0 {
		opts.Batch = 32
	}
	wcs, err := verbs.Alloc[verbs.WC](t, opts.Batch)
	if err != nil {
		return nil, err
	}
	evOut, err := verbs.Alloc[verbs.CQEventOut](t, 1)
	if err != nil {
		verbs.Release(t, wcs)
		return nil, err
	}
	r, err := newReactor(opts, t, wcs, evOut)
	if err != nil {
		verbs.Release(t, evOut)
		verbs.Release(t, wcs)
		return nil, err
	}
	go r.run()
	return r, nil
}

// newReactor makes the reactor's epoll set, with an eventfd in it for
// wake-ups, and hands the set to the Go netpoller, through which the
// reactor sleeps.
func newReactor(opts Options, t *verbs.Table, wcs verbs.Ptr[verbs.WC], evOut verbs.Ptr[verbs.CQEventOut]) (*Reactor, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("cq: %w", os.NewSyscallError("epoll_create1", err))
	}
	evfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("cq: %w", os.NewSyscallError("eventfd", err))
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: -1}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &ev); err != nil {
		unix.Close(evfd)
		unix.Close(epfd)
		return nil, fmt.Errorf("cq: %w", os.NewSyscallError("epoll_ctl", err))
	}
	// An epoll set is itself pollable: readable while it has events.
	if err := unix.SetNonblock(epfd, true); err != nil {
		unix.Close(evfd)
		unix.Close(epfd)
		return nil, fmt.Errorf("cq: %w", os.NewSyscallError("fcntl", err))
	}
	ep, rc, err := netpass.File(epfd, "the reactor's epoll set")
	if err != nil {
		unix.Close(evfd)
		return nil, fmt.Errorf("cq: %w", err)
	}
	return &Reactor{opts: opts, t: t, epfd: epfd, evfd: evfd, ep: ep, epRC: rc,
		wcs: wcs, evOut: evOut, done: make(chan struct{}),
		devices: make(map[uintptr]*device),
		byCQ:    make(map[uintptr]*queue), chans: make(map[int32]*device)}, nil
}

// attach places a queue pair's completions, which need cqes entries (its
// send and receive queues' depths), on a CQ of the device ctx, shared with
// other queue pairs there, and routes them to h. Create the QP with the
// Member's handle and give each work request a wr_id from the Member; after
// the QP is destroyed, call Release. Package qp calls it through
// internal/bridge (bridge.go).
func (r *Reactor) attach(ctx verbs.Ptr[verbs.Context], cqes int, h Handler) (*Member, error) {
	if ctx.IsNil() || cqes <= 0 {
		return nil, fmt.Errorf("cq: Attach of %d entries on device %#x", cqes, ctx.Addr())
	}
	r.devMu.Lock()
	defer r.devMu.Unlock()
	d := r.devices[ctx.Addr()]
	if d == nil {
		var err error
		if d, err = r.openDevice(ctx); err != nil {
			return nil, err
		}
	}
	q := d.room(cqes)
	if q == nil {
		var err error
		if q, err = r.newQueue(d, cqes); err != nil {
			if d.members == 0 {
				r.closeDevice(d)
			}
			return nil, err
		}
	}
	q.used += cqes
	d.members++
	r.members.Add(1)
	q.mu.Lock()
	reg := q.attach(h)
	q.mu.Unlock()
	return &Member{q: q, reg: reg, cqes: cqes}, nil
}

// openDevice makes the completion channel of ctx's CQs and has the reactor
// watch it (devMu held).
func (r *Reactor) openDevice(ctx verbs.Ptr[verbs.Context]) (*device, error) {
	ch, err := r.t.CreateCompChannel(ctx)
	if err != nil {
		return nil, err
	}
	d := &device{ctx: ctx, ch: ch, maxCQE: firstCQSize}
	if attr, err := r.t.QueryDevice(ctx); err == nil && attr.MaxCQE > 0 {
		d.maxCQE = int(attr.MaxCQE)
	}
	if err := unix.SetNonblock(verbs.CompChannelFD(ch), true); err != nil {
		r.t.DestroyCompChannel(ch)
		return nil, fmt.Errorf("cq: %w", os.NewSyscallError("fcntl", err))
	}
	var addErr error
	if !r.do(op{addDevice: d, err: &addErr}) {
		addErr = errReactorClosed
	}
	if addErr != nil {
		r.t.DestroyCompChannel(ch)
		return nil, addErr
	}
	r.devices[ctx.Addr()] = d
	return d, nil
}

var errReactorClosed = errors.New("cq: reactor is closed")

// newQueue makes a CQ on d with room for at least cqes entries and has the
// reactor poll it (devMu held).
func (r *Reactor) newQueue(d *device, cqes int) (*queue, error) {
	size := max(cqes, firstCQSize)
	if n := len(d.queues); n > 0 {
		size = max(size, 2*d.queues[n-1].size+1)
	}
	size = min(size, d.maxCQE)
	if cqes > size {
		return nil, fmt.Errorf("cq: a queue pair needs %d CQ entries; the device's CQs hold at most %d", cqes, d.maxCQE)
	}
	cq, err := r.t.CreateCQ(d.ctx, size, 0, d.ch, 0)
	if err != nil {
		return nil, err
	}
	wcs, err := verbs.Alloc[verbs.WC](r.t, r.opts.Batch)
	if err != nil {
		r.t.DestroyCQ(cq)
		return nil, err
	}
	q := &queue{r: r, dev: d, cq: cq, ops: verbs.CQOps(cq), size: size, batch: r.opts.Batch, wcs: wcs}
	q.inline.r = r
	if !r.do(op{addQueue: q}) {
		verbs.Release(r.t, wcs)
		r.t.DestroyCQ(cq)
		return nil, errReactorClosed
	}
	d.queues = append(d.queues, q)
	return q, nil
}

// release gives back a member's cqes entries on q; the device's last
// member closes it.
func (r *Reactor) release(q *queue, cqes int) {
	r.devMu.Lock()
	defer r.devMu.Unlock()
	q.used -= cqes
	d := q.dev
	d.members--
	r.members.Add(-1)
	if d.members == 0 {
		r.closeDevice(d)
	}
}

// closeDevice takes d's CQs and channel from the reactor, which acks
// their pending events, and destroys them (devMu held, no member left).
func (r *Reactor) closeDevice(d *device) {
	delete(r.devices, d.ctx.Addr())
	r.do(op{removeDevice: d}) // a closed reactor took the channel out when it stopped
	for _, q := range d.queues {
		verbs.Release(r.t, q.wcs)
		r.t.DestroyCQ(q.cq)
	}
	d.queues = nil
	r.t.DestroyCompChannel(d.ch)
}

// Close stops the reactor and waits for its goroutine to end. Release
// every member first: the CQs of a device still attached are polled no
// more, and are destroyed with its last Release.
func (r *Reactor) Close() {
	r.do(op{stop: true})
	<-r.done
}

// Done is closed when the reactor's goroutine has ended.
func (r *Reactor) Done() <-chan struct{} { return r.done }

// Stats returns the reactor's counters.
func (r *Reactor) Stats() Stats {
	return Stats{
		Polls: r.polls.Load(), EmptyPolls: r.empty.Load(), Completions: r.completions.Load(),
		Wakeups: r.wakeups.Load(), Stale: r.stale.Load(), Timeouts: r.timeouts.Load(), Handoffs: r.handoffs.Load(),
		Passes: r.passes.Load(), CQs: int(r.cqs.Load()), Members: int(r.members.Load()),
		Hot: int(r.hotCQs.Load()), Channels: int(r.channels.Load()),
	}
}

// do hands an operation to the reactor goroutine and waits for it; it
// reports false when the reactor has stopped.
func (r *Reactor) do(o op) bool {
	o.done = make(chan struct{}, 1)
	r.mu.Lock()
	select {
	case <-r.done:
		r.mu.Unlock()
		return false
	default:
	}
	r.ops = append(r.ops, o)
	r.pending.Store(true)
	r.mu.Unlock()
	r.wake()
	select {
	case <-o.done:
		return true
	case <-r.done:
		return false
	}
}

func (r *Reactor) applyOps() (stop bool) {
	r.mu.Lock()
	ops := r.ops
	r.ops = nil
	r.pending.Store(false)
	r.mu.Unlock()
	for _, o := range ops {
		switch {
		case o.addDevice != nil:
			*o.err = r.addChannel(o.addDevice)
		case o.addQueue != nil:
			q := o.addQueue
			r.queues = append(r.queues, q)
			r.byCQ[q.cq.Addr()] = q
			r.makeHot(q)
			r.cqs.Add(1)
		case o.removeDevice != nil:
			d := o.removeDevice
			for _, q := range d.queues {
				r.dropQueue(q)
				r.cqs.Add(-1)
			}
			fd := int32(verbs.CompChannelFD(d.ch))
			if r.chans[fd] == d {
				r.dropChannel(fd)
			}
		case o.stop:
			stop = true
		}
		o.done <- struct{}{}
	}
	return stop
}

// dropQueue takes q out of the poll lists; it is idempotent.
func (r *Reactor) dropQueue(q *queue) {
	if r.byCQ[q.cq.Addr()] == q {
		delete(r.byCQ, q.cq.Addr())
	}
	if q.hot {
		q.hot = false
		r.hot = without(r.hot, q)
		r.hotCQs.Add(-1)
	}
	r.queues = without(r.queues, q)
}

// without returns list without its element v, in order.
func without(list []*queue, v *queue) []*queue {
	for i, s := range list {
		if s == v {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}

// makeHot puts a queue in the poll list.
func (r *Reactor) makeHot(q *queue) {
	if !q.hot {
		q.hot, q.emptyRun, q.emptyFrom = true, 0, 0
		r.hot = append(r.hot, q)
		r.hotCQs.Add(1)
	}
}

// addChannel adds a device's completion channel to the epoll set.
func (r *Reactor) addChannel(d *device) error {
	fd := int32(verbs.CompChannelFD(d.ch))
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: fd}
	if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev); err != nil {
		// Without it the CQs' events would never wake the reactor.
		return fmt.Errorf("cq: adding the completion channel to the reactor's epoll set: %w", os.NewSyscallError("epoll_ctl", err))
	}
	r.chans[fd] = d
	r.channels.Add(1)
	return nil
}

// dropChannel takes a channel out of the epoll set and acks its pending
// events (ibv_destroy_cq waits for the acks of the events read).
func (r *Reactor) dropChannel(fd int32) {
	unix.EpollCtl(r.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
	r.drainEvents(fd)
	delete(r.chans, fd)
	r.channels.Add(-1)
}

func (r *Reactor) shutdown() {
	for fd := range r.chans {
		r.dropChannel(fd)
	}
	r.mu.Lock()
	close(r.done)
	r.mu.Unlock()
	unix.Close(r.evfd)
	r.ep.Close()
	verbs.Release(r.t, r.evOut)
	verbs.Release(r.t, r.wcs)
}
