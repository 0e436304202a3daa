// Package testutil holds what rdmapool's tests share: building C fixtures and
// deciding whether a missing prerequisite skips a test or fails it.
package testutil

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// InVM reports whether the tests run inside the project's soft-RoCE VM
// (vm/run.sh sets RDMAPOOL_VM=1 there).
func InVM() bool { return isTrue(os.Getenv("RDMAPOOL_VM")) }

// Strict reports whether a missing host prerequisite (a C compiler, headers,
// a server) must fail a test instead of skipping it: in CI (CI=true) or when
// RDMAPOOL_STRICT=1 asks for it.
func Strict() bool { return isTrue(os.Getenv("CI")) || isTrue(os.Getenv("RDMAPOOL_STRICT")) }

func isTrue(v string) bool {
	switch strings.ToLower(v) {
	case "1", "true", "yes":
		return true
	}
	return false
}

// Require stops the test when ok is false. It is for prerequisites of tests
// that run on the host: it fails with why when Strict, and skips with why when
// run by hand or inside the VM (where such tests are not the point: the VM
// has no compiler and no servers, and the host run covers them).
func Require(tb testing.TB, ok bool, why string) {
	tb.Helper()
	if ok {
		return
	}
	if InVM() {
		tb.Skipf("skipped inside the RDMA VM, runs on the host: %s", why)
	}
	if Strict() {
		tb.Fatalf("required for this test but missing: %s", why)
	}
	tb.Skipf("skipped: %s (set RDMAPOOL_STRICT=1 to make this a failure)", why)
}

// CC returns the C compiler to use for fixtures ($CC, else cc or gcc), or
// stops the test through Require.
func CC(tb testing.TB) string {
	tb.Helper()
	for _, c := range []string{os.Getenv("CC"), "cc", "gcc"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	Require(tb, false, "no C compiler (cc or gcc) to build the test's C fixtures; install gcc")
	return ""
}

// BuildSharedLib compiles the C files srcs into a shared object named name in
// a temporary directory and returns its path.
func BuildSharedLib(tb testing.TB, name string, srcs ...string) string {
	tb.Helper()
	cc := CC(tb)
	out := filepath.Join(tb.TempDir(), name)
	args := append([]string{"-shared", "-fPIC", "-O2", "-o", out}, srcs...)
	cmd := exec.Command(cc, args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building %s from %v: %v\n%s", name, srcs, err, b)
	}
	return out
}

// ReportLatency reports the p50 and p99 of a benchmark's latency samples,
// in µs, as the metrics p50-µs and p99-µs. It sorts samples.
func ReportLatency(b *testing.B, samples []time.Duration) {
	if len(samples) == 0 {
		return
	}
	slices.Sort(samples)
	q := func(p float64) float64 {
		return float64(samples[int(p*float64(len(samples)-1))]) / float64(time.Microsecond)
	}
	b.ReportMetric(q(0.50), "p50-µs")
	b.ReportMetric(q(0.99), "p99-µs")
}

// BenchRoundTrips is the loop of a round-trip benchmark: per op, write req
// to c and read len(resp) bytes of answer into resp (BenchLatency). It also
// reports bytes (req's length); resp holds the last answer when it
// returns, for the caller to check.
func BenchRoundTrips(b *testing.B, c io.ReadWriter, req, resp []byte) {
	b.Helper()
	b.SetBytes(int64(len(req)))
	BenchLatency(b, func() error {
		if _, err := c.Write(req); err != nil {
			return err
		}
		_, err := io.ReadFull(c, resp)
		return err
	})
}

// BenchLatency runs op once per iteration of b and reports allocations,
// the p50 and p99 latency and ops/s; an error from op fails b.
//
// A round trip's latency is taken as perftest takes its own (ib_write_lat,
// ib_send_lat): one clock read per iteration, the sample the time since the
// previous one. That is the loop's whole cost, and one monotonic read
// rather than the three of time.Now before and time.Since after (wall and
// monotonic, then monotonic), which under emulation came to a visible part
// of a 30 µs round trip.
func BenchLatency(b *testing.B, op func() error) {
	b.Helper()
	samples := make([]time.Duration, 0, 1<<20)
	b.ReportAllocs()
	b.ResetTimer()
	base := time.Now()
	var prev time.Duration
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
		now := time.Since(base)
		if len(samples) < cap(samples) {
			samples = append(samples, now-prev)
		}
		prev = now
	}
	b.StopTimer()
	ReportLatency(b, samples)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
