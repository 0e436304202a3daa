package spinwait

import "sync/atomic"

// Budget decides whether a waiter spins at all, for waiters whose spins
// pay only some of the time. It judges spinning by windows of BudgetWindow
// spins in a row: a window in which at least half saw a hit in time is
// followed by another, and one in which fewer did by skip waiters that
// park at once, skip doubling from BudgetSkipMin to BudgetSkipMax while
// the windows stay bad. A single probe would not do: an answer is slower
// while nobody spins (threads go idle), so a lone spin among parked
// waiters would miss where a run of them pays.
//
// It is a heuristic: concurrent waiters may race on it, which costs at
// most a spin more or less, so its fields are atomics only to keep them
// well defined. The zero value is ready to use.
type Budget struct {
	spins atomic.Int32 // spins in this window
	hits  atomic.Int32 // of which saw a hit in time
	skip  atomic.Int32 // waiters left to park without spinning
	next  atomic.Int32 // skip after the next bad window; 0: BudgetSkipMin
}

const (
	BudgetWindow  = 32
	BudgetSkipMin = 64
	BudgetSkipMax = 4096
)

// Try reports whether a waiter may spin, counting one that may not.
func (b *Budget) Try() bool {
	if b.skip.Load() > 0 {
		b.skip.Add(-1)
		return false
	}
	return true
}

// Done records a spin's outcome: hit if what it waited for came in time.
func (b *Budget) Done(hit bool) {
	if hit {
		b.hits.Add(1)
	}
	if b.spins.Add(1) < BudgetWindow {
		return
	}
	good := 2*b.hits.Load() >= BudgetWindow
	b.spins.Store(0)
	b.hits.Store(0)
	if good {
		b.next.Store(0)
		return
	}
	n := max(BudgetSkipMin, b.next.Load())
	b.skip.Store(n)
	b.next.Store(min(2*n, BudgetSkipMax))
}
