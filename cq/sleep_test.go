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
	start := time.Now()
	n := r.sleep(events)
	if d := time.Since(start); n != 1 || events[0].Fd != -1 || d >= sleepLimit {
		t.Fatalf("sleep = %d events (first fd %d) after %v, want the eventfd's one before %v", n, events[0].Fd, d, sleepLimit)
	}
	// An event already pending is taken without waiting.
	start = time.Now()
	if n := r.sleep(events); n != 1 || time.Since(start) > sleepLimit/2 {
		t.Fatalf("sleep with the eventfd still readable = %d events after %v, want 1 at once", n, time.Since(start))
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
