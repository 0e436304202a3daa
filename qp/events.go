package qp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// event is an rdma_cm event, copied out of C memory and already acked.
type event struct {
	typ      uint32
	status   int32
	id       verbs.Ptr[verbs.CMID] // the id it is for; for CONNECT_REQUEST, the new id
	listenID verbs.Ptr[verbs.CMID]
	name     string
	box      *eventChannel // for CONNECT_REQUEST: the new id's
}

// cmChannel is the process's one rdma_cm event channel, shared by every id
// (connections and listeners), so that an id costs no file descriptor of
// its own. A goroutine reads it through Go's netpoller (its fd is
// non-blocking, and a duplicate of it, wrapped in an os.File, is what the
// netpoller watches) and routes each event, acked, to its id's
// eventChannel. It runs while some id holds it (acquireCM), and is
// destroyed after the last one's release.
type cmChannel struct {
	t    *verbs.Table
	ch   verbs.Ptr[verbs.EventChannel]
	f    *os.File // the dup'd fd; closing it never closes the channel's own fd
	done chan struct{}
	refs atomic.Int64 // ids on the channel, and ids being made on it

	mu    sync.Mutex
	boxes map[uintptr]*eventChannel // by the id's address
	err   error                     // reading the channel failed
}

// cmReadMu is held while an event is read, and while a QP attached to an
// id is destroyed: librdmacm handles some events inside rdma_get_cm_event
// on the id's attached QP (a REJECTED moves it to the error state; a
// CONNECT_RESPONSE moves it to RTR and RTS), and since every id shares one
// reader, a connection given up may be destroying its QP just then. After
// rdma_destroy_qp the id has none, which librdmacm checks for. Only a
// server's QPs are attached; a client's is its own (ownqp.go), which
// librdmacm never sees, so it is destroyed without the lock.
var cmReadMu sync.Mutex

// sharedCM is the running cmChannel, or nil.
var sharedCM struct {
	mu  sync.Mutex
	cur *cmChannel
}

// acquireCM returns the process's rdma_cm event channel, made on first
// use, with one more reference (see release).
func acquireCM(t *verbs.Table) (*cmChannel, error) {
	sharedCM.mu.Lock()
	defer sharedCM.mu.Unlock()
	if cm := sharedCM.cur; cm != nil {
		cm.refs.Add(1)
		return cm, nil
	}
	ch, f, err := newCMChannel(t)
	if err != nil {
		return nil, err
	}
	cm := &cmChannel{t: t, ch: ch, f: f, done: make(chan struct{}), boxes: map[uintptr]*eventChannel{}}
	cm.refs.Store(1)
	sharedCM.cur = cm
	go cm.loop()
	return cm, nil
}

// release drops a reference; the last one ends the reading goroutine and
// destroys the channel, which no id may be on any more.
func (cm *cmChannel) release() {
	sharedCM.mu.Lock()
	if cm.refs.Add(-1) > 0 {
		sharedCM.mu.Unlock()
		return
	}
	if sharedCM.cur == cm {
		sharedCM.cur = nil
	}
	sharedCM.mu.Unlock()
	cm.f.Close()
	<-cm.done
	cm.t.DestroyEventChannel(cm.ch)
}

// open makes the eventChannel of the id at addr, which routes its events.
func (cm *cmChannel) open(id uintptr) *eventChannel {
	e := &eventChannel{cm: cm, id: id, notify: make(chan struct{}, 1), closed: make(chan struct{})}
	cm.mu.Lock()
	cm.boxes[id] = e
	e.err = cm.err
	cm.mu.Unlock()
	return e
}

// loop reads and routes events until the file is closed (release).
func (cm *cmChannel) loop() {
	defer close(cm.done)
	rc, err := cm.f.SyscallConn()
	if err != nil {
		cm.failAll(err)
		return
	}
	for {
		var ev event
		var gerr error
		err = rc.Read(func(uintptr) bool {
			cmReadMu.Lock()
			ce, err := cm.t.TakeCMEvent(cm.ch)
			cmReadMu.Unlock()
			if errors.Is(err, syscall.EAGAIN) {
				return false
			}
			ev, gerr = event{typ: ce.Event, status: ce.Status, id: ce.ID, listenID: ce.ListenID}, err
			return true
		})
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				cm.failAll(err)
			}
			return
		}
		if gerr != nil {
			cm.failAll(gerr)
			return
		}
		ev.name = cm.t.EventStr(ev.typ)
		cm.route(ev)
	}
}

// route hands ev to its id's eventChannel. A connection request goes to
// its listener's, with a new eventChannel for the new id; one whose
// listener is gone is rejected. Events of ids already closed are dropped
// (they were acked, which their rdma_destroy_id waits for).
func (cm *cmChannel) route(ev event) {
	target := ev.id
	if ev.typ == verbs.EventConnectRequest {
		target = ev.listenID
	}
	cm.mu.Lock()
	e := cm.boxes[target.Addr()]
	if e != nil && ev.typ == verbs.EventConnectRequest {
		// The listener's reference keeps refs above 0 while its box is
		// found here, so this adds to a live channel.
		cm.refs.Add(1)
		ev.box = &eventChannel{cm: cm, id: ev.id.Addr(), notify: make(chan struct{}, 1), closed: make(chan struct{})}
		cm.boxes[ev.id.Addr()] = ev.box
	}
	if e != nil {
		// Under cm.mu: after shut, which takes it, nothing more lands
		// in the box (see drainRequests).
		e.push(ev)
	}
	cm.mu.Unlock()
	if e == nil && ev.typ == verbs.EventConnectRequest {
		id, t := ev.id, cm.t
		go func() {
			t.Reject(id)
			t.DestroyID(id)
		}()
	}
}

// failAll ends every eventChannel with err: reading the channel failed.
// The ids made from now on get a new channel.
func (cm *cmChannel) failAll(err error) {
	sharedCM.mu.Lock()
	if sharedCM.cur == cm {
		sharedCM.cur = nil
	}
	sharedCM.mu.Unlock()
	err = fmt.Errorf("reading the process's rdma_cm events: %w", err)
	cm.mu.Lock()
	defer cm.mu.Unlock()
	cm.err = err
	for _, e := range cm.boxes {
		e.fail(err)
	}
}

// eventChannel is one id's share of the process's rdma_cm event channel:
// its events, in order, as the channel's goroutine routed them.
type eventChannel struct {
	cm     *cmChannel
	id     uintptr
	notify chan struct{} // signalled after a push
	closed chan struct{} // closed by shut

	mu   sync.Mutex
	q    []event
	err  error // reading the shared channel failed
	once sync.Once
}

func (e *eventChannel) push(ev event) {
	e.mu.Lock()
	e.q = append(e.q, ev)
	e.mu.Unlock()
	signal(e.notify)
}

func (e *eventChannel) fail(err error) {
	e.mu.Lock()
	if e.err == nil {
		e.err = err
	}
	e.mu.Unlock()
	signal(e.notify)
}

// take returns the next event, or the channel's error, if there is one.
func (e *eventChannel) take() (event, error, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.q) > 0 {
		ev := e.q[0]
		e.q[0] = event{}
		e.q = e.q[1:]
		return ev, nil, true
	}
	if e.err != nil {
		return event{}, e.err, true
	}
	return event{}, nil, false
}

// next waits for the next event, or until shut (then an error matching
// os.ErrClosed).
func (e *eventChannel) next() (event, error) {
	for {
		if ev, err, ok := e.take(); ok {
			return ev, err
		}
		select {
		case <-e.notify:
		case <-e.closed:
			return event{}, os.ErrClosed
		}
	}
}

// await waits for an event of one of the types want for id, honouring
// ctx; any other event for id is an error saying which event came.
func (e *eventChannel) await(ctx context.Context, step string, want ...uint32) (event, error) {
	var ev event
	for {
		var err error
		var ok bool
		if ev, err, ok = e.take(); ok {
			if err != nil {
				return event{}, fmt.Errorf("rdma: %s: %w", step, err)
			}
			break
		}
		select {
		case <-e.notify:
		case <-e.closed:
			return event{}, fmt.Errorf("rdma: %s: %w", step, os.ErrClosed)
		case <-ctx.Done():
			// A timeout said as the caller's deadline, as before.
			if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
				return event{}, fmt.Errorf("rdma: %s: %w", step, context.DeadlineExceeded)
			}
			return event{}, fmt.Errorf("rdma: %s: %w", step, ctx.Err())
		}
	}
	if ev.typ == verbs.EventDeviceRemoval && !slices.Contains(want, verbs.EventDeviceRemoval) {
		// Said as for an established connection, so that a pool falls
		// back and the teardown releases the dead device (close.go).
		return ev, fmt.Errorf("rdma: %s: %w", step, ErrDeviceRemoved)
	}
	if !slices.Contains(want, ev.typ) {
		if ev.box != nil {
			ev.box.shut() // not ours to take: no listener waits here
		}
		return ev, connectError(step, ev.name, ev.status)
	}
	return ev, nil
}

// shut stops routing events to e and makes a pending next return; the id
// may then be destroyed, after which release drops e's reference to the
// shared channel. It is idempotent.
func (e *eventChannel) shut() {
	e.once.Do(func() {
		e.cm.mu.Lock()
		if e.cm.boxes[e.id] == e {
			delete(e.cm.boxes, e.id)
		}
		e.cm.mu.Unlock()
		close(e.closed)
	})
}

// drainRequests rejects the connection requests left in a listener's
// eventChannel after shut, which no one will take now.
func (e *eventChannel) drainRequests() {
	for {
		ev, err, ok := e.take()
		if !ok || err != nil {
			return
		}
		if ev.typ == verbs.EventConnectRequest && ev.box != nil {
			t := e.cm.t
			t.Reject(ev.id)
			ev.box.shut()
			t.DestroyID(ev.id)
			ev.box.release()
		}
	}
}

// release drops e's reference to the shared channel: after shut and after
// its id is destroyed.
func (e *eventChannel) release() { e.cm.release() }
