package qp

import (
	"github.com/seed54442f1a/rdmapool/cq"
	"github.com/seed54442f1a/rdmapool/internal/singleton"
)

// sharedReactor is the process-wide reactor: started by the first
// connection that needs it, stopped when the last one is torn down, so an
// idle process has no reactor goroutine.
var sharedReactor = singleton.Shared[*cq.Reactor]{Stop: (*cq.Reactor).Close}

func acquireReactor(opts cq.Options) (*cq.Reactor, error) {
	return sharedReactor.Acquire(func() (*cq.Reactor, error) { return cq.New(opts) })
}

func releaseReactor() { sharedReactor.Release() }

// ReactorStats returns the counters of the process-wide reactor, and false
// when none is running (no connection uses it).
func ReactorStats() (cq.Stats, bool) {
	var st cq.Stats
	ok := sharedReactor.Peek(func(r *cq.Reactor) { st = r.Stats() })
	return st, ok
}
