// Package deadline is a settable point in time whose passing closes a
// channel, as net.Pipe's deadlines work: the read and write deadlines of
// rdmapool's connections.
package deadline

import (
	"sync"
	"time"
)

// Deadline is a point in time, or none. Waiters select on Wait(). The zero
// value is not ready for use; call New.
type Deadline struct {
	mu     sync.Mutex
	timer  *time.Timer
	cancel chan struct{} // closed when the deadline passes
}

// New returns a Deadline that is not set.
func New() Deadline { return Deadline{cancel: make(chan struct{})} }

// Set changes the deadline; the zero time means none. A time in the past
// expires it at once.
func (d *Deadline) Set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.cancel // the timer fired: wait for it to have closed cancel
	}
	d.timer = nil
	closed := IsClosed(d.cancel)
	if t.IsZero() {
		if closed {
			d.cancel = make(chan struct{})
		}
		return
	}
	if dur := time.Until(t); dur > 0 {
		if closed {
			d.cancel = make(chan struct{})
		}
		c := d.cancel
		d.timer = time.AfterFunc(dur, func() { close(c) })
		return
	}
	if !closed {
		close(d.cancel)
	}
}

// Wait returns a channel that is closed when the deadline has passed.
func (d *Deadline) Wait() chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cancel
}

// Expired reports whether the deadline has passed.
func (d *Deadline) Expired() bool { return IsClosed(d.Wait()) }

// IsClosed reports whether c is closed, without blocking.
func IsClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
