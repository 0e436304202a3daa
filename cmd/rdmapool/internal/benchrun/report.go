package benchrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"text/tabwriter"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// CSVHeader is valkey-benchmark's --csv header.
var CSVHeader = []string{"test", "rps", "avg_latency_ms", "min_latency_ms", "p50_latency_ms", "p95_latency_ms", "p99_latency_ms", "max_latency_ms"}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// Host is what the text report says beyond the Outcome, as
// valkey-benchmark's header does: keep-alive, the server's "save" and
// "appendonly" configuration, the cluster's primaries, the client threads.
// The zero Host says keep alive 1 and no threads, and no configuration.
type Host struct {
	NoKeepAlive bool // -k 0
	// Config is the server's CONFIG GET save and appendonly, by primary
	// with a cluster; nil when it could not be read.
	Config []ServerConfig
	// Primaries is the cluster's primaries, with --cluster.
	Primaries int
	Threads   int // client threads; 0 is one
}

// WriteText writes one test's report as valkey-benchmark prints it, with
// the transport added.
func WriteText(w io.Writer, o *Outcome, r *Result) { WriteTextHost(w, o, r, nil) }

// WriteTextHost is WriteText with what h says of the run in the header.
func WriteTextHost(w io.Writer, o *Outcome, r *Result, h *Host) {
	if h == nil {
		h = &Host{}
	}
	fmt.Fprintf(w, "====== %s ======\n", r.Test)
	fmt.Fprintf(w, "  %d requests completed in %.2f seconds\n", r.Requests, r.Seconds)
	fmt.Fprintf(w, "  %d parallel clients\n", o.Clients)
	fmt.Fprintf(w, "  %d bytes payload\n", o.DataSize)
	keepAlive := 1
	if h.NoKeepAlive {
		keepAlive = 0
	}
	fmt.Fprintf(w, "  keep alive: %d\n", keepAlive)
	switch {
	case h.Primaries > 0:
		fmt.Fprintf(w, "  cluster mode: yes (%d primaries)\n", h.Primaries)
		for i, c := range h.Config {
			save := c.Save
			if save == "" {
				save = "NONE"
			}
			fmt.Fprintf(w, "  node [%d] configuration:\n    save: %s\n    appendonly: %s\n", i, save, c.AppendOnly)
		}
	case len(h.Config) == 1:
		fmt.Fprintf(w, "  host configuration \"save\": %s\n", h.Config[0].Save)
		fmt.Fprintf(w, "  host configuration \"appendonly\": %s\n", h.Config[0].AppendOnly)
	}
	if h.Threads > 1 {
		fmt.Fprintf(w, "  multi-thread: yes\n  threads: %d\n", h.Threads)
	} else {
		fmt.Fprintf(w, "  multi-thread: no\n")
	}
	if o.Pipeline > 1 {
		fmt.Fprintf(w, "  pipeline: %d\n", o.Pipeline)
	}
	if o.TCPEngine != "" {
		fmt.Fprintf(w, "  transport: %s (engine %s)\n", o.Transport, o.TCPEngine)
	} else {
		fmt.Fprintf(w, "  transport: %s\n", o.Transport)
	}
	fmt.Fprintf(w, "\nLatency by percentile distribution:\n")
	if r.Hist != nil {
		brackets := r.Hist.CumulativeDistribution()
		for i, b := range brackets {
			last := i == len(brackets)-1
			if !last && i > 0 && brackets[i+1].ValueAt == b.ValueAt {
				continue // print each value once, at its highest percentile
			}
			fmt.Fprintf(w, "%.3f%% <= %.3f milliseconds (cumulative count %d)\n", b.Quantile, float64(b.ValueAt)/1e6, b.Count)
			if b.Count >= r.Hist.TotalCount() {
				break
			}
		}
		fmt.Fprintf(w, "\nCumulative distribution of latencies:\n")
		for _, l := range CumulativeLevels(r.Hist) {
			fmt.Fprintf(w, "%.3f%% <= %.3f milliseconds (cumulative count %d)\n", l.Percent, float64(l.ValueNs)/1e6, l.Count)
		}
	}
	fmt.Fprintf(w, "\nSummary:\n")
	fmt.Fprintf(w, "  throughput summary: %.2f requests per second\n", r.RPS)
	fmt.Fprintf(w, "  latency summary (msec):\n")
	fmt.Fprintf(w, "    %9s %9s %9s %9s %9s %9s\n", "avg", "min", "p50", "p95", "p99", "max")
	fmt.Fprintf(w, "    %9.3f %9.3f %9.3f %9.3f %9.3f %9.3f\n\n", r.AvgMs, r.MinMs, r.P50Ms, r.P95Ms, r.P99Ms, r.MaxMs)
}

// Level is one line of the cumulative distribution: Count latencies,
// Percent of all, are at most ValueNs.
type Level struct {
	ValueNs int64
	Percent float64
	Count   int64
}

// CumulativeLevels is valkey-benchmark's "Cumulative distribution of
// latencies": the share of the latencies at most 0.1 ms, 0.2 ms, and so on
// in steps of 0.1 ms up to 2 ms, then of 1 ms, each level given as the
// highest latency the histogram holds as equal to it (as
// hdr_iter_linear's highest_equivalent_value), a level only where the
// count grew, up to the one that holds every latency.
func CumulativeLevels(h *hdrhistogram.Histogram) []Level {
	total := h.TotalCount()
	if total == 0 {
		return nil
	}
	const fine, coarse, switchAt = int64(100_000), int64(1_000_000), int64(2_000_000)
	bars := h.Distribution()
	var levels []Level
	var count int64
	prev := int64(-1)
	i := 0
	for level, step := fine, fine; ; level += step {
		// The bars up to the level: those whose lowest value is at most
		// it; the last of them holds the level, and its highest value is
		// the level's.
		value := level
		for i < len(bars) && bars[i].From <= level {
			count += bars[i].Count
			value = bars[i].To
			i++
		}
		if count != prev || count == total {
			levels = append(levels, Level{ValueNs: value, Percent: float64(count) / float64(total) * 100, Count: count})
			prev = count
		}
		if count >= total || i == len(bars) {
			return levels
		}
		if value > switchAt {
			step = coarse
		}
		// Skip the levels no latency reaches: the next bar's.
		if next := bars[i].From; next > level+step {
			level += (next - level - 1) / step * step
		}
	}
}

// WriteQuiet writes one test's line, as -q does.
func WriteQuiet(w io.Writer, r *Result) {
	fmt.Fprintf(w, "%s: %.2f requests per second, p50=%.3f msec\n", r.Test, r.RPS, r.P50Ms)
}

// WriteQuietCompare is -q with --transport both: each test's -q line for
// each transport that ran, the transport after the test's name, as in
// --csv ("SET (rdma)"), then the rdma/tcp ratios when both ran.
func WriteQuietCompare(w io.Writer, rdma, tcp *Outcome) {
	for i := range tcp.Results {
		b := &tcp.Results[i]
		var a *Result
		if rdma != nil {
			for j := range rdma.Results {
				if rdma.Results[j].Test == b.Test {
					a = &rdma.Results[j]
				}
			}
		}
		if a != nil {
			fmt.Fprintf(w, "%s (rdma): %.2f requests per second, p50=%.3f msec\n", a.Test, a.RPS, a.P50Ms)
		}
		fmt.Fprintf(w, "%s (tcp): %.2f requests per second, p50=%.3f msec\n", b.Test, b.RPS, b.P50Ms)
		if a != nil {
			fmt.Fprintf(w, "%s rdma/tcp: %s requests per second, %s p50\n", b.Test,
				f3(ratio(a.rps(), b.rps())), f3(ratio(a.latencyNs(50), b.latencyNs(50))))
		}
	}
}

// CSVRecord is one test's --csv row; suffix is added to the test's name.
func CSVRecord(r *Result, suffix string) []string {
	return []string{r.Test + suffix, f2(r.RPS), f3(r.AvgMs), f3(r.MinMs), f3(r.P50Ms), f3(r.P95Ms), f3(r.P99Ms), f3(r.MaxMs)}
}

// WriteCSV writes the header and a row per test of every outcome; with
// more than one outcome the test names carry the transport: "SET (rdma)".
// valkey-benchmark quotes every field; so does this. It returns the
// writer's error.
func WriteCSV(w io.Writer, outs ...*Outcome) error {
	return writeCSV(w, true, outs)
}

// WriteCSVRows is WriteCSV without the header, for -l's loops after the
// first.
func WriteCSVRows(w io.Writer, outs ...*Outcome) error {
	return writeCSV(w, false, outs)
}

func writeCSV(w io.Writer, header bool, outs []*Outcome) error {
	var rows [][]string
	if header {
		rows = append(rows, CSVHeader)
	}
	for _, o := range outs {
		suffix := ""
		if len(outs) > 1 {
			suffix = " (" + string(o.Transport) + ")"
		}
		for i := range o.Results {
			rows = append(rows, CSVRecord(&o.Results[i], suffix))
		}
	}
	var b bytes.Buffer
	for _, row := range rows {
		for i, f := range row {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(strconv.Quote(f))
		}
		b.WriteString("\n")
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Report is --json's document.
type Report struct {
	Server string     `json:"server"` // "embedded" or host:port
	Runs   []*Outcome `json:"runs"`
	// Unavailable says why a transport asked for could not run (--transport
	// both without RDMA), by transport.
	Unavailable map[string]string `json:"unavailable,omitempty"`
	// Ratios are rdma/tcp per test, with --transport both.
	Ratios []Ratio `json:"ratios,omitempty"`
	// Seed is the random keys' seed (--seed, or the one drawn from the
	// time), so that a run can be repeated with the same keys.
	Seed int64 `json:"seed"`
	// KeepAlive is false with -k 0.
	KeepAlive bool `json:"keep_alive"`
	// Primaries are the cluster's, host:port, with --cluster.
	Primaries []string `json:"cluster_primaries,omitempty"`
}

// Ratio compares a test over RDMA with the same test over TCP: requests per
// second and latencies of RDMA divided by those of TCP, from the unrounded
// figures, rounded to 3 decimals.
type Ratio struct {
	Test string  `json:"test"`
	RPS  float64 `json:"rps_ratio"`
	P50  float64 `json:"p50_ratio"`
	P99  float64 `json:"p99_ratio"`
}

// Ratios pairs each test of rdma with the same test of tcp.
func Ratios(rdma, tcp *Outcome) []Ratio {
	var out []Ratio
	for _, a := range rdma.Results {
		for _, b := range tcp.Results {
			if a.Test == b.Test {
				out = append(out, Ratio{a.Test, ratio(a.rps(), b.rps()), ratio(a.latencyNs(50), b.latencyNs(50)), ratio(a.latencyNs(99), b.latencyNs(99))})
			}
		}
	}
	return out
}

// rps is r's requests per second, unrounded when r has its duration.
func (r *Result) rps() float64 {
	if r.Seconds > 0 {
		return float64(r.Requests) / r.Seconds
	}
	return r.RPS
}

// latencyNs is r's latency at percentile q (50 or 99) in nanoseconds, from
// its histogram when it has one, else from the rounded milliseconds.
func (r *Result) latencyNs(q float64) float64 {
	if r.Hist != nil && r.Hist.TotalCount() > 0 {
		return float64(r.Hist.ValueAtQuantile(q))
	}
	ms := r.P50Ms
	if q == 99 {
		ms = r.P99Ms
	}
	return ms * 1e6
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(a/b*1000) / 1000
}

// WriteJSON writes rep, indented.
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteCompare writes --transport both's table: each test over RDMA and
// over TCP side by side, with the ratios rdma/tcp; latencies in µs with
// two decimals, since RDMA's are a few µs. rdma may be nil (it could not
// run); its columns then say n/a.
func WriteCompare(w io.Writer, rdma, tcp *Outcome) {
	us := func(r *Result, q float64) string { return f2(r.latencyNs(q) / 1e3) }
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "test\trdma rps\ttcp rps\trps rdma/tcp\trdma p50 µs\ttcp p50 µs\tp50 rdma/tcp\trdma p99 µs\ttcp p99 µs\tp99 rdma/tcp\t")
	for i := range tcp.Results {
		b := &tcp.Results[i]
		row := []string{b.Test, "n/a", f2(b.RPS), "n/a", "n/a", us(b, 50), "n/a", "n/a", us(b, 99), "n/a"}
		if rdma != nil {
			for j := range rdma.Results {
				if a := &rdma.Results[j]; a.Test == b.Test {
					row = []string{b.Test, f2(a.RPS), f2(b.RPS), f3(ratio(a.rps(), b.rps())),
						us(a, 50), us(b, 50), f3(ratio(a.latencyNs(50), b.latencyNs(50))),
						us(a, 99), us(b, 99), f3(ratio(a.latencyNs(99), b.latencyNs(99)))}
				}
			}
		}
		for _, f := range row {
			fmt.Fprint(tw, f, "\t")
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}
