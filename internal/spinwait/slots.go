package spinwait

import (
	"runtime"
	"sync/atomic"
)

// Slots bounds the goroutines that spin at once to max(GOMAXPROCS-1, 1).
//
// The runtime polls the network only from a P that has nothing else to run
// (or from sysmon, every 10 ms), and spinners on every P held every other
// network event in the process for milliseconds (docs/design.md, "Inline
// polling"). So at most GOMAXPROCS-1 may spin, leaving a P for the
// netpoller; with GOMAXPROCS 1, one, which lets the netpoller run every
// netpass.Every (Spin.Miss). The limit also keeps many waiters from
// crowding the run queue with spinners. The zero value is ready to use.
type Slots struct {
	n, lookups, procs atomic.Int32
}

// Max is max(GOMAXPROCS-1, 1), GOMAXPROCS looked up again every 1024
// calls: runtime.GOMAXPROCS takes the scheduler's lock, and a waiter asks
// before every spin.
func (s *Slots) Max() int32 {
	if n := s.lookups.Add(1); n&1023 == 1 || s.procs.Load() == 0 {
		s.procs.Store(int32(runtime.GOMAXPROCS(0)))
	}
	return max(s.procs.Load()-1, 1)
}

// HoldEveryP reports whether the spinners hold every P, so that they must
// let the netpoller run themselves.
func (s *Slots) HoldEveryP() bool { return s.n.Load() >= s.procs.Load() }

func (s *Slots) take() bool {
	if s.n.Add(1) > s.Max() {
		s.n.Add(-1)
		return false
	}
	return true
}

// Spinning is how many slots are taken.
func (s *Slots) Spinning() int32 { return s.n.Load() }
