package qp

import "sync/atomic"

// Stage timings: where a round trip's time goes inside this package. Built
// with -tags rdmapool_stages, qp times each stage below (a clock read at each
// end; one histogram per stage, behind a lock) and WriteStages prints their
// percentiles; it also stamps each data message's handling and post, and
// Timeline returns the stamps, which line up between a client and its
// server (package bench puts them together). Built without, the hooks
// compile to nothing (StagesEnabled is false). docs/benchmarks.md has a run
// of it.

// A stage is one timed step of the data path.
type stage int

const (
	stageWrite        stage = iota // Conn.Write, call to return
	stagePostSend                  // one ibv_post_send call
	stagePollHit                   // an inline ibv_poll_cq that found the connection's completions, and their handling
	stagePollMiss                  // an inline ibv_poll_cq that found none of them
	stageWait                      // Conn.Read: call to the first inline poll after it that found completions
	stageDetectReturn              // that poll to Read's return
	numStages
)

// since records the time from t0 (a stageNow) to now.
func (s stage) since(t0 int64) { s.record(stageNow() - t0) }

// readMarks are a Read's times: its call, and the first inline poll after
// it that found completions (0 until then; set by whichever goroutine
// polled). That poll normally brings the Read's data; now and then it finds
// only a send completion (one WR in 128 is signaled), which makes that
// sample's wait shorter and its return longer.
type readMarks struct {
	call  int64
	found atomic.Int64
}

func (m *readMarks) begin() {
	m.call = stageNow()
	m.found.Store(0)
}

// polled notes a poll at t that found completions, the first since begin.
func (m *readMarks) polled(t int64) { m.found.CompareAndSwap(0, t) }

func (m *readMarks) end() {
	if found := m.found.Load(); found != 0 {
		stageWait.record(found - m.call)
		stageDetectReturn.since(found)
	}
}
