package benchrun

import (
	"sync/atomic"
	"syscall"
	"time"
)

// hasSocket says whether c has a socket of its own (pool.PooledConn's
// SyscallConn: a TCP connection of the netpoll engine).
func hasSocket(c conn) bool {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return false
	}
	_, err := sc.SyscallConn()
	return err == nil
}

// loopPhase is what a loop needs of its phase.
type loopPhase struct {
	keyspace  uint64
	pipeline  int
	record    bool
	requests  int           // 0: no bound
	remaining *atomic.Int64 // requests not yet claimed, with requests
	deadline  time.Time     // zero: none
	stopped   *atomic.Bool
	// retag, in a cluster run, gives a client's next k requests the hash
	// tag of a slot of its primary; follow follows a redirection
	// (follower.follow).
	retag  func(c *client, k int)
	follow func(c *client, err error) bool
}

// claim returns the size of a client's next batch, 0 when the phase has
// no more for it; a client's first batch of a timed phase is never past
// its deadline (each client runs at least one).
func (ph *loopPhase) claim(first bool) int {
	if ph.stopped.Load() {
		return 0
	}
	if !first && !ph.deadline.IsZero() && time.Now().After(ph.deadline) {
		return 0
	}
	P := int64(ph.pipeline)
	if ph.requests == 0 {
		return int(P)
	}
	left := ph.remaining.Add(-P) + P
	if left <= 0 {
		return 0
	}
	return int(min(P, left))
}

// makeRoom makes room at c.in[c.w:] for a read.
func (c *client) makeRoom() {
	if c.r == c.w {
		c.r, c.w = 0, 0
	} else if c.w == len(c.in) {
		if c.r > 0 {
			c.w = copy(c.in, c.in[c.r:c.w])
			c.r = 0
		} else { // one reply larger than the buffer
			c.in = append(c.in, make([]byte, len(c.in))...)
		}
	}
}
