package cq

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The reactor sleeps in the Go netpoller on its epoll set. These run on any
// Linux host: the set needs no RDMA device.

func newSleeper(t *testing.T) *Reactor {
	t.Helper()
	r, err := newReactor(Options{}, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unix.Close(r.evfd)
		r.ep.Close()
	})
	return r
}

func TestSleepWokenByWake(t *testing.T) {
	r := newSleeper(t)
	events := make([]unix.EpollEvent, 4)
	go func() {
		time.Sleep(10 * time.Millisecond)
		r.wake()
	}()
	// A sleep that ran to its limit returns no event.
	if n := r.sleep(events); n != 1 || events[0].Fd != -1 {
		t.Fatalf("sleep = %d events (first fd %d), want the eventfd's one", n, events[0].Fd)
	}
	// An event already pending is taken.
	if n := r.sleep(events); n != 1 {
		t.Fatalf("sleep with the eventfd still readable = %d events, want 1", n)
	}
}

func TestSleepLimit(t *testing.T) {
	r := newSleeper(t)
	events := make([]unix.EpollEvent, 4)
	start := time.Now()
	if n := r.sleep(events); n != 0 {
		t.Fatalf("sleep with nothing to wait for = %d events, want 0", n)
	}
	if d := time.Since(start); d < sleepLimit-10*time.Millisecond {
		t.Fatalf("sleep returned after %v, before its limit %v", d, sleepLimit)
	}
}
