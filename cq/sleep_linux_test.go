package cq

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// The reactor sleeps in the Go netpoller on its epoll set. These run on any
// Linux host: the set needs no RDMA device.

func newSleeper(t *testing.T) *Reactor {
	t.Helper()
	r, err := newReactor(Options{}, nil, verbs.Ptr[verbs.WC]{}, verbs.Ptr[verbs.CQEventOut]{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unix.Close(r.evfd)
		r.ep.Close()
	})
	return r
}

// hotInline gives r one hot CQ, with no device behind it, and returns its
// inline-polling state.
func hotInline(r *Reactor) *Inline {
	q := &queue{r: r, hot: true}
	q.inline.r = r
	r.queues, r.hot = []*queue{q}, []*queue{q}
	return &q.inline
}

func TestSleepWokenByWake(t *testing.T) {
	r := newSleeper(t)
	events := make([]unix.EpollEvent, 4)
	go func() {
		time.Sleep(10 * time.Millisecond)
		r.wake()
	}()
	// A sleep that ran to its limit returns no event.
	if n := r.sleep(events, sleepLimit); n != 1 || events[0].Fd != -1 {
		t.Fatalf("sleep = %d events (first fd %d), want the eventfd's one", n, events[0].Fd)
	}
	// An event already pending is taken.
	if n := r.sleep(events, sleepLimit); n != 1 {
		t.Fatalf("sleep with the eventfd still readable = %d events, want 1", n)
	}
}

func TestSleepLimit(t *testing.T) {
	r := newSleeper(t)
	events := make([]unix.EpollEvent, 4)
	start := time.Now()
	if n := r.sleep(events, sleepLimit); n != 0 {
		t.Fatalf("sleep with nothing to wait for = %d events, want 0", n)
	}
	if d := time.Since(start); d < sleepLimit-10*time.Millisecond {
		t.Fatalf("sleep returned after %v, before its limit %v", d, sleepLimit)
	}
}

// TestOwnerPollingAfterArm: the reactor armed a CQ, and its owner began to
// poll it before the reactor's poll after the arm, which skips the CQ. The
// completions that came before the arm raise no event, and the owner may
// take only a batch of them: so the skip must leave the CQ marked unarmed,
// and a waiter's Park must wake the reactor to poll it. (Before 0cdebc8
// the mark stayed, and a parked waiter waited out the sleep limit.)
func TestOwnerPollingAfterArm(t *testing.T) {
	r := newSleeper(t)
	in := hotInline(r)
	in.watched() // as armAndCool leaves a CQ it armed
	in.Begin()
	if n, skipped := r.pollAll(); n != 0 || skipped {
		t.Fatalf("pollAll = %d, %v; want the CQ left to its owner", n, skipped)
	}
	in.End()
	if in.w.Load()&armedBit != 0 {
		t.Error("after the reactor skipped it, the CQ is still marked armed")
	}
	in.Park()
	// A pending wake is taken at once; without one, the sleep runs to its
	// limit and returns no event.
	events := make([]unix.EpollEvent, 4)
	if n := r.sleep(events, sleepLimit); n != 1 || events[0].Fd != -1 {
		t.Fatalf("sleep after Park = %d events; want the wake's", n)
	}
}

// TestSleepBoundedForParked: a waiter parked while the CQ was armed (its
// Park wakes nobody); then a member began to poll, and the reactor left the
// CQ unarmed to it. The waiter still relies on the CQ's event once the
// poller stops, so the reactor sleeps at most handoffLimit while that
// lasts, and as long as ever once nobody is parked.
func TestSleepBoundedForParked(t *testing.T) {
	r := newSleeper(t)
	in := hotInline(r)
	in.watched()
	in.Park() // armed: no wake
	in.Begin()
	if n, skipped := r.pollAll(); n != 0 || skipped {
		t.Fatalf("pollAll = %d, %v; want the CQ left to its poller", n, skipped)
	}
	if d := r.sleepLimit(); d != handoffLimit {
		t.Errorf("sleep limit with a waiter parked on a CQ left to its poller: %v, want %v", d, handoffLimit)
	}
	if n := r.sleep(make([]unix.EpollEvent, 4), r.sleepLimit()); n != 0 {
		t.Fatalf("sleep = %d events, want none: nothing wakes the reactor", n)
	}
	in.End()
	in.Unpark()
	if d := r.sleepLimit(); d != sleepLimit {
		t.Errorf("sleep limit with nobody parked: %v, want %v", d, sleepLimit)
	}
}

// TestSleepBoundedAfterPollerStops: as TestSleepBoundedForParked, but the
// poller stops between the reactor's leaving the CQ to it and the reactor's
// look at its sleep limit. The waiter still relies on the reactor, which
// must look again within handoffLimit. (While the limit looked for a
// poller, it slept sleepLimit: the case TestHandoffModel's oldLimit
// variant finds.)
func TestSleepBoundedAfterPollerStops(t *testing.T) {
	r := newSleeper(t)
	in := hotInline(r)
	in.watched()
	in.Park() // armed: no wake
	in.Begin()
	if n, skipped := r.pollAll(); n != 0 || skipped {
		t.Fatalf("pollAll = %d, %v; want the CQ left to its poller", n, skipped)
	}
	in.End()
	if d := r.sleepLimit(); d != handoffLimit {
		t.Errorf("sleep limit with a waiter parked on a CQ its poller left: %v, want %v", d, handoffLimit)
	}
	in.Unpark()
	if d := r.sleepLimit(); d != sleepLimit {
		t.Errorf("sleep limit with nobody parked: %v, want %v", d, sleepLimit)
	}
}
