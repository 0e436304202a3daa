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
		{0, 0, defaultQueueDepth},
		{10, 4, defaultQueueDepth - 6},
		{5, 6, defaultQueueDepth},                 // a completion seen before its post
		{2, 1<<32 - 3, defaultQueueDepth - 5},     // wrapped sequence numbers
		{1<<32 - 1, 1<<32 - 1, defaultQueueDepth}, // at the wrap
		{defaultQueueDepth, 0, 0},                 // full
	} {
		var c Conn
		c.sqPosted.Store(tc.posted)
		c.sqDone.Store(tc.done)
		if got := c.sqFree(); got != tc.want {
			t.Errorf("posted %d done %d: sqFree %d, want %d", tc.posted, tc.done, got, tc.want)
		}
	}
}

// TestMaxSpinners: the spinner limit (spinSlots.Max) is GOMAXPROCS-1, at
// least 1, and follows a change of GOMAXPROCS within 1024 lookups.
func TestMaxSpinners(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		prev := runtime.GOMAXPROCS(procs)
		for range 1024 {
			spinSlots.Max()
		}
		got := spinSlots.Max()
		runtime.GOMAXPROCS(prev)
		if want := int32(max(procs-1, 1)); got != want {
			t.Errorf("GOMAXPROCS %d: spinSlots.Max() = %d, want %d", procs, got, want)
		}
	}
	for range 1024 { // the limit of the restored GOMAXPROCS, for the tests after
		spinSlots.Max()
	}
}
