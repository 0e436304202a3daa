package cq_test

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/cq"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/qp"
)

// TestReactorServesConnections runs a connection pair on a reactor of its
// own, in both polling modes, and checks its counters: it polls, dispatches
// completions, sleeps and is woken, serves both CQs while they are open and
// none afterwards.
func TestReactorServesConnections(t *testing.T) {
	rdmatest.Require(t)
	addr := rdmatest.Addr(t)
	for _, mode := range []cq.Options{{}, {NoBusyPoll: true}} {
		t.Run(fmt.Sprintf("NoBusyPoll=%v", mode.NoBusyPoll), func(t *testing.T) {
			before := rdmatest.Resources(t)
			r, err := cq.New(mode)
			if err != nil {
				t.Fatal(err)
			}
			// Readers park at once, so every completion goes through the
			// reactor.
			opts := &qp.Options{Reactor: r, SpinWait: -1, RecvBufferSize: 16 << 10}
			l, err := qp.Listen(netip.AddrPortFrom(addr, 0).String(), opts)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			go func() {
				c, err := l.AcceptConn(ctx)
				if err != nil {
					return
				}
				io.Copy(c, c)
				c.Close()
			}()
			c, err := qp.Dial(ctx, l.Addr().String(), opts)
			if err != nil {
				t.Fatal(err)
			}
			msg := make([]byte, 1000)
			for range 200 {
				if _, err := c.Write(msg); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(c, msg); err != nil {
					t.Fatal(err)
				}
			}
			// Three members (the two ends and the listener's spare, the
			// next connection's resources made in advance) on one device:
			// one completion channel, and two CQs, the first of which
			// holds two queue pairs of the default depth.
			if st := r.Stats(); st.Members != 3 || st.CQs != 2 || st.Channels != 1 {
				t.Errorf("members, CQs and completion channels while a pair is open: %d, %d and %d, want 3, 2 and 1", st.Members, st.CQs, st.Channels)
			}
			time.Sleep(100 * time.Millisecond) // idle: the reactor sleeps
			c.Close()
			l.Close()
			deadline := time.Now().Add(10 * time.Second)
			// The accepted end's teardown runs on.
			for st := r.Stats(); (st.Members != 0 || st.CQs != 0 || st.Channels != 0) && time.Now().Before(deadline); st = r.Stats() {
				time.Sleep(10 * time.Millisecond)
			}
			st := r.Stats()
			t.Logf("%+v", st)
			// 200 round trips of 1000 bytes through 16 KiB buffers: at least
			// one receive completion per message on each side.
			if st.Members != 0 || st.CQs != 0 || st.Channels != 0 || st.Hot != 0 || st.Completions < 400 || st.Polls < st.Completions/32 || st.Wakeups == 0 || st.EmptyPolls == 0 {
				t.Errorf("implausible counters: %+v", st)
			}
			// What a closing QP flushed after its connection left the CQ
			// is dropped: at most every work request of its queues.
			if maxStale := uint64(3 * 2 * 1023); st.Stale > maxStale {
				t.Errorf("%d completions named no attached member, more than the %d three closing queue pairs can flush", st.Stale, maxStale)
			}
			r.Close()
			select {
			case <-r.Done():
			default:
				t.Error("Close returned before the reactor's goroutine ended")
			}
			rdmatest.CheckNoLeaks(t, before)
		})
	}
}

// TestReactorLeavesPollingOwners: while the readers of a connection pair
// poll their CQs themselves (qp's inline polling), the reactor leaves those
// CQs to them, so most completions never reach it; and a reader whose reply
// comes after its spin has ended parks and is woken through the reactor
// (which re-arms the CQ it had left unarmed) without waiting out the
// reactor's sleep limit.
func TestReactorLeavesPollingOwners(t *testing.T) {
	rdmatest.Require(t)
	// Both ends of each pair are in this process, and package qp lets
	// GOMAXPROCS-1 waiters spin (it leaves a P to the netpoller): with
	// two Ps the second reader parks whenever the first spins, and how
	// often that is depends on the machine's load (under a loaded host,
	// the reactor took more than half the completions in 3 runs of 6).
	// Both readers spin with three.
	if runtime.GOMAXPROCS(0) < 3 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	}
	addr := rdmatest.Addr(t)
	before := rdmatest.Resources(t)
	r, err := cq.New(cq.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pair := func(spin, delay time.Duration) (*qp.Conn, func()) {
		opts := &qp.Options{Reactor: r, SpinWait: spin, RecvBufferSize: 16 << 10}
		l, err := qp.Listen(netip.AddrPortFrom(addr, 0).String(), opts)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			c, err := l.AcceptConn(t.Context())
			if err != nil {
				return
			}
			defer c.Close()
			buf := make([]byte, 1000)
			for {
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				time.Sleep(delay)
				if _, err := c.Write(buf); err != nil {
					return
				}
			}
		}()
		c, err := qp.Dial(t.Context(), l.Addr().String(), opts)
		if err != nil {
			l.Close()
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(30 * time.Second))
		return c, func() { c.Close(); l.Close() }
	}
	roundTrips := func(c *qp.Conn, n int) {
		msg := make([]byte, 1000)
		for range n {
			if _, err := c.Write(msg); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(c, msg); err != nil {
				t.Fatal(err)
			}
		}
	}

	// Readers that spin for up to a second always find their reply
	// themselves.
	waitEmpty := func() {
		deadline := time.Now().Add(10 * time.Second)
		for r.Stats().Members != 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	c, done := pair(time.Second, 0)
	start := r.Stats()
	roundTrips(c, 200)
	st := r.Stats()
	done()
	waitEmpty() // the teardown's flushed receives are not the next pair's
	t.Logf("spinning readers: %+v", st)
	if got := st.Completions - start.Completions; got > 100 {
		t.Errorf("the reactor handled %d completions of 200 round trips whose readers polled", got)
	}

	// Replies 20 ms late, readers that spin 1 ms: each parks, and is woken
	// by an event of a CQ armed again for it.
	c, done = pair(time.Millisecond, 20*time.Millisecond)
	start = r.Stats()
	roundTrips(c, 20)
	st = r.Stats()
	done()
	t.Logf("parking readers: %+v", st)
	if n := st.Timeouts - start.Timeouts; n != 0 {
		t.Errorf("%d of the reactor's sleeps ran to their limit: a parked reader's CQ was left unarmed", n)
	}
	if n := st.Wakeups - start.Wakeups; n < 20 {
		t.Errorf("the reactor woke %d times for 20 parked readers", n)
	}
	waitEmpty()
	r.Close()
	rdmatest.CheckNoLeaks(t, before)
}
