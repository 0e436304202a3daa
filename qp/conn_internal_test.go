package qp

import (
	"runtime"
	"testing"
)

// TestSQFree: the free send-queue entries never exceed the queue when a
// completion has been counted before the post that caused it (a writer's
// look racing a keepalive's post and completion).
func TestSQFree(t *testing.T) {
	for _, tc := range []struct {
		posted, done uint32
		want         int
	}{
		{0, 0, sqDepth},
		{10, 4, sqDepth - 6},
		{5, 6, sqDepth},                 // a completion seen before its post
		{2, 1<<32 - 3, sqDepth - 5},     // wrapped sequence numbers
		{1<<32 - 1, 1<<32 - 1, sqDepth}, // at the wrap
		{sqDepth, 0, 0},                 // full
	} {
		var c Conn
		c.sqPosted.Store(tc.posted)
		c.sqDone.Store(tc.done)
		if got := c.sqFree(); got != tc.want {
			t.Errorf("posted %d done %d: sqFree %d, want %d", tc.posted, tc.done, got, tc.want)
		}
	}
}

// TestMaxSpinners: the spinner limit is GOMAXPROCS, and follows a change
// of it within 1024 lookups.
func TestMaxSpinners(t *testing.T) {
	if got, want := maxSpinners(), int32(runtime.GOMAXPROCS(0)); got != want {
		t.Fatalf("maxSpinners() = %d, want GOMAXPROCS %d", got, want)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + 1))
	want := int32(runtime.GOMAXPROCS(0))
	for range 1024 {
		maxSpinners()
	}
	if got := maxSpinners(); got != want {
		t.Errorf("after GOMAXPROCS changed to %d, maxSpinners() = %d", want, got)
	}
}
