package qp

import (
	"sync"

	"github.com/seed54442f1a/rdmapool/cq"
)

// The process-wide reactor: started by the first connection that needs it,
// stopped when the last one is torn down, so an idle process has no reactor
// goroutine.
var shared struct {
	mu    sync.Mutex
	r     *cq.Reactor
	users int
}

func acquireReactor(opts cq.Options) (*cq.Reactor, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.r == nil {
		r, err := cq.New(opts)
		if err != nil {
			return nil, err
		}
		shared.r = r
	}
	shared.users++
	return shared.r, nil
}

func releaseReactor() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.users--; shared.users == 0 {
		shared.r.Close()
		shared.r = nil
	}
}

// ReactorStats returns the counters of the process-wide reactor, and false
// when none is running (no connection uses it).
func ReactorStats() (cq.Stats, bool) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.r == nil {
		return cq.Stats{}, false
	}
	return shared.r.Stats(), true
}
