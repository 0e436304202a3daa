package qp

import (
	"sync"
	"time"
)

// When a device goes, rdma_cm gives each of its ids DEVICE_REMOVAL. But a
// connection whose peer is on the same device (loopback, as in tests, or
// two services on one host) may first get DISCONNECTED, caused by the peer's
// own teardown after its DEVICE_REMOVAL, and would take the removal for a
// close by the peer (io.EOF). So the process remembers, by name and for
// removalWindow, the devices whose removal a connection or listener saw,
// and a DISCONNECTED on such a device counts as ErrDeviceRemoved: when it
// comes, and again when a Read would return io.EOF for it, since the other
// connection's DEVICE_REMOVAL, queued first, may be read a moment later. A
// device of that name used again by a new connection (the device came back)
// ends the memory early.
var removals struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

const removalWindow = 5 * time.Second

// deviceGone records that device was removed.
func deviceGone(device string) {
	if device == "" {
		return
	}
	removals.mu.Lock()
	defer removals.mu.Unlock()
	if removals.seen == nil {
		removals.seen = make(map[string]time.Time)
	}
	removals.seen[device] = time.Now()
}

// deviceBack records that a device of that name is in use again.
func deviceBack(device string) {
	removals.mu.Lock()
	defer removals.mu.Unlock()
	delete(removals.seen, device)
}

// deviceRecentlyGone reports whether device's removal was seen within
// removalWindow.
func deviceRecentlyGone(device string) bool {
	removals.mu.Lock()
	defer removals.mu.Unlock()
	t, ok := removals.seen[device]
	if ok && time.Since(t) > removalWindow {
		delete(removals.seen, device)
		return false
	}
	return ok
}
