package qp

import (
	"testing"
	"time"
)

// TestRemovalMemory: a device's removal is remembered for removalWindow,
// and forgotten at once when a device of that name is used again.
func TestRemovalMemory(t *testing.T) {
	const dev = "rxe-test"
	if deviceRecentlyGone(dev) {
		t.Fatal("a device never removed counts as gone")
	}
	deviceGone(dev)
	if !deviceRecentlyGone(dev) {
		t.Fatal("a removal just seen is forgotten")
	}
	deviceBack(dev)
	if deviceRecentlyGone(dev) {
		t.Fatal("a device in use again still counts as gone")
	}
	deviceGone(dev)
	removals.mu.Lock()
	removals.seen[dev] = time.Now().Add(-removalWindow - time.Second)
	removals.mu.Unlock()
	if deviceRecentlyGone(dev) {
		t.Fatal("a removal older than removalWindow still counts")
	}
	deviceGone("")
	if deviceRecentlyGone("") {
		t.Fatal("a connection without a device counts as on a removed one")
	}
}
