package spinwait

import (
	"runtime"
	"testing"
	"time"
)

// TestBudget: spinning goes on while at least half of a window's spins see
// a hit in time, stops for a number of waiters that doubles while windows
// stay bad, and a good window resets that number.
func TestBudget(t *testing.T) {
	var s Budget
	window := func(hits int) {
		t.Helper()
		for i := range BudgetWindow {
			if !s.Try() {
				t.Fatalf("spin %d of a window refused", i)
			}
			s.Done(i < hits)
		}
	}
	skipped := func() int {
		n := 0
		for !s.Try() {
			n++
		}
		return n
	}
	window(BudgetWindow / 2)
	if n := skipped(); n != 0 {
		t.Fatalf("after a window with half hits, %d waiters did not spin", n)
	}
	want := BudgetSkipMin
	for range 10 {
		window(BudgetWindow/2 - 1)
		if n := skipped(); n != want {
			t.Fatalf("after a bad window, %d waiters did not spin, want %d", n, want)
		}
		want = min(2*want, BudgetSkipMax)
	}
	window(BudgetWindow)
	window(0)
	if n := skipped(); n != BudgetSkipMin {
		t.Fatalf("after good then bad windows, %d waiters did not spin, want %d", n, BudgetSkipMin)
	}
}

// TestSlotsMax: the limit is GOMAXPROCS-1, at least 1, and follows a
// change of GOMAXPROCS within 1024 lookups.
func TestSlotsMax(t *testing.T) {
	var s Slots
	for _, procs := range []int{1, 2, 4} {
		prev := runtime.GOMAXPROCS(procs)
		for range 1024 {
			s.Max()
		}
		got := s.Max()
		runtime.GOMAXPROCS(prev)
		if want := int32(max(procs-1, 1)); got != want {
			t.Errorf("GOMAXPROCS %d: Max() = %d, want %d", procs, got, want)
		}
	}
}

// TestSpinSlots: a Spin takes a slot in Begin and gives it back when it
// ends, by End or by a Miss past its Wait; with every slot taken, Begin
// refuses, and spinners that hold every P say so.
func TestSpinSlots(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	var slots Slots
	var last time.Duration
	p := Policy{ClockEvery: 1, YieldEvery: 64, YieldShared: 8, Slots: &slots}
	spins := make([]Spin, 3)
	for i := range spins {
		spins[i] = Spin{Policy: &p, Wait: time.Hour, LastPass: &last}
	}
	for i := range 2 {
		if !spins[i].Begin() || !spins[i].Spinning() {
			t.Fatalf("spin %d of 2 with GOMAXPROCS 3 refused", i)
		}
		if !spins[i].Begin() {
			t.Fatalf("Begin of spin %d, already on, refused", i)
		}
	}
	if got := slots.Spinning(); got != 2 {
		t.Fatalf("%d slots taken, want 2", got)
	}
	if spins[2].Begin() || spins[2].Spinning() {
		t.Fatal("a third spinner with GOMAXPROCS 3 began")
	}
	if slots.Spinning() != 2 || slots.HoldEveryP() {
		t.Fatalf("a refused Begin left %d slots taken (HoldEveryP %v)", slots.Spinning(), slots.HoldEveryP())
	}
	spins[0].End()
	spins[0].End() // a second End gives back nothing
	if spins[0].Spinning() || slots.Spinning() != 1 {
		t.Fatalf("after End: spinning %v, %d slots taken, want 1", spins[0].Spinning(), slots.Spinning())
	}
	if !spins[2].Begin() {
		t.Fatal("a slot given back was not taken")
	}
	spins[1].Wait = time.Nanosecond
	for n := 0; spins[1].Miss(); n++ {
		if n > 1000 {
			t.Fatal("a spin past its Wait did not end")
		}
	}
	if spins[1].Spinning() || slots.Spinning() != 1 {
		t.Fatalf("after a spin's Wait: spinning %v, %d slots taken, want 1", spins[1].Spinning(), slots.Spinning())
	}
	spins[2].End()
	if slots.Spinning() != 0 {
		t.Fatalf("%d slots taken after every spin ended", slots.Spinning())
	}
}

// TestSpinClock: the clock is looked at every ClockEvery misses, so a spin
// whose Wait has passed ends at the next look and not before; a Hit
// restarts the clock; Wait 0 or less never spins.
func TestSpinClock(t *testing.T) {
	p := Policy{ClockEvery: 16, YieldEvery: 64, YieldShared: 8}
	s := Spin{Policy: &p, Wait: time.Nanosecond}
	if !s.Begin() {
		t.Fatal("Begin refused")
	}
	for i := 1; i < 16; i++ {
		if !s.Miss() {
			t.Fatalf("miss %d ended the spin before the clock's look", i)
		}
	}
	time.Sleep(time.Millisecond) // Wait has passed by the 16th miss, whatever the clock's grain
	if s.Miss() || s.Spinning() {
		t.Fatal("the 16th miss, past Wait, did not end the spin")
	}

	s = Spin{Policy: &p, Wait: time.Hour}
	s.Begin()
	for range 1000 {
		if !s.Miss() {
			t.Fatal("a spin ended long before its Wait")
		}
		s.Hit()
	}
	if s.start != 0 {
		t.Fatal("a Hit did not restart the clock")
	}
	s.End()

	for _, w := range []time.Duration{0, -1} {
		s := Spin{Policy: &p, Wait: w}
		if s.Begin() {
			t.Fatalf("Wait %v: a spin began", w)
		}
	}
}

// TestSpinBudget: a spin's first Hit counts as a hit to its Budget, once;
// a spin that ends without one counts as a miss; the Budget's refusal
// keeps Begin from spinning.
func TestSpinBudget(t *testing.T) {
	p := Policy{ClockEvery: 1, YieldEvery: 1, YieldShared: 1}
	var b Budget
	for range BudgetWindow - 1 {
		s := Spin{Policy: &p, Wait: time.Hour, Budget: &b}
		s.Begin()
		s.Hit()
		s.Hit()
		s.End()
	}
	if got := b.hits.Load(); got != BudgetWindow-1 {
		t.Fatalf("%d hits recorded, want %d", got, BudgetWindow-1)
	}
	// A window of misses: BudgetWindow spins that end unanswered.
	for range BudgetWindow + 1 {
		s := Spin{Policy: &p, Wait: time.Hour, Budget: &b}
		s.Begin()
		s.End()
	}
	if b.skip.Load() != BudgetSkipMin {
		t.Fatalf("after a bad window, skip %d, want %d", b.skip.Load(), BudgetSkipMin)
	}
	s := Spin{Policy: &p, Wait: time.Hour, Budget: &b}
	if s.Begin() {
		t.Fatal("a spin began while its Budget says to park")
	}
}

// TestPark: Park returns true for a signal or a closed end or gone
// channel, and false for a closed deadline channel.
func TestPark(t *testing.T) {
	wake := make(chan struct{}, 1)
	closed := make(chan struct{})
	close(closed)
	wake <- struct{}{}
	if !Park(wake, nil, nil, nil) {
		t.Error("Park on a signal reported the deadline")
	}
	if !Park(wake, closed, nil, nil) || !Park(wake, nil, closed, nil) {
		t.Error("Park on an end reported the deadline")
	}
	if Park(wake, nil, nil, closed) {
		t.Error("Park on a deadline reported none")
	}
}

func TestNow(t *testing.T) {
	if a := Now(); a <= 0 {
		t.Fatalf("Now() = %v, want above 0", a)
	}
}

func BenchmarkSpinMiss(b *testing.B) {
	var slots Slots
	var last time.Duration
	p := Policy{ClockEvery: 16, YieldEvery: 64, YieldShared: 8, Slots: &slots}
	b.ReportAllocs()
	s := Spin{Policy: &p, Wait: time.Hour, LastPass: &last}
	s.Begin()
	for b.Loop() {
		s.Miss()
	}
	s.End()
}
