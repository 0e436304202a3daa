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

type entry struct {
	gen     uint16
	h       Handler
	lock    Locker  // h, if it is one
	inline  *Inline // h's, if it is an InlinePoller
	cq      verbs.Ptr[verbs.CQ]
	channel verbs.Ptr[verbs.CompChannel] // or none
	ops     *verbs.ContextOps
	live    bool
	// hot: the CQ is in the poll list (hot). A CQ leaves it (goes cold)
	// when the reactor armed it and then polled it empty (armAndCool):
	// any completion after that raises an event, which puts it back. So
	// an idle CQ costs no poll and no arm.
	hot      bool
	emptyRun uint32 // the hot CQ's polls in a row that found nothing
	// emptyFrom is when coolIdle first saw the current run of empty
	// polls (on the reactor's clock, since epoch); 0 while it has not,
	// and after each poll that found completions.
	emptyFrom int64
}

// channel is a completion channel in the reactor's epoll set, with the
// live entries on it.
type channel struct {
	ch   verbs.Ptr[verbs.CompChannel]
	refs int
}

type op struct {
	add    *entry
	addErr *error // where the reactor says why it could not add, before done
	remove Registration
	stop   bool
	done   chan Registration
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

	// Owned by the reactor goroutine.
	entries []entry
	free    []uint32
	live    []uint32 // slots with live entries
	// coldNext is where in live the next timeout's pollCold begins.
	coldNext int
	hot      []uint32           // slots of hot entries, in poll order
	byCQ     map[uintptr]uint32 // a live entry's slot by its CQ's address, for events
	chans    map[int32]*channel // by fd: the channels in the epoll set
	// unnotifiable counts the live entries without a channel.
	unnotifiable int
	wcs          verbs.Ptr[verbs.WC]         // C array of Batch WCs
	evOut        verbs.Ptr[verbs.CQEventOut] // for ibv_get_cq_event's out parameters

	woken atomic.Bool // a wake's eventfd write is pending; see wake
	epoch time.Time   // the reactor's clock: entry.emptyFrom counts from it

	polls, empty, completions, wakeups, stale, timeouts, passes atomic.Uint64
	cqs, hotCQs, channels                                       atomic.Int64
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
		byCQ: make(map[uintptr]uint32), chans: make(map[int32]*channel)}, nil
}

// Add registers cq, whose completion channel is channel (or the zero Ptr
// when it has none: then the reactor never sleeps while the CQ is
// registered), with h. The caller destroys the channel after Remove; it
// may be shared by several CQs.
// From now on the reactor polls it; every work request on it must carry a
// wr_id from the returned Registration.
func (r *Reactor) Add(cq verbs.Ptr[verbs.CQ], channel verbs.Ptr[verbs.CompChannel], h Handler) (Registration, error) {
	if cq.IsNil() {
		return Registration{}, errors.New("cq: Add of a NULL CQ")
	}
	if !channel.IsNil() {
		if err := unix.SetNonblock(verbs.CompChannelFD(channel), true); err != nil {
			return Registration{}, fmt.Errorf("cq: %w", os.NewSyscallError("fcntl", err))
		}
	}
	e := &entry{h: h, cq: cq, channel: channel, ops: verbs.CQOps(cq), live: true}
	e.lock, _ = h.(Locker)
	if ip, ok := h.(InlinePoller); ok {
		e.inline = ip.Inline()
	}
	var err error
	reg, ok := r.do(op{add: e, addErr: &err})
	if !ok {
		return Registration{}, errors.New("cq: reactor is closed")
	}
	return reg, err
}

// Remove unregisters a CQ. When it returns, the reactor no longer polls the
// CQ nor calls its handler, so the caller may destroy it.
func (r *Reactor) Remove(reg Registration) { r.do(op{remove: reg}) }

// Close stops the reactor and waits for its goroutine to end. CQs still
// registered are no longer polled; Close does not destroy them. Remove
// every CQ first: an owner still using the reactor (Inline.BeforePark)
// may write to its wake-up eventfd after Close has closed it, and that
// file descriptor number may by then belong to another file.
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
		Wakeups: r.wakeups.Load(), Stale: r.stale.Load(), Timeouts: r.timeouts.Load(),
		Passes: r.passes.Load(), CQs: int(r.cqs.Load()), Hot: int(r.hotCQs.Load()), Channels: int(r.channels.Load()),
	}
}

// do hands an operation to the reactor goroutine and waits for it.
func (r *Reactor) do(o op) (Registration, bool) {
	o.done = make(chan Registration, 1)
	r.mu.Lock()
	select {
	case <-r.done:
		r.mu.Unlock()
		return Registration{}, false
	default:
	}
	r.ops = append(r.ops, o)
	r.pending.Store(true)
	r.mu.Unlock()
	r.wake()
	select {
	case reg := <-o.done:
		return reg, true
	case <-r.done:
		return Registration{}, false
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
		case o.add != nil:
			reg, err := r.addEntry(*o.add)
			*o.addErr = err
			o.done <- reg
		case o.stop:
			stop = true
			o.done <- Registration{}
		default:
			if int(o.remove.slot) < len(r.entries) && r.entries[o.remove.slot].live && r.entries[o.remove.slot].gen == o.remove.gen {
				r.removeSlot(o.remove.slot)
			}
			o.done <- Registration{}
		}
	}
	return stop
}

func (r *Reactor) addEntry(e entry) (Registration, error) {
	var slot uint32
	if n := len(r.free); n > 0 {
		slot = r.free[n-1]
		r.free = r.free[:n-1]
		e.gen = r.entries[slot].gen + 1
		r.entries[slot] = e
	} else {
		slot = uint32(len(r.entries))
		r.entries = append(r.entries, e)
	}
	if !e.channel.IsNil() {
		if err := r.refChannel(e.channel); err != nil {
			r.entries[slot].live, r.entries[slot].h = false, nil
			r.free = append(r.free, slot)
			return Registration{}, err
		}
	}
	r.live = append(r.live, slot)
	if e.channel.IsNil() {
		r.unnotifiable++
	}
	r.byCQ[e.cq.Addr()] = slot
	r.makeHot(slot)
	r.cqs.Add(1)
	return Registration{slot: slot, gen: e.gen}, nil
}

func (r *Reactor) removeSlot(slot uint32) {
	e := &r.entries[slot]
	delete(r.byCQ, e.cq.Addr())
	ch := e.channel
	if e.hot {
		e.hot = false
		r.hot = without(r.hot, slot)
		r.hotCQs.Add(-1)
	}
	e.live, e.h, e.cq, e.channel, e.ops = false, nil, verbs.Ptr[verbs.CQ]{}, verbs.Ptr[verbs.CompChannel]{}, nil
	r.live = without(r.live, slot)
	if ch.IsNil() {
		r.unnotifiable--
	} else {
		// Ack what is pending (destroy_cq waits for the acks of the
		// events read): the CQ's own events, and other CQs' on a shared
		// channel, which makes those hot.
		r.drainEvents(int32(verbs.CompChannelFD(ch)))
		r.unrefChannel(ch)
	}
	r.free = append(r.free, slot)
	r.cqs.Add(-1)
}

// without returns list without its element v, in order.
func without(list []uint32, v uint32) []uint32 {
	for i, s := range list {
		if s == v {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}

// makeHot puts a live entry in the poll list.
func (r *Reactor) makeHot(slot uint32) {
	e := &r.entries[slot]
	if !e.hot {
		e.hot, e.emptyRun, e.emptyFrom = true, 0, 0
		r.hot = append(r.hot, slot)
		r.hotCQs.Add(1)
	}
}

// refChannel takes a reference to ch for an entry, adding a caller's own
// channel to the epoll set on its first use.
func (r *Reactor) refChannel(ch verbs.Ptr[verbs.CompChannel]) error {
	if c := r.chans[int32(verbs.CompChannelFD(ch))]; c != nil && c.ch == ch {
		c.refs++
		return nil
	}
	return r.addChannel(&channel{ch: ch, refs: 1})
}

func (r *Reactor) addChannel(c *channel) error {
	fd := int32(verbs.CompChannelFD(c.ch))
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: fd}
	if err := unix.EpollCtl(r.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev); err != nil {
		// Without it the CQs' events would never wake the reactor.
		return fmt.Errorf("cq: adding the completion channel to the reactor's epoll set: %w", os.NewSyscallError("epoll_ctl", err))
	}
	r.chans[fd] = c
	r.channels.Add(1)
	return nil
}

// unrefChannel drops a reference to ch; the last one takes it out of the
// epoll set.
func (r *Reactor) unrefChannel(ch verbs.Ptr[verbs.CompChannel]) {
	fd := int32(verbs.CompChannelFD(ch))
	c := r.chans[fd]
	if c == nil || c.ch != ch {
		return
	}
	if c.refs--; c.refs > 0 {
		return
	}
	r.dropChannel(fd, c)
}

func (r *Reactor) dropChannel(fd int32, c *channel) {
	unix.EpollCtl(r.epfd, unix.EPOLL_CTL_DEL, int(fd), nil)
	r.drainEvents(fd)
	delete(r.chans, fd)
	r.channels.Add(-1)
}

func (r *Reactor) shutdown() {
	for fd, c := range r.chans {
		r.dropChannel(fd, c)
	}
	r.mu.Lock()
	close(r.done)
	r.mu.Unlock()
	unix.Close(r.evfd)
	r.ep.Close()
	verbs.Release(r.t, r.evOut)
	verbs.Release(r.t, r.wcs)
}
