//go:build rdmapool_stages

package qp

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// StagesEnabled reports whether this build times the data path's stages.
const StagesEnabled = true

var stageStart = time.Now()

// stageNow is the clock the stages are timed with, in nanoseconds.
func stageNow() int64 { return int64(time.Since(stageStart)) }

var stageHists [numStages]struct {
	mu sync.Mutex
	h  *hdrhistogram.Histogram
}

func (s stage) record(d int64) {
	sh := &stageHists[s]
	sh.mu.Lock()
	if sh.h == nil {
		sh.h = hdrhistogram.New(1, int64(time.Second), 3)
	}
	sh.h.RecordValue(min(max(d, 1), int64(time.Second)))
	sh.mu.Unlock()
}

// WriteStages prints each stage's count and its 10th, 50th and 90th
// percentiles in microseconds, each line starting with "stage WHO".
func WriteStages(w io.Writer, who string) {
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
