// Package deadline is a settable point in time whose passing closes a
// channel, as net.Pipe's deadlines work: the read and write deadlines of
// rdmapool's connections.
package deadline

import (
	"sync"
	"sync/atomic"
	"time"
)

// Deadline is a point in time, or none. Waiters select on Wait(). The zero
// value is not ready for use; call New.
//
// Setting a deadline allocates nothing in steady state: the timer is made
// once and re-armed, and the channel is only replaced after it was closed
// by a deadline that passed.
type Deadline struct {
	mu     sync.Mutex
	timer  *time.Timer
	when   time.Time     // the deadline; zero for none
	cancel chan struct{} // closed when the deadline passes
	// expired is whether cancel is closed, kept beside it under mu, so that
	// Expired, which spinning readers ask at every turn, takes no lock.
	expired atomic.Bool
}

// New returns a Deadline that is not set.
func New() Deadline { return Deadline{cancel: make(chan struct{})} }

// Set changes the deadline; the zero time means none. A time in the past
// expires it at once.
func (d *Deadline) Set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
	}
	d.when = time.Time{}
	if d.expired.Load() {
		d.cancel = make(chan struct{})
		d.expired.Store(false)
	}
	if t.IsZero() {
		return
	}
	dur := time.Until(t)
	if dur <= 0 {
		d.expire()
		return
	}
	// Kept as a reading of the monotonic clock, as the net package turns
	// a deadline into a duration once: t may carry none (time.Unix, a
	// parsed time), and fire would then take a wall clock stepped back
	// for a deadline not yet due, and never close the channel.
	d.when = time.Now().Add(dur)
	if d.timer == nil {
		d.timer = time.AfterFunc(dur, d.fire)
	} else {
		d.timer.Reset(dur)
	}
}

// fire closes the channel if the deadline has really passed: a timer
// stopped or re-armed while it was firing finds a later deadline, or none,
// and does nothing.
func (d *Deadline) fire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.when.IsZero() && !time.Now().Before(d.when) && !d.expired.Load() {
		d.expire()
	}
}

// expire marks the deadline passed, then closes the channel (mu held): a
// goroutine the close wakes finds Expired true. The other way round, one
// woken on another thread could ask before the flag was set.
func (d *Deadline) expire() {
	d.expired.Store(true)
	close(d.cancel)
}

// Wait returns a channel that is closed when the deadline has passed.
func (d *Deadline) Wait() chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cancel
}

// Expired reports whether the deadline has passed.
func (d *Deadline) Expired() bool { return d.expired.Load() }
