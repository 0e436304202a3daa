package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/qp"
	"github.com/seed54442f1a/rdmapool/server"
)

// scaleRecvBuffer is the receive buffer of both ends in the scaling
// benchmarks: small, so that a thousand connections fit the VM's memory.
const scaleRecvBuffer = 64 << 10

// BenchmarkScaleIdle: one connection's 64-byte round trip while N other
// connections to the same echo process stay open and idle. Besides the
// latency it reports the CPU time of both processes per round trip
// (cpu-µs/op), and per idle connection the file descriptors (fds/conn) of
// this process and the pinned memory of both (pinned-KiB/conn, from VmPin:
// the client's and the server's ends together). Costs
// that grow with idle connections show as the rows part.
//
// RDMAPOOL_SCALE_IDLE, a comma-separated list, replaces the idle counts.
func BenchmarkScaleIdle(b *testing.B) {
	idles := []int{0, 100, 400, 1000}
	if v := os.Getenv("RDMAPOOL_SCALE_IDLE"); v != "" {
		idles = idles[:0]
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 {
				b.Fatalf("RDMAPOOL_SCALE_IDLE=%q: want idle counts like 0,1000", v)
			}
			idles = append(idles, n)
		}
	}
	for _, idle := range idles {
		b.Run(fmt.Sprintf("idle=%d", idle), func(b *testing.B) {
			rdmatest.Require(b)
			b.Setenv(recvEnv, strconv.Itoa(scaleRecvBuffer))
			opts, err := rdmaOptions()
			if err != nil {
				b.Fatal(err)
			}
			addr, pid := startEchoProcess(b, "rdma "+rdmatest.Addr(b).String())
			fds0, pin0 := openFDs(b), pinnedBytes(b, os.Getpid())+pinnedBytes(b, pid)
			opened := time.Now()
			for i := range idle {
				c, err := qp.Dial(dialCtx(b), addr, opts)
				if err != nil {
					b.Fatalf("idle connection %d of %d: %v", i+1, idle, err)
				}
				b.Cleanup(func() { c.Close() })
			}
			fds1, pin1 := openFDs(b), pinnedBytes(b, os.Getpid())+pinnedBytes(b, pid)
			if idle > 0 {
				b.Logf("%d idle connections opened in %v", idle, time.Since(opened).Round(time.Millisecond))
			}
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

// BenchmarkScalePinned: the memory pinned per connection with the default
// options, both ends together (this process and the echo process, from
// VmPin), with RDMAPOOL_SCALE_PINNED connections (50) open and idle, each
// after one 64-byte round trip, so that its send staging is registered too.
// The timed loop is that round trip on one of them.
func BenchmarkScalePinned(b *testing.B) {
	rdmatest.Require(b)
	n := 50
	if v := os.Getenv("RDMAPOOL_SCALE_PINNED"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("RDMAPOOL_SCALE_PINNED=%q: want a count of connections", v)
		}
	}
	opts, err := rdmaOptions()
	if err != nil {
		b.Fatal(err)
	}
	addr, pid := startEchoProcess(b, "rdma "+rdmatest.Addr(b).String())
	pin := func() int64 { return pinnedBytes(b, os.Getpid()) + pinnedBytes(b, pid) }
	pin0 := pin()
	req, resp := make([]byte, 64), make([]byte, 64)
	var conns []*qp.Conn
	for i := range n {
		c, err := qp.Dial(dialCtx(b), addr, opts)
		if err != nil {
			b.Fatalf("connection %d of %d: %v", i+1, n, err)
		}
		b.Cleanup(func() { c.Close() })
		if err := echoOnce(c, req); err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
	}
	pin1 := pin()
	testutil.BenchRoundTrips(b, conns[0], req, resp)
	b.ReportMetric(float64(pin1-pin0)/1024/float64(n), "pinned-KiB/conn")
}

// TestScaleManyConns: N client connections to our server, in this process,
// with small buffers and queues (QueueDepth 16) on both ends: all opened
// (scaleDialers at a time), each used (a PING), all closed; then nothing is
// left over: file descriptors, goroutines and the kernel's RDMA objects are
// back where they were. While they are open the process holds no file
// descriptor per connection (the CQs and their channel are per device). N
// is 200, or RDMAPOOL_SCALE_CONNS (scripts/test.sh runs 10000 in the VM).
func TestScaleManyConns(t *testing.T) {
	rdmatest.Require(t)
	n := 200
	if v := os.Getenv("RDMAPOOL_SCALE_CONNS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("RDMAPOOL_SCALE_CONNS=%q: want a count of connections", v)
		}
	}
	// Each end maps 4 regions (command slots, receive buffer, staging and
	// its next size), both ends are in this process, and the kernel's
	// vm.max_map_count (65,530 by default) bounds the maps of a process:
	// in the VM the test raises it, elsewhere it says so, not met as
	// ENOMEM halfway.
	if need := 4*2*n + 20000; mapCount(t) < need {
		if !testutil.InVM() {
			t.Fatalf("%d connection pairs in one process map about %d regions; vm.max_map_count is %d: raise it (sysctl -w vm.max_map_count=%d, as root)", n, need, mapCount(t), need)
		}
		if err := os.WriteFile("/proc/sys/vm/max_map_count", []byte(strconv.Itoa(need)), 0); err != nil {
			t.Fatalf("raising vm.max_map_count to %d for %d connection pairs: %v", need, n, err)
		}
	}
	opts := &qp.Options{RecvBufferSize: 4 << 10, MaxPeerBufferSize: 4 << 10, QueueDepth: 16}
	addr := netip.AddrPortFrom(rdmatest.Addr(t), 0).String()
	ping := func(c *qp.Conn) error {
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
			return err
		}
		got := make([]byte, 7)
		if _, err := io.ReadFull(c, got); err != nil {
			return err
		}
		if string(got) != "+PONG\r\n" {
			return fmt.Errorf("PING answered %q", got)
		}
		return nil
	}
	run := func(n int) (open, used, closed time.Duration, fdsOpen int, resOpen map[string]int) {
		l, err := qp.Listen(addr, opts)
		if err != nil {
			t.Fatal(err)
		}
		srv := server.New(nil)
		served := make(chan struct{})
		go func() {
			srv.Serve(l)
			close(served)
		}()
		defer func() {
			srv.Close()
			<-served
		}()
		start := time.Now()
		conns := make([]*qp.Conn, n)
		defer func() {
			for _, c := range conns {
				if c != nil {
					c.Close()
				}
			}
		}()
		var next atomic.Int64
		var dialers sync.WaitGroup
		errs := make(chan error, scaleDialers)
		for range min(scaleDialers, n) {
			dialers.Go(func() {
				for {
					i := int(next.Add(1) - 1)
					if i >= n {
						return
					}
					ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
					c, err := qp.Dial(ctx, l.Addr().String(), opts)
					cancel()
					if err != nil {
						errs <- fmt.Errorf("connection %d of %d: %w", i+1, n, err)
						next.Store(int64(n)) // the others stop too
						return
					}
					conns[i] = c
					if (i+1)%1000 == 0 {
						t.Logf("%d connections opened in %v", i+1, time.Since(start).Round(time.Millisecond))
					}
				}
			})
		}
		dialers.Wait()
		close(errs)
		if err := <-errs; err != nil {
			// What every goroutine was doing, grouped by stack: where a
			// connect that never completes waits.
			var stacks bytes.Buffer
			pprof.Lookup("goroutine").WriteTo(&stacks, 1)
			t.Fatalf("%v\ngoroutines:\n%s", err, stacks.Bytes())
		}
		open = time.Since(start)
		fdsOpen, resOpen = openFDs(t), rdmatest.Resources(t)
		start = time.Now()
		for i, c := range conns {
			if err := ping(c); err != nil {
				t.Fatalf("connection %d of %d: %v", i+1, n, err)
			}
		}
		used = time.Since(start)
		start = time.Now()
		var wg sync.WaitGroup
		for _, c := range conns {
			wg.Go(func() { c.Close() })
		}
		wg.Wait()
		conns = nil
		closed = time.Since(start)
		return open, used, closed, fdsOpen, resOpen
	}
	// One connection first: what stays for the life of the process
	// (librdmacm's thread and device contexts) is not a leak.
	run(1)
	// File descriptors are compared without eventfds, of which package
	// internal/netpass keeps up to 64 for reuse (a busier run makes more of
	// them); eventfds are checked against that bound.
	waitQuiet := func(fds, goroutines int, res map[string]int) (int, int, map[string]int) {
		deadline := time.Now().Add(60 * time.Second)
		for {
			f, g, r := fdsBesidesEventfds(t), runtime.NumGoroutine(), rdmatest.Resources(t)
			quiet := f <= fds && g <= goroutines
			for _, k := range []string{"pd", "cq", "qp", "mr", "cm_id"} {
				quiet = quiet && r[k] <= res[k]
			}
			if quiet || time.Now().After(deadline) {
				return f, g, r
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	fds0, g0, res0 := waitQuiet(fdsBesidesEventfds(t), runtime.NumGoroutine(), rdmatest.Resources(t))
	all0, ev0 := openFDs(t), eventfds(t)
	open, used, closed, fdsOpen, resOpen := run(n)
	fds1, g1, _ := waitQuiet(fds0, g0, res0)
	if ev1 := eventfds(t); ev1 > ev0+64 {
		t.Errorf("eventfds: %d before, %d after: more than package netpass keeps", ev0, ev1)
	}
	t.Logf("%d connections: opened in %v (%.1f ms each, %d at a time), each used in %v, closed in %v; %.2f fds per connection pair while open; RDMA objects while open: %v",
		n, open.Round(time.Millisecond), float64(open.Microseconds())/1000/float64(n), min(scaleDialers, n), used.Round(time.Millisecond),
		closed.Round(time.Millisecond), float64(fdsOpen-all0)/float64(n), resOpen)
	if fds1 > fds0 {
		t.Errorf("file descriptors: %d before, %d after", fds0, fds1)
	}
	if grew := fdsOpen - all0; grew > 16 {
		t.Errorf("file descriptors: %d more while %d connection pairs were open; want a few per device, none per connection", grew, n)
	}
	if g1 > g0 {
		t.Errorf("goroutines: %d before, %d after", g0, g1)
	}
	rdmatest.CheckNoLeaks(t, res0)
}

// mapCount is the kernel's vm.max_map_count.
func mapCount(t *testing.T) int {
	b, err := os.ReadFile("/proc/sys/vm/max_map_count")
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// scaleDialers is how many Dials TestScaleManyConns has in flight.
const scaleDialers = 8

// BenchmarkScaleSetup: a connection's setup as a client sees it, Dial to an
// echo process through the first echoed byte, then Close; ms/op is the
// whole, dial-ms/op the Dial (rdma_cm's steps, the resources, the
// receives posted, up to ESTABLISHED and our RegisterXferMemory sent),
// echo-ms/op the first byte's round trip (which waits for the peer's
// RegisterXferMemory), close-ms/op the Close. dial-ms/op is the figure to
// hold beside cmtime's connect steps in the same boot (vm/bench.sh).
// buffer=default is a connection with the default options, buffer=64KiB
// one with small receive buffers on both ends, and depth=16 that with
// queues of 16 work requests (Options.QueueDepth) as well.
func BenchmarkScaleSetup(b *testing.B) {
	for _, cs := range []struct {
		name  string
		size  int
		depth int
	}{{"buffer=default", 0, 0}, {"buffer=64KiB", scaleRecvBuffer, 0}, {"buffer=64KiB/depth=16", scaleRecvBuffer, 16}} {
		b.Run(cs.name, func(b *testing.B) {
			rdmatest.Require(b)
			if cs.size > 0 {
				b.Setenv(recvEnv, strconv.Itoa(cs.size))
			}
			if cs.depth > 0 {
				b.Setenv(depthEnv, strconv.Itoa(cs.depth))
			}
			opts, err := rdmaOptions()
			if err != nil {
				b.Fatal(err)
			}
			addr := startEcho(b, "rdma "+rdmatest.Addr(b).String())
			one := []byte{1}
			b.ReportAllocs()
			var dial, echo, closing time.Duration
			start := time.Now()
			for b.Loop() {
				t0 := time.Now()
				c, err := qp.Dial(dialCtx(b), addr, opts)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if err := echoOnce(c, one); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				c.Close()
				dial, echo, closing = dial+t1.Sub(t0), echo+t2.Sub(t1), closing+time.Since(t2)
			}
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(ms(time.Since(start)), "ms/op")
			b.ReportMetric(ms(dial), "dial-ms/op")
			b.ReportMetric(ms(echo), "echo-ms/op")
			b.ReportMetric(ms(closing), "close-ms/op")
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
// eventfds returns how many of this process's file descriptors are
// eventfds.
func eventfds(tb testing.TB) int { return openFDs(tb) - fdsBesidesEventfds(tb) }

// fdsBesidesEventfds returns how many file descriptors this process has
// open that are not eventfds.
func fdsBesidesEventfds(tb testing.TB) int {
	tb.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && l == "anon_inode:[eventfd]" {
			continue
		}
		n++
	}
	return n
}

func openFDs(tb testing.TB) int {
	tb.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatal(err)
	}
	return len(ents)
}

// pinnedBytes is process pid's pinned memory (VmPin: pages that
// ibv_reg_mr holds), in bytes.
func pinnedBytes(tb testing.TB, pid int) int64 {
	tb.Helper()
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
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
