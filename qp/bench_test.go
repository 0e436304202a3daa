package qp_test

import (
	"fmt"
	"io"
	"net"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/cq"
	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/qp"
)

// benchPair is a connected pair with an echo server, for benchmarks.
func benchPair(b *testing.B, opts *qp.Options) (cli *qp.Conn, cleanup func()) {
	b.Helper()
	rdmatest.Require(b)
	addr := rdmatest.Addr(b)
	l, err := qp.Listen(fmt.Sprintf("%s:0", addr), opts)
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		buf := make([]byte, 64<<10)
		io.CopyBuffer(c, c, buf)
		c.Close()
	}()
	cli, err = qp.Dial(b.Context(), l.Addr().String(), opts)
	if err != nil {
		l.Close()
		b.Fatal(err)
	}
	return cli, func() { cli.Close(); l.Close() }
}

// BenchmarkRoundTrip: write a message, read the echo; one round trip per
// op, with p50 and p99 latency.
func BenchmarkRoundTrip(b *testing.B) {
	for _, size := range []int{64, 4 << 10} {
		for _, spin := range spinModes {
			b.Run(fmt.Sprintf("size=%d/spin=%s", size, spin.name), func(b *testing.B) {
				benchRoundTrip(b, size, &qp.Options{SpinWait: spin.wait, ReactorOptions: cq.Options{NoBusyPoll: spin.park}})
			})
		}
	}
}

// spinModes compare waiting readers and writers that park at once with
// ones that poll the CQ themselves first.
var spinModes = []struct {
	name string
	wait time.Duration
	park bool // the reactor sleeps as soon as it finds nothing
}{{"default", 0, false}, {"off", -1, false}, {"50us", 50 * time.Microsecond, false}, {"1ms-parkreactor", time.Millisecond, true}}

func benchRoundTrip(b *testing.B, size int, opts *qp.Options) {
	cli, done := benchPair(b, opts)
	defer done()
	testutil.BenchRoundTrips(b, cli, make([]byte, size), make([]byte, size))
}

// BenchmarkPipelined: one goroutine writes 64-byte messages without
// waiting, another reads the echoes; throughput in ops/s.
func BenchmarkPipelined(b *testing.B) {
	const size = 64
	cli, done := benchPair(b, nil)
	defer done()
	b.ReportAllocs()
	b.SetBytes(size)
	b.ResetTimer()
	start := time.Now()
	errc := make(chan error, 1)
	go func() {
		msg := make([]byte, size)
		for range b.N {
			if _, err := cli.Write(msg); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	if _, err := io.CopyN(io.Discard, cli, int64(b.N)*size); err != nil {
		b.Fatal(err)
	}
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "ops/s")
}

// BenchmarkZeroCopyRoundTrip is BenchmarkRoundTrip/size=64 through
// Reserve/Commit and Lease/Release: no copy on the client's side.
func BenchmarkZeroCopyRoundTrip(b *testing.B) {
	const size = 64
	cli, done := benchPair(b, nil)
	defer done()
	samples := make([]time.Duration, 0, 1<<20)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		buf, err := cli.Reserve(size)
		if err != nil {
			b.Fatal(err)
		}
		buf[0] = 1
		if err := cli.Commit(len(buf)); err != nil {
			b.Fatal(err)
		}
		for n := 0; n < size; {
			got, err := cli.Lease()
			if err != nil {
				b.Fatal(err)
			}
			m := min(len(got), size-n)
			n += m
			cli.Release(m)
		}
		if len(samples) < cap(samples) {
			samples = append(samples, time.Since(start))
		}
	}
	b.StopTimer()
	testutil.ReportLatency(b, samples)
}

// BenchmarkNetpollUnderLoad: a TCP round trip on loopback, through the Go
// netpoller, while another goroutine of the same process runs RDMA round
// trips back to back, with the process's GOMAXPROCS (procs=0) and with 1.
// Busy-polling goroutines must not keep the runtime from polling the
// network (package internal/netpass); before they let it, the TCP round
// trip's p50 was 7-18 ms here against 70-90 µs with RDMA idle.
func BenchmarkNetpollUnderLoad(b *testing.B) {
	for _, procs := range []int{0, 1} {
		b.Run(fmt.Sprintf("procs=%d", procs), func(b *testing.B) {
			if procs > 0 {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
			}
			cli, done := benchPair(b, nil)
			defer done()
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				io.Copy(c, c)
				c.Close()
			}()
			tc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer tc.Close()

			var stop atomic.Bool
			var rdmaOps atomic.Int64
			loop := make(chan error, 1)
			go func() {
				msg := make([]byte, 64)
				for !stop.Load() {
					if _, err := cli.Write(msg); err != nil {
						loop <- err
						return
					}
					if _, err := io.ReadFull(cli, msg); err != nil {
						loop <- err
						return
					}
					rdmaOps.Add(1)
				}
				loop <- nil
			}()
			start, ops0 := time.Now(), rdmaOps.Load()
			testutil.BenchRoundTrips(b, tc, make([]byte, 64), make([]byte, 64))
			b.ReportMetric(float64(rdmaOps.Load()-ops0)/time.Since(start).Seconds(), "rdma-ops/s")
			stop.Store(true)
			if err := <-loop; err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkDial: one connection's life per op, from Dial to both ends
// closed: its rdma_cm exchange, resources, receives posted, and teardown.
func BenchmarkDial(b *testing.B) {
	rdmatest.Require(b)
	l, err := qp.Listen(fmt.Sprintf("%s:0", rdmatest.Addr(b)), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan *qp.Conn)
	go func() {
		for {
			c, err := l.AcceptConn(b.Context())
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	b.ReportAllocs()
	for b.Loop() {
		c, err := qp.Dial(b.Context(), l.Addr().String(), nil)
		if err != nil {
			b.Fatal(err)
		}
		s, ok := <-accepted
		if !ok {
			b.Fatal("the listener ended")
		}
		c.Close()
		s.Close()
	}
}
