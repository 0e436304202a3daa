//go:build !linux

package cq

import (
	"errors"
	"runtime"
	"sync/atomic"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// errNoReactor is New's error off Linux.
var errNoReactor = errors.New("cq: the completion-queue reactor needs Linux (epoll, libibverbs); this is " + runtime.GOOS)

// Reactor polls CQs and dispatches their completions. Off Linux there is
// none: New fails, and a Reactor's methods act as on one already closed.
type Reactor struct {
	stale atomic.Uint64
}

// New fails off Linux.
func New(opts Options) (*Reactor, error) { return nil, errNoReactor }

// attach fails: the reactor is closed.
func (r *Reactor) attach(ctx verbs.Ptr[verbs.Context], cqes int, h Handler) (*Member, error) {
	return nil, errors.New("cq: reactor is closed")
}

// Close does nothing.
func (r *Reactor) Close() {}

// Done is closed.
func (r *Reactor) Done() <-chan struct{} { return closed }

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Stats returns zero counters.
func (r *Reactor) Stats() Stats { return Stats{} }

func (r *Reactor) wake() {}

func (r *Reactor) release(q *queue, cqes int) {}

type device struct{}
