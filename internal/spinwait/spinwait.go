// Package spinwait is how a goroutine that waits for something it can look
// at without blocking spins before it parks: the spin's clock, the limit on
// spinners, the adaptive budget and the park.
//
// Two kinds of waiter use it. A qp.Conn Read or Write that waits for a
// completion polls its CQ inline, holding one of Slots (at most
// GOMAXPROCS-1 spin at once) and letting the netpoller run (package
// netpass) when the spinners hold every P; it parks once it has polled for
// its SpinWait without a result. A gnettcp.Conn Read that waits for the
// gnet event loop looks at a flag for tcpSpinWait, if its Budget says that
// spinning pays on the connection, and parks. What differs, how to look
// and what to do before parking, stays with the caller: it looks, and
// tells its Spin whether it found something (Hit) or not (Miss).
package spinwait

import (
	"runtime"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/netpass"
)

// base anchors Now, taken when the package is initialised, before any
// spin: so Now is above 0 in a spin, and 0 can mean "not started".
var base = time.Now()

// Now reads the monotonic clock alone: time.Since on a time with a
// monotonic reading takes one clock read, time.Now takes two (the wall
// clock too).
func Now() time.Duration { return time.Since(base) }

// Policy is how a kind of waiter spins; one value per kind, shared by its
// Spins.
type Policy struct {
	// ClockEvery is how many misses a spinner makes between looks at the
	// clock (1: at every miss). A look costs about what a poll of a CQ
	// does, and the spin's time need not be kept to the poll.
	ClockEvery int
	// The spinner yields its P (runtime.Gosched) every YieldEvery misses,
	// and every YieldShared while the spinners hold every P (Slots
	// only).
	//
	// The three are powers of two, YieldEvery at least YieldShared: a
	// miss tests them with a mask, not a division.
	YieldEvery, YieldShared int
	// Slots, if not nil, bounds the spinners of this kind: a Spin that
	// finds none free parks at once, and spinners that hold every P let
	// the netpoller run every netpass.Every.
	Slots *Slots
}

// Spin is the state of one waiter's spin, kept on its stack: whether it
// spins (between Begin and the miss that ends it, or End), how many
// misses it made, and since when it has missed.
type Spin struct {
	Policy *Policy
	// Wait is how long the spin lasts without a hit; 0 or less: no spin.
	Wait time.Duration
	// Budget, if not nil, judges whether spinning pays: Begin asks it, and
	// a spin's first hit, or its end without one, is told to it.
	Budget *Budget
	// LastPass is when the waiters this one shares it with last let the
	// netpoller run (Now). A reader's or writer's spins share one: a
	// goroutine whose answers come while it spins never parks, and its
	// spins must still pass. Needed with Policy.Slots.
	LastPass *time.Duration

	on     bool
	judged bool          // the Budget was told this spin's outcome
	polls  int           // misses, across the Spin's spins
	start  time.Duration // Now at the first miss since Begin or the last hit; 0 until then
}

// Spinning reports whether the spin is on: Begin returned true, and
// neither a Miss that returned false nor End has come since.
func (s *Spin) Spinning() bool { return s.on }

// Begin starts the spin and reports whether it did: not if Wait is 0 or
// less, the Budget says to park at once or no slot is free. A spin that is
// already on goes on.
func (s *Spin) Begin() bool {
	if s.on {
		return true
	}
	if s.Wait <= 0 || s.Budget != nil && !s.Budget.Try() {
		return false
	}
	if sl := s.Policy.Slots; sl != nil && !sl.take() {
		return false
	}
	s.on, s.judged, s.start = true, false, 0
	return true
}

// Hit records that the waiter's last look found something: the spin's
// clock restarts at its next miss.
func (s *Spin) Hit() {
	s.start = 0
	if s.Budget != nil && !s.judged {
		s.Budget.Done(true)
		s.judged = true
	}
}

// Miss records that the waiter's last look found nothing, yields the P or
// lets the netpoller run as the Policy says, and reports whether to look
// again (true) or park (false: the spin lasted Wait, and has ended).
func (s *Spin) Miss() bool {
	p := s.Policy
	if s.start == 0 {
		s.start = Now()
	}
	s.polls++
	if s.polls&(p.ClockEvery-1) == 0 {
		now := Now()
		if now-s.start >= s.Wait {
			s.end()
			return false
		}
		if p.Slots != nil && now-*s.LastPass >= netpass.Every && p.Slots.HoldEveryP() {
			netpass.Pass()
			*s.LastPass = Now()
		}
	}
	if s.polls&(p.YieldShared-1) == 0 && (s.polls&(p.YieldEvery-1) == 0 || p.Slots != nil && p.Slots.HoldEveryP()) {
		runtime.Gosched()
	}
	return true
}

// End ends the spin if it is on, giving back its slot.
func (s *Spin) End() {
	if s.on {
		s.end()
	}
}

func (s *Spin) end() {
	s.on = false
	if s.Budget != nil && !s.judged {
		s.Budget.Done(false)
		s.judged = true
	}
	if sl := s.Policy.Slots; sl != nil {
		sl.n.Add(-1)
	}
}

// Park waits until wake is signalled, end or gone is closed (either may
// be nil) or dl is closed, and reports false for dl (nil: no deadline).
// Whatever must happen before a waiter sleeps (arming a CQ) comes before.
func Park(wake, end, gone, dl <-chan struct{}) bool {
	select {
	case <-wake:
	case <-end:
	case <-gone:
	case <-dl:
		return false
	}
	return true
}
