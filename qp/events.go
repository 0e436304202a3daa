package qp

import (
	"context"
	"errors"
	"fmt"
	"os"
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
}

// eventChannel is an rdma_cm event channel read through Go's netpoller: its
// fd is non-blocking, and a duplicate of it, wrapped in an os.File, lets a
// goroutine wait for events without holding an OS thread, with deadlines.
type eventChannel struct {
	t  *verbs.Table
	ch verbs.Ptr[verbs.EventChannel]
	f  *os.File // the dup'd fd; closing it never closes the channel's own fd
}

// next waits for the next event until the deadline (zero: none) or until the
// channel is closed (then an error matching os.ErrClosed).
func (e *eventChannel) next(deadline time.Time) (event, error) {
	if err := e.f.SetReadDeadline(deadline); err != nil {
		return event{}, err
	}
	return e.read()
}

// read waits for the next event under the deadline already set.
func (e *eventChannel) read() (event, error) {
	rc, err := e.f.SyscallConn()
	if err != nil {
		return event{}, err
	}
	var ev event
	var gerr error
	err = rc.Read(func(uintptr) bool {
		ce, err := e.t.TakeCMEvent(e.ch)
		if errors.Is(err, syscall.EAGAIN) {
			return false
		}
		ev, gerr = event{typ: ce.Event, status: ce.Status, id: ce.ID, listenID: ce.ListenID}, err
		return true
	})
	if err != nil {
		return event{}, err
	}
	if gerr != nil {
		return event{}, gerr
	}
	ev.name = e.t.EventStr(ev.typ)
	return ev, nil
}

// await waits for an event of type want for id, honouring ctx; any other
// event for id is an error saying which event came.
func (e *eventChannel) await(ctx context.Context, step string, want uint32) (event, error) {
	// The context's deadline first, then its cancellation: the other way
	// round, a cancellation that came first would be overwritten.
	dl, _ := ctx.Deadline()
	if err := e.f.SetReadDeadline(dl); err != nil {
		return event{}, fmt.Errorf("rdma: %s: %w", step, err)
	}
	cancelled := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		e.stop()
		close(cancelled)
	})
	ev, err := e.read()
	if !stop() {
		<-cancelled // lest its deadline land on a later wait
	}
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return event{}, fmt.Errorf("rdma: %s: %w", step, cerr)
		}
		// The read times out on the deadline itself, which can be a
		// moment before the context's timer marks it done.
		if !dl.IsZero() && !time.Now().Before(dl) && errors.Is(err, os.ErrDeadlineExceeded) {
			return event{}, fmt.Errorf("rdma: %s: %w", step, context.DeadlineExceeded)
		}
		return event{}, fmt.Errorf("rdma: %s: %w", step, err)
	}
	if ev.typ == verbs.EventDeviceRemoval && want != verbs.EventDeviceRemoval {
		// Said as for an established connection, so that a pool falls
		// back and the teardown releases the dead device (close.go).
		return ev, fmt.Errorf("rdma: %s: %w", step, ErrDeviceRemoved)
	}
	if ev.typ != want {
		return ev, connectError(step, ev.name, ev.status)
	}
	return ev, nil
}

// stop makes a pending next return; the channel stays open.
func (e *eventChannel) stop() { e.f.SetReadDeadline(time.Unix(1, 0)) }

// close destroys the channel; no id may remain on it.
func (e *eventChannel) close() {
	e.f.Close()
	e.t.DestroyEventChannel(e.ch)
}
