package benchrun

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// syntheticHist returns n latencies around base nanoseconds with a long
// tail, as a transport's would be.
func syntheticHist(n int, base int64, seed uint64) *hdrhistogram.Histogram {
	h := newHist()
	r := rand.New(rand.NewPCG(seed, seed))
	for range n {
		h.RecordValue(base + int64(r.ExpFloat64()*float64(base)/4))
	}
	return h
}

func TestWritePlot(t *testing.T) {
	series := []PlotSeries{
		{Label: "rdma GET", Hist: syntheticHist(20000, 8_000, 1)},
		{Label: "tcp GET", Hist: syntheticHist(20000, 30_000, 2), Dashes: 1},
	}
	dir := t.TempDir()
	for _, tc := range []struct{ name, magic string }{
		{"lat.svg", "<?xml"},
		{"lat.SVG", "<?xml"},
		{"lat.png", "\x89PNG"},
	} {
		path := filepath.Join(dir, tc.name)
		if err := WritePlot(path, "2 clients, pipeline 1, 3 bytes payload", series); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 1000 || !bytes.HasPrefix(b, []byte(tc.magic)) && !(tc.magic == "<?xml" && bytes.HasPrefix(b, []byte("<svg"))) {
			t.Errorf("%s: %d bytes starting %q, want %q", tc.name, len(b), b[:min(len(b), 16)], tc.magic)
		}
		if tc.magic == "<?xml" {
			for _, want := range []string{"rdma GET", "tcp GET", "99.9%", "latency (µs)"} {
				if !bytes.Contains(b, []byte(want)) {
					t.Errorf("%s lacks %q", tc.name, want)
				}
			}
		}
	}

	for _, bad := range []string{"lat.txt", "lat", "lat.pdf"} {
		path := filepath.Join(dir, bad)
		if err := WritePlot(path, "", series); err == nil || !strings.Contains(err.Error(), ".svg or .png") {
			t.Errorf("%s: %v, want an error naming .svg and .png", bad, err)
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Errorf("%s: a file was left: %v", bad, err)
		}
	}
	if err := WritePlot(filepath.Join(dir, "empty.svg"), "", []PlotSeries{{Label: "x", Hist: newHist()}}); err == nil {
		t.Error("an empty histogram was plotted")
	}
}

func TestPercentileTicks(t *testing.T) {
	var labels []string
	for _, tk := range percentileTicks(1e5) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "50% 90% 99% 99.9% 99.99% 99.999%" {
		t.Errorf("ticks: %s", got)
	}
}

func TestSeriesOf(t *testing.T) {
	h := syntheticHist(10, 1000, 3)
	rdma := &Outcome{Transport: "rdma", Results: []Result{{Test: "SET", Hist: h}, {Test: "GET", Hist: h}}}
	tcp := &Outcome{Transport: "tcp", Results: []Result{{Test: "SET", Hist: h}, {Test: "GET", Hist: h}}}
	s := SeriesOf(rdma, tcp)
	if len(s) != 4 || s[0].Label != "rdma SET" || s[3].Label != "tcp GET" ||
		s[0].Color != s[2].Color || s[1].Color != s[3].Color || s[0].Color == s[1].Color ||
		s[0].Dashes != s[1].Dashes || s[0].Dashes == s[2].Dashes {
		t.Errorf("series: %+v", s)
	}
}
