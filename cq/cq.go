// Package cq is the completion-queue reactor: one goroutine, locked to its OS
// thread, that polls completion queues in batches and hands each completion to
// the handler its work-request id names. While there is work, and for a
// configurable idle window after it, the reactor keeps polling; then it arms
// notification, polls once more to close the race with a completion that
// arrived meanwhile, and sleeps until the completion channels (or an eventfd
// that wakes it for changes and shutdown) have events: in the Go netpoller,
// unlocked from its thread, so that a wake-up costs one thread's. A CQ
// armed and found empty is polled no more until its event comes, so idle
// CQs cost neither polls nor arms.
//
// The reactor owns the CQs. The queue pairs of one device share them (package
// qp attaches them): a CQ holds the work requests of as many queue pairs as
// fit in it, and all of a device's CQs report to one completion channel, so
// one poll serves every connection with work, one arm covers the idle ones,
// and a connection costs no file descriptor.
//
// The reactor is built for Linux, where it sleeps in epoll
// (reactor_linux.go); on other systems (reactor_other.go) New fails, as
// there is no RDMA there.
package cq

import (
	"time"
)

// Handler receives the completions of the work requests it posted.
type Handler interface {
	// HandleCompletions runs with consecutive completions for this
	// handler, with its CQ's lock held: on the reactor's goroutine, or on
	// the goroutine of a member of the same CQ that polls it inline
	// (Member.PollLocked). byOwner is true when that member is this
	// handler's own. It must not block. wcs is valid only during the call.
	HandleCompletions(wcs []Completion, byOwner bool)
	// HandleCQError runs when polling the CQ failed; the CQ is then polled
	// no more.
	HandleCQError(err error)
}

// Options tune a Reactor. The zero value busy-polls for 50µs after the last
// completion, in batches of 32.
type Options struct {
	// NoBusyPoll makes the reactor sleep as soon as a poll finds nothing.
	NoBusyPoll bool
	// IdleSpin is how long to keep polling after the last completion
	// before sleeping; 0 means 50µs.
	IdleSpin time.Duration
	// Batch is how many completions one poll may return; 0 means 32.
	Batch int
}

// Stats are a reactor's counters since it started.
type Stats struct {
	Polls       uint64 // poll_cq calls
	EmptyPolls  uint64 // poll_cq calls that returned nothing
	Completions uint64 // completions dispatched
	Wakeups     uint64 // times the reactor slept and was woken
	Stale       uint64 // completions whose wr_id named no attached member
	Timeouts    uint64 // sleeps that ended by sleepLimit, not by an event
	Handoffs    uint64 // sleeps that ended by handoffLimit: a CQ with parked waiters was left to a member polling it
	Passes      uint64 // times the busy reactor let the netpoller run (netpass.Every)
	CQs         int    // CQs the reactor has now
	Members     int    // queue pairs attached now (by package qp, until Release)
	Hot         int    // CQs the reactor polls now (the others are armed and idle)
	Channels    int    // completion channels in the reactor's epoll set now: one per device
}
