package qp

import (
	"runtime"
	"sync/atomic"
	"time"

	"github.com/seed54442f1a/rdmapool/cq"
	"github.com/seed54442f1a/rdmapool/internal/netpass"
)

// spinners counts the goroutines that poll a CQ inline right now, each
// yielding its P (runtime.Gosched) now and then (spinYieldFree). The
// runtime polls the network only from a P that has nothing else to run (or
// from sysmon, every 10 ms), and spinners on every P held every other
// network event in the process for milliseconds (docs/design.md, "Inline
// polling"). So at most GOMAXPROCS-1 may spin, leaving a P for the
// netpoller; with GOMAXPROCS 1, one, which lets the netpoller run every
// netpass.Every (package internal/netpass). The limit also keeps many
// waiting connections from crowding the run queue with spinners.
var spinners atomic.Int32

// maxSpinners is max(GOMAXPROCS-1, 1), GOMAXPROCS looked up again every
// 1024 calls: runtime.GOMAXPROCS takes the scheduler's lock, and a waiter
// asks before every spin.
func maxSpinners() int32 {
	if n := spinLookups.Add(1); n&1023 == 1 || spinProcs.Load() == 0 {
		spinProcs.Store(int32(runtime.GOMAXPROCS(0)))
	}
	return max(spinProcs.Load()-1, 1)
}

// spinnersHoldEveryP reports whether the spinners hold every P, so that
// they must let the netpoller run themselves.
func spinnersHoldEveryP() bool { return spinners.Load() >= spinProcs.Load() }

var spinLookups, spinProcs atomic.Int32

// spin is a waiter's polling state: whether it holds a spinner slot (and
// has told the reactor it polls), since when it has polled without result,
// and when its connection's waiters last let the netpoller run (lastPass,
// which a reader's or writer's spins share: a goroutine whose replies come
// while it spins never parks).
type spin struct {
	c        *Conn
	holding  bool
	polls    int
	start    time.Duration // monoNow at the first miss since the slot was taken or since the last hit; 0 until then
	inline   *cq.Inline
	lastPass *time.Duration
}

// monoBase anchors monoNow, taken when the package is initialised, before
// any spin: so monoNow is above 0 in a spin, and 0 can mean "not started".
var monoBase = time.Now()

// monoNow reads the monotonic clock alone: time.Since on a time with a
// monotonic reading takes one clock read, time.Now takes two (the wall
// clock too), and a spinner reads the clock at a spin's first miss and every
// spinClockEvery polls.
func monoNow() time.Duration { return time.Since(monoBase) }

func (s *spin) release() {
	if s.holding {
		s.inline.End()
		spinners.Add(-1)
		s.holding = false
		// The reactor arms no CQ while its owner polls it. A waiter of
		// this connection that parked meanwhile would then wait for the
		// reactor's next look, up to its sleep limit: have it arm the CQ
		// (or poll it) now.
		if s.c.parked.Load() > 0 {
			s.inline.BeforePark(s.c.reactor)
		}
	}
}

// park waits until ch is signalled, the connection ends or dl (nil: none)
// is closed, having made sure that the reactor will dispatch the CQ's
// completions; it reports false for dl.
func (c *Conn) park(ch, dl chan struct{}) bool {
	c.parked.Add(1)
	c.h.inline.BeforePark(c.reactor)
	ok := true
	select {
	case <-ch:
	case <-c.done:
	case <-dl:
		ok = false
	}
	c.parked.Add(-1)
	return ok
}

// spinPoll is what a waiting reader or writer does before it parks: poll
// the CQ itself, for up to opts.SpinWait without a result, if a spinner
// slot is free. It reports whether to look again (true) or to park (false).
func (c *Conn) spinPoll(s *spin) bool {
	if c.opts.SpinWait < 0 {
		return false
	}
	if !s.holding {
		if spinners.Add(1) > maxSpinners() {
			spinners.Add(-1)
			return false
		}
		s.holding, s.start, s.inline = true, 0, &c.h.inline
		s.inline.Begin()
	}
	if c.pollInline() {
		s.start = 0 // the spin's clock restarts at its next miss
		return true
	}
	if s.start == 0 {
		s.start = monoNow()
	}
	s.polls++
	if s.polls%spinClockEvery == 0 {
		now := monoNow()
		if now-s.start >= c.opts.SpinWait {
			s.release()
			return false
		}
		if now-*s.lastPass >= netpass.Every && spinnersHoldEveryP() {
			netpass.Pass()
			*s.lastPass = monoNow()
		}
	}
	if s.polls%spinYieldShared == 0 && (s.polls%spinYieldFree == 0 || spinnersHoldEveryP()) {
		runtime.Gosched()
	}
	return true
}

// A spinner yields its P (runtime.Gosched) every spinYieldFree polls, so
// that goroutines queued behind it on its P get their turn; every
// spinYieldShared when the spinners hold every P, as with GOMAXPROCS 1.
// Otherwise a P is free, and the scheduler's idle Ps take the queued work
// (work stealing), so the yield need not come often. It costs several
// polls: under emulation 3.3 µs against 0.4 µs a poll, half of a spinner's
// time when it came every 8 polls, and a completion that lands during a
// yield waits for it (round trip p50 lower by 8 % at every 64, in 8 of 8
// alternating runs; docs/benchmarks.md).
const (
	spinYieldShared = 8
	spinYieldFree   = 64
)

// spinClockEvery is how many polls a spinner makes between looks at the
// clock. A look costs about what a poll does (more under emulation, where
// the VM's profile showed the spinners' clock reads at 29 % of the CPU),
// and SpinWait need not be kept to the poll.
const spinClockEvery = 16
