package bench

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/seed54442f1a/rdmapool/internal/stages"
)

// The round trip's legs, from both processes' stamps (stages.Timeline), in a
// build with -tags rdmapool_stages: the client makes a directory and names
// it in timelineEnv; the echo server saves its stamps there when it exits,
// and the client puts them beside its own.
const timelineEnv = "RDMAPOOL_BENCH_TIMELINE"

// timelineWarmup is how many messages at the start the legs leave out.
const timelineWarmup = 1000

// startTimeline makes the directory the echo servers save their stamps in.
func startTimeline() (cleanup func()) {
	if !stages.Enabled {
		return func() {}
	}
	dir, err := os.MkdirTemp("", "rdmapool-timeline")
	if err != nil {
		fmt.Fprintln(os.Stderr, "timeline:", err)
		return func() {}
	}
	os.Setenv(timelineEnv, dir)
	return func() { os.RemoveAll(dir) }
}

// saveTimeline saves an echo server's stamps, if the client asked for them
// and there are any (a TCP echo server has none, and leaves the file of an
// RDMA one before it alone).
func saveTimeline() {
	dir := os.Getenv(timelineEnv)
	if !stages.Enabled || dir == "" {
		return
	}
	found, start, end := stages.Timeline()
	if len(found) == 0 && len(start) == 0 {
		return
	}
	f, err := os.Create(filepath.Join(dir, "server"))
	if err == nil {
		for _, s := range [][]int64{found, start, end} {
			binary.Write(f, binary.LittleEndian, int64(len(s)))
			binary.Write(f, binary.LittleEndian, s)
		}
		err = f.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "timeline:", err)
	}
}

func loadTimeline(path string) (stamps [3][]int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return stamps, err
	}
	defer f.Close()
	for i := range stamps {
		var n int64
		if err := binary.Read(f, binary.LittleEndian, &n); err != nil {
			return stamps, err
		}
		stamps[i] = make([]int64, n)
		if err := binary.Read(f, binary.LittleEndian, stamps[i]); err != nil {
			return stamps, err
		}
	}
	return stamps, nil
}

// writeTimeline prints the percentiles of the round trip's legs: message k
// goes from the client's post to the server's handling of it, the server's
// echo of it from its post to the client's handling, and the client's next
// post follows. For the round trips beyond the 99th percentile it counts
// which of the four parts overran its own median the most: the legs are
// soft-RoCE's work and the peer's noticing, the turnarounds are ours. It
// needs one RDMA connection in the run (one benchmark):
// with more, the client's stamps run on across connections and no longer
// match the last server's, and it says so.
func writeTimeline(w io.Writer) {
	dir := os.Getenv(timelineEnv)
	if !stages.Enabled || dir == "" {
		return
	}
	srv, err := loadTimeline(filepath.Join(dir, "server"))
	if err != nil {
		if !os.IsNotExist(err) {
			fmt.Fprintln(w, "timeline:", err)
		}
		return
	}
	cFound, cStart, cEnd := stages.Timeline()
	sFound, sStart, sEnd := srv[0], srv[1], srv[2]
	n := min(len(cFound), len(cStart)-1, len(sFound), len(sStart))
	if max(len(cFound), len(cStart), len(sFound), len(sStart))-n > 1 || n <= timelineWarmup {
		fmt.Fprintf(w, "timeline: not put together: %d and %d messages handled, %d and %d posted by the client and the server (it needs one RDMA benchmark in the run, of more than %d round trips)\n",
			len(cFound), len(sFound), len(cStart), len(sStart), timelineWarmup)
		return
	}
	// The first parts legs are the parts of a round trip, in order; the
	// next is the round trip, their sum.
	const parts = 4
	legs := []struct {
		name string
		d    func(k int) int64
	}{
		{"client post -> server handles it", func(k int) int64 { return sFound[k] - cStart[k] }},
		{"server handles it -> its post", func(k int) int64 { return sStart[k] - sFound[k] }},
		{"server post -> client handles the echo", func(k int) int64 { return cFound[k] - sStart[k] }},
		{"client handles it -> its next post", func(k int) int64 { return cStart[k+1] - cFound[k] }},
		{"round trip (post to next post)", func(k int) int64 { return cStart[k+1] - cStart[k] }},
		{"client ibv_post_send", func(k int) int64 { return cEnd[k] - cStart[k] }},
		{"server ibv_post_send", func(k int) int64 { return sEnd[k] - sStart[k] }},
	}
	fmt.Fprintf(w, "timeline: over messages %d to %d, µs: p50 p90 p99 p99.9\n", timelineWarmup, n)
	sorted := make([][]int64, len(legs))
	for i, l := range legs {
		d := make([]int64, 0, n-timelineWarmup)
		for k := timelineWarmup; k < n; k++ {
			d = append(d, l.d(k))
		}
		slices.Sort(d)
		sorted[i] = d
		q := func(p float64) float64 { return float64(d[int(p*float64(len(d)-1))]) / 1e3 }
		fmt.Fprintf(w, "timeline %-40s %8.2f %8.2f %8.2f %8.2f\n", l.name, q(0.5), q(0.9), q(0.99), q(0.999))
	}
	// The tail: for each round trip beyond the 99th percentile, the leg or
	// turnaround that overran its own median the most.
	rt := sorted[parts]
	p99 := rt[int(0.99*float64(len(rt)-1))]
	blame := make([]int, parts)
	tail := 0
	for k := timelineWarmup; k < n; k++ {
		if legs[parts].d(k) <= p99 {
			continue
		}
		tail++
		worst, over := 0, int64(-1<<62)
		for i := range parts {
			if o := legs[i].d(k) - sorted[i][len(sorted[i])/2]; o > over {
				worst, over = i, o
			}
		}
		blame[worst]++
	}
	for i := range parts {
		fmt.Fprintf(w, "timeline tail: %-40s the most overrun in %d of the %d round trips beyond p99\n", legs[i].name, blame[i], tail)
	}
}
