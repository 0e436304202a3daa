package bench

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/qp"
)

// scaleRecvBuffer is the receive buffer of both ends in the scaling
// benchmarks: small, so that a thousand connections fit the VM's memory.
const scaleRecvBuffer = 64 << 10

// BenchmarkScaleIdle: one connection's 64-byte round trip while N other
// connections to the same echo process stay open and idle. Besides the
// latency it reports the CPU time of both processes per round trip
// (cpu-µs/op), and per idle connection the file descriptors (fds/conn) and
// the pinned memory (pinned-KiB/conn, from VmPin) of this process. Costs
// that grow with idle connections show as the rows part.
func BenchmarkScaleIdle(b *testing.B) {
	for _, idle := range []int{0, 100, 400} {
		b.Run(fmt.Sprintf("idle=%d", idle), func(b *testing.B) {
			rdmatest.Require(b)
			b.Setenv(recvEnv, strconv.Itoa(scaleRecvBuffer))
			opts, err := rdmaOptions()
			if err != nil {
				b.Fatal(err)
			}
			addr, pid := startEchoProcess(b, "rdma "+rdmatest.Addr(b).String())
			fds0, pin0 := openFDs(b), pinnedBytes(b)
			for i := range idle {
				c, err := qp.Dial(dialCtx(b), addr, opts)
				if err != nil {
					b.Fatalf("idle connection %d of %d: %v", i+1, idle, err)
				}
				b.Cleanup(func() { c.Close() })
			}
			fds1, pin1 := openFDs(b), pinnedBytes(b)
			c, err := qp.Dial(dialCtx(b), addr, opts)
			c = closeLater(b, c, err).(*qp.Conn)
			req, resp := make([]byte, 64), make([]byte, 64)
			cpu0 := cpuTime(b, os.Getpid()) + cpuTime(b, pid)
			testutil.BenchRoundTrips(b, c, req, resp)
			cpu := cpuTime(b, os.Getpid()) + cpuTime(b, pid) - cpu0
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			if idle > 0 {
				b.ReportMetric(float64(fds1-fds0)/float64(idle), "fds/conn")
				b.ReportMetric(float64(pin1-pin0)/1024/float64(idle), "pinned-KiB/conn")
			}
		})
	}
}

// BenchmarkScaleSetup: a connection's setup as a client sees it, Dial to an
// echo process through the first echoed byte, then Close; ms/op is the
// figure to hold beside rping's or ucmatose's connect in the same boot.
// buffer=default is a connection with the default options, buffer=64KiB
// one with small receive buffers on both ends.
func BenchmarkScaleSetup(b *testing.B) {
	for _, buf := range []struct {
		name string
		size int
	}{{"default", 0}, {"64KiB", scaleRecvBuffer}} {
		b.Run("buffer="+buf.name, func(b *testing.B) {
			rdmatest.Require(b)
			if buf.size > 0 {
				b.Setenv(recvEnv, strconv.Itoa(buf.size))
			}
			opts, err := rdmaOptions()
			if err != nil {
				b.Fatal(err)
			}
			addr := startEcho(b, "rdma "+rdmatest.Addr(b).String())
			one := []byte{1}
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				c, err := qp.Dial(dialCtx(b), addr, opts)
				if err != nil {
					b.Fatal(err)
				}
				if err := echoOnce(c, one); err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/op")
		})
	}
}

func echoOnce(c net.Conn, p []byte) error {
	if _, err := c.Write(p); err != nil {
		return err
	}
	got := make([]byte, len(p))
	_, err := c.Read(got)
	return err
}

// openFDs counts this process's open file descriptors.
func openFDs(tb testing.TB) int {
	tb.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatal(err)
	}
	return len(ents)
}

// pinnedBytes is this process's pinned memory (VmPin: pages that
// ibv_reg_mr holds), in bytes.
func pinnedBytes(tb testing.TB) int64 {
	tb.Helper()
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		tb.Fatal(err)
	}
	for line := range bytes.Lines(st) {
		if v, ok := bytes.CutPrefix(line, []byte("VmPin:")); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(v)), " kB"), 10, 64)
			if err != nil {
				tb.Fatalf("VmPin: %q: %v", v, err)
			}
			return kb << 10
		}
	}
	tb.Fatal("no VmPin in /proc/self/status")
	return 0
}

// cpuTime is the user and system time process pid has used.
func cpuTime(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, utime 14, stime 15 (proc(5)).
	i := bytes.LastIndexByte(st, ')')
	f := strings.Fields(string(st[i+1:]))
	if len(f) < 13 {
		tb.Fatalf("/proc/%d/stat: too few fields", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("/proc/%d/stat: %q %q", pid, f[11], f[12])
	}
	tick := time.Second / time.Duration(clockTicks)
	return time.Duration(ut+stime) * tick
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux
// architecture Go supports.
const clockTicks = 100
