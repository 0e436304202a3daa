package qp

import "testing"

// TestPeerOwes: which connections to a peer owe a keepalive at each tick:
// one in a tick after which the peer was not heard from, none after it
// was, every one while a connection to it failed as the peer gone, until
// the peer is heard from again.
func TestPeerOwes(t *testing.T) {
	p := &peer{}
	// tick sends for n connections and returns how many owed one.
	tick := func(n int, tk uint64) int {
		sent := 0
		for range n {
			if p.owes(tk) {
				p.probed = true
				sent++
			}
		}
		return sent
	}
	steps := []struct {
		heard, suspect bool
		want           int
	}{
		{false, false, 1}, // quiet: one probe
		{true, false, 0},  // heard: none
		{false, false, 1},
		{false, true, 5}, // a connection found the peer gone: all
		{false, false, 5},
		{true, false, 0}, // heard again: suspicion ends
		{false, false, 1},
	}
	for i, s := range steps {
		if s.heard {
			p.heard.Store(true)
		}
		if s.suspect {
			p.suspect.Store(true)
		}
		if got := tick(5, uint64(i+1)); got != s.want {
			t.Errorf("tick %d (heard %v, suspect %v): %d of 5 connections sent, want %d", i+1, s.heard, s.suspect, got, s.want)
		}
	}
}
