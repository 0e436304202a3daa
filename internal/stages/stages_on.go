//go:build rdmapool_stages

package stages

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
	_ "unsafe" // for go:linkname

	"github.com/HdrHistogram/hdrhistogram-go"
)

// stageNames label the stages in Print.
var stageNames = [numStages]string{
	Write:        "Write",
	PostSend:     "ibv_post_send",
	PollHit:      "ibv_poll_cq, hit",
	PollMiss:     "ibv_poll_cq, miss",
	Wait:         "Read: call to data found",
	DetectReturn: "Read: data found to return",
}

// Enabled reports whether this build times the data path's stages.
const Enabled = true

// Now is the clock the stages are timed with: the runtime's monotonic
// clock (CLOCK_MONOTONIC, read through the vDSO), in nanoseconds, which
// processes on one machine share, so that the timelines of a client and
// its server line up.
//
//go:linkname Now runtime.nanotime
func Now() int64

var stageHists [numStages]struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

// stageHistsOff: RDMAPOOL_STAGES=timeline keeps the timeline and leaves
// the histograms empty, whose recording (a lock and a histogram update a
// stage) would otherwise be a good part of what the timeline measures.
var stageHistsOff = os.Getenv("RDMAPOOL_STAGES") == "timeline"

// Record records a duration of d nanoseconds for the stage.
func (s Stage) Record(d int64) {
	if stageHistsOff {
		return
	}
	sh := &stageHists[s]
	sh.mu.Lock()
	if sh.h == nil {
		sh.h = hdrhistogram.New(1, int64(time.Second), 3)
	}
	sh.h.RecordValue(min(max(d, 1), int64(time.Second)))
	sh.mu.Unlock()
}

// Print prints each stage's count and its 10th, 50th and 90th
// percentiles in microseconds, each line starting with "stage WHO".
func Print(w io.Writer, who string) {
	for s := range numStages {
		sh := &stageHists[s]
		sh.mu.Lock()
		if sh.h != nil {
			us := func(p float64) float64 { return float64(sh.h.ValueAtQuantile(p)) / 1e3 }
			fmt.Fprintf(w, "stage %s %-27s n=%-8d p10=%.2f p50=%.2f p90=%.2f µs\n",
				who, stageNames[s], sh.h.TotalCount(), us(10), us(50), us(90))
		}
		sh.mu.Unlock()
	}
}

// timelineCap bounds the messages a timeline keeps: the first so many.
const timelineCap = 1 << 18

// timeline holds the stamps of the process's data messages, in order
// (every connection's, so that it means something with one connection).
// Each stamp is written once, at an index taken atomically, and read by
// Timeline after the traffic has stopped.
var timeline struct {
	found, postStart, postEnd [timelineCap]int64
	nFound, nPost             atomic.Int64
}

// Found stamps the handling of a received data message at t (a Now).
func Found(t int64) {
	if i := timeline.nFound.Add(1) - 1; i < timelineCap {
		timeline.found[i] = t
	}
}

// Posted stamps the post of a sent data message, from start to end.
func Posted(start, end int64) {
	if i := timeline.nPost.Add(1) - 1; i < timelineCap {
		timeline.postStart[i], timeline.postEnd[i] = start, end
	}
}

// Timeline returns, for the process's data messages in order (the first
// 262144), when each received one was handled and when the post of each
// sent one began and ended: monotonic-clock nanoseconds, comparable
// between processes on one machine. Call it once the traffic has stopped.
// A build without -tags rdmapool_stages returns nothing.
func Timeline() (found, postStart, postEnd []int64) {
	nf := min(timeline.nFound.Load(), timelineCap)
	np := min(timeline.nPost.Load(), timelineCap)
	return append([]int64(nil), timeline.found[:nf]...),
		append([]int64(nil), timeline.postStart[:np]...),
		append([]int64(nil), timeline.postEnd[:np]...)
}
