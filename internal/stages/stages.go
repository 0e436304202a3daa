// Package stages times the RDMA data path's steps: where a round trip's
// time goes inside package qp. Built with -tags rdmapool_stages, qp times
// each Stage below (a clock read at each end; one histogram per stage,
// behind a lock) and Print prints their percentiles; it also stamps each
// data message's handling and post, and Timeline returns the stamps, which
// line up between a client and its server (package bench puts them
// together). Built without, the hooks compile to nothing (Enabled is
// false). docs/benchmarks.md has a run of it.
//
// It is instrumentation for this module's benchmarks, not part of qp's
// API: callers test Enabled before each hook, so that a build without the
// tag pays nothing.
package stages

import "sync/atomic"

// A Stage is one timed step of the data path.
type Stage int

const (
	Write        Stage = iota // Conn.Write, call to return
	PostSend                  // one ibv_post_send call
	PollHit                   // an inline ibv_poll_cq that found the connection's completions, and their handling
	PollMiss                  // an inline ibv_poll_cq that found none of them
	Wait                      // Conn.Read: call to the first inline poll after it that found completions
	DetectReturn              // that poll to Read's return
	numStages
)

// Since records the time from t0 (a Now) to now.
func (s Stage) Since(t0 int64) { s.Record(Now() - t0) }

// ReadMarks are a Read's times: its call, and the first inline poll after
// it that found completions (0 until then; set by whichever goroutine
// polled). That poll normally brings the Read's data; now and then it finds
// only a send completion (one WR in 128 is signaled), which makes that
// sample's wait shorter and its return longer.
type ReadMarks struct {
	call  int64
	found atomic.Int64
}

// Begin marks a Read's call.
func (m *ReadMarks) Begin() {
	m.call = Now()
	m.found.Store(0)
}

// Polled notes a poll at t that found completions, the first since Begin.
func (m *ReadMarks) Polled(t int64) { m.found.CompareAndSwap(0, t) }

// End records the Read's Wait and DetectReturn, if a poll found completions.
func (m *ReadMarks) End() {
	if found := m.found.Load(); found != 0 {
		Wait.Record(found - m.call)
		DetectReturn.Since(found)
	}
}
