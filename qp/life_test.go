package qp

import (
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// allStates is every value the life word can hold.
func allStates() []lifeState {
	var ss []lifeState
	for p := range numPhases {
		for k := range numLinks {
			ss = append(ss, mkState(p, k))
		}
	}
	return ss
}

// want is the transition the table lists for (s, ev), written here apart
// from next: the row whose axis ev moves and whose from is s's part.
func want(s lifeState, ev lifeEvent) (lifeState, bool) {
	for _, t := range lifeTable {
		if t.ev != ev {
			continue
		}
		if ev.onPhase() && t.from == uint8(s.phase()) {
			return mkState(phase(t.to), s.link()), true
		}
		if !ev.onPhase() && t.from == uint8(s.link()) {
			return mkState(s.phase(), link(t.to)), true
		}
	}
	return s, false
}

// TestLifeTable drives every event from every state of a life alone: each
// transition the table lists is taken (and only the part of the word its
// event is for changes), every other is refused and leaves the word as it
// was; and every row of the table is taken from some state.
func TestLifeTable(t *testing.T) {
	taken := make(map[transition]int)
	for _, s := range allStates() {
		for ev := range numEvents {
			l := &life{graceAfter: time.Hour}
			l.word.Store(uint32(s))
			from, ok := l.move(ev)
			l.stopGrace()
			to, legal := want(s, ev)
			if from != s || ok != legal || l.load() != to {
				t.Errorf("%v on %v: moved %v (from %v) to %v; the table says %v to %v", ev, s, ok, from, l.load(), legal, to)
			}
			if !legal {
				continue
			}
			if ev.onPhase() {
				taken[transition{uint8(s.phase()), ev, uint8(to.phase())}]++
			} else {
				taken[transition{uint8(s.link()), ev, uint8(to.link())}]++
			}
		}
	}
	for _, r := range lifeTable {
		if taken[r] == 0 {
			t.Errorf("row %v never taken", r)
		}
	}
	// Nothing leaves closed, and nothing goes back to open or connecting.
	for _, s := range allStates() {
		for ev := range numEvents {
			to, ok := next(s, ev)
			if !ok {
				continue
			}
			if s.phase() == phaseClosed && to.phase() != phaseClosed {
				t.Errorf("%v on %v leaves closed", ev, s)
			}
			if to.phase() == phaseOpen && s.phase() != phaseOpen || to.link() == linkConnecting && s.link() != linkConnecting {
				t.Errorf("%v on %v goes back to %v", ev, s, to)
			}
		}
	}
}

// TestLifeStrings: every state and event has its own name.
func TestLifeStrings(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range allStates() {
		n := s.String()
		if seen[n] || s.phase().String() == "phase?" || s.link().String() == "link?" {
			t.Errorf("state %#x: name %q repeated or unknown", uint32(s), n)
		}
		seen[n] = true
	}
	for ev := range numEvents {
		if n := ev.String(); n == "event?" || seen[n] {
			t.Errorf("event %d: name %q", ev, n)
		} else {
			seen[n] = true
		}
	}
}

// TestLifeReachable: from open/connecting (the zero word) every state is
// reached by the table's events (the link's events are legal in every
// phase): no state is dead.
func TestLifeReachable(t *testing.T) {
	seen := map[lifeState]bool{0: true}
	queue := []lifeState{0}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for ev := range numEvents {
			if to, ok := next(s, ev); ok && !seen[to] {
				seen[to] = true
				queue = append(queue, to)
			}
		}
	}
	for _, s := range allStates() {
		if !seen[s] {
			t.Errorf("%v is never reached from %v", s, lifeState(0))
		}
	}
}

// TestLifeEnd: the first terminal error wins; a Close after a failure
// moves the phase to closed but keeps the error; a failure after Close
// changes nothing.
func TestLifeEnd(t *testing.T) {
	errA, errB := errors.New("a"), errors.New("b")
	var l life
	if l.err() != nil || l.ended() {
		t.Fatal("a new life has ended")
	}
	if !l.endWith(errA, evFail) || l.load().phase() != phaseFailed || l.err() != errA {
		t.Fatalf("first failure: %v, %v", l.load(), l.err())
	}
	if l.endWith(errB, evFail) || l.err() != errA {
		t.Fatalf("second failure won: %v", l.err())
	}
	if l.endWith(net.ErrClosed, evClose) || l.load().phase() != phaseClosed || l.err() != errA {
		t.Fatalf("Close after a failure: %v, %v", l.load(), l.err())
	}

	var c life
	if !c.endWith(net.ErrClosed, evClose) || c.load().phase() != phaseClosed {
		t.Fatalf("Close: %v", c.load())
	}
	if c.endWith(errA, evFail) || c.load().phase() != phaseClosed || c.err() != net.ErrClosed {
		t.Fatalf("failure after Close: %v, %v", c.load(), c.err())
	}
}

// TestLifeEndRace: of failures and Closes at once, exactly one publishes
// its error, and the phase ends closed.
func TestLifeEndRace(t *testing.T) {
	for range 200 {
		var l life
		var wg sync.WaitGroup
		wins := make(chan error, 8)
		for i := range 8 {
			ev, err := evFail, error(errors.New("fail"))
			if i%2 == 0 {
				ev, err = evClose, net.ErrClosed
			}
			wg.Go(func() {
				if l.endWith(err, ev) {
					wins <- err
				}
			})
		}
		wg.Wait()
		close(wins)
		n := 0
		for err := range wins {
			n++
			if l.err() != err {
				t.Fatalf("the winner's error %v is not the published %v", err, l.err())
			}
		}
		if n != 1 || l.load().phase() != phaseClosed {
			t.Fatalf("%d winners, phase %v", n, l.load().phase())
		}
	}
}

// TestLifeGrace: the first half of the link going down arms the grace
// timer, the second stops it; when the second never comes, the timer
// drains the link and calls changed, once.
func TestLifeGrace(t *testing.T) {
	for _, first := range []lifeEvent{evDisconnected, evFlushed} {
		second := evFlushed
		if first == evFlushed {
			second = evDisconnected
		}
		t.Run(first.String()+"-then-"+second.String(), func(t *testing.T) {
			l := &life{graceAfter: time.Hour}
			l.move(evEstablished)
			if l.grace.Load() != nil {
				t.Fatal("the grace timer was armed while the link is up")
			}
			l.move(first)
			g := l.grace.Load()
			if g == nil {
				t.Fatal("the grace timer was not armed")
			}
			l.move(second)
			if !l.load().drained() {
				t.Fatalf("after %v and %v: %v", first, second, l.load())
			}
			if g.Stop() { // an hour: only the second event can have stopped it
				t.Fatal("the second event did not stop the grace timer")
			}
		})
		t.Run(first.String()+"-then-grace", func(t *testing.T) {
			fired := make(chan struct{}, 2)
			l := &life{graceAfter: time.Millisecond, changed: func() { fired <- struct{}{} }}
			l.move(evEstablished)
			l.move(first)
			select {
			case <-fired:
			case <-time.After(time.Minute): // a hang, not a measurement
				t.Fatal("the grace timer did not fire")
			}
			if !l.load().drained() || l.load().phase() != phaseOpen {
				t.Fatalf("after %v and the grace: %v", first, l.load())
			}
			if _, ok := l.move(second); ok {
				t.Fatalf("%v after the grace moved the word", second)
			}
			if len(fired) != 0 {
				t.Fatal("changed called twice")
			}
		})
	}
}

// TestHolds: a hold is dropped once; the two are independent.
func TestHolds(t *testing.T) {
	var h holds
	if h.any() || h.drop(holdLease) {
		t.Fatal("a hold without a take")
	}
	h.take(holdLease)
	h.take(holdReserve)
	if !h.drop(holdLease) || h.drop(holdLease) || !h.any() {
		t.Fatal("Lease's hold")
	}
	if !h.drop(holdReserve) || h.any() {
		t.Fatal("the reservation's hold")
	}
}
