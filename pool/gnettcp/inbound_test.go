package gnettcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/pool"
)

// TestTCPInboundBounded: a peer sends 256 MiB to a connection nobody
// reads. On pool.TCPNetpoll the kernel's window stops it after a few
// MiB; on Engine, whose event loop reads whatever arrives, the
// connection leaves the loop once tcpMoveAt is unread (moveOff) and the
// kernel's window stops the peer as well. Either way the process does not
// hold the 256 MiB; then Read returns every byte the peer sent, in order,
// and io.EOF, and nothing is left open.
func TestTCPInboundBounded(t *testing.T) {
	const total = 256 << 20
	for _, eng := range []pool.TCPEngine{pool.TCPNetpoll, Engine} {
		t.Run(eng.String(), func(t *testing.T) {
			testutil.LeakCheck(t, true)
			var sent atomic.Int64
			done := make(chan struct{})
			s := testutil.NewServer(t, func(c net.Conn) {
				defer close(done)
				defer c.Close()
				chunk := make([]byte, 1<<20)
				for off := int64(0); off < total; {
					tcpPattern(chunk, off)
					n, err := c.Write(chunk)
					off += int64(n)
					sent.Store(off)
					if err != nil {
						return
					}
				}
			})
			runtime.GC()
			rss0 := vmRSS(t)
			var m0 runtime.MemStats
			runtime.ReadMemStats(&m0)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c, err := eng.DialTCP(ctx, s.Addr(), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			tcpWaitStill(t, &sent, done)
			rss1 := vmRSS(t)
			runtime.GC() // the heap's live bytes, not the garbage of a growing buffer
			var m1 runtime.MemStats
			runtime.ReadMemStats(&m1)
			grew := int64(m1.HeapInuse) - int64(m0.HeapInuse)
			t.Logf("%s: peer sent %d MiB; live heap grew %d MiB; RSS %d -> %d MiB", eng, sent.Load()>>20, grew>>20, rss0>>20, rss1>>20)
			if grew > 4*tcpMoveAt {
				t.Errorf("the heap grew by %d MiB", grew>>20)
			}
			if sent.Load() > 64<<20 {
				t.Errorf("the peer sent %d MiB to a connection nobody reads", sent.Load()>>20)
			}
			if tc, ok := c.(*Conn); ok {
				if e := tc.Engine(); e != pool.TCPNetpoll {
					t.Errorf("the gnet connection's engine is %v after %d MiB unread, want netpoll", e, sent.Load()>>20)
				}
			}
			if n, err := tcpReadPattern(c); err != nil || n != total {
				t.Errorf("read %d bytes, then %v; want %d, then io.EOF", n, err, total)
			}
			if c.(pool.HealthChecker).Healthy() {
				t.Error("a connection whose peer has closed is healthy")
			}
		})
	}
}

// TestTCPInboundLimit: a gnet connection that cannot leave the event loop
// (tcpConfig.noMoves) is closed once more than tcpMaxInbound is unread: Read
// returns what was buffered, then ErrInboundLimit, and the process does not
// hold the 256 MiB the peer sends.
func TestTCPInboundLimit(t *testing.T) {
	tcpTest.noMoves = true
	defer func() { tcpTest = tcpConfig{} }()
	const total = 256 << 20
	var sent atomic.Int64
	done := make(chan struct{})
	s := testutil.NewServer(t, func(c net.Conn) {
		defer close(done)
		defer c.Close()
		chunk := make([]byte, 1<<20)
		for sent.Load() < total {
			n, err := c.Write(chunk)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	runtime.GC()
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c := tcpDial(t, s.Addr())
	tcpWaitStill(t, &sent, done)
	runtime.GC()
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	if grew := int64(m1.HeapInuse) - int64(m0.HeapInuse); grew > tcpMaxInbound+tcpMaxInbound/2 {
		t.Errorf("the heap grew by %d MiB", grew>>20)
	}
	if e := c.Engine(); e != Engine {
		t.Errorf("engine %v with moves off, want gnet", e)
	}
	n, err := io.Copy(io.Discard, c)
	if !errors.Is(err, ErrInboundLimit) || n < tcpMaxInbound-(1<<20) || n > tcpMaxInbound {
		t.Errorf("read %d MiB, then %v; want about %d MiB, then ErrInboundLimit", n>>20, err, tcpMaxInbound>>20)
	}
}

// TestTCPMoveConcurrent: a gnet connection leaves the event loop while
// Writes, deadline changes and, later, Reads run on it: every byte each way
// arrives in order, a deadline set before the move holds after it, and
// Close ends it all with nothing left open. Meant for -race.
func TestTCPMoveConcurrent(t *testing.T) {
	tcpBothWriteModes(t, testTCPMoveConcurrent)
}

func testTCPMoveConcurrent(t *testing.T) {
	testutil.LeakCheck(t, true)
	const down, up = 64 << 20, 16 << 20
	srvErr := make(chan error, 1)
	s := testutil.NewServer(t, func(c net.Conn) {
		defer c.Close()
		werr := make(chan error, 1)
		go func() {
			chunk := make([]byte, 256<<10)
			for off := int64(0); off < down; off += int64(len(chunk)) {
				tcpPattern(chunk, off)
				if _, err := c.Write(chunk); err != nil {
					werr <- err
					return
				}
			}
			werr <- nil
		}()
		n, err := tcpReadPattern(c) // until our side closes its writes... or the test's Close
		if err == nil && n != up {
			err = fmt.Errorf("server read %d bytes, want %d", n, up)
		}
		if e := <-werr; err == nil {
			err = e
		}
		srvErr <- err
	})
	c := tcpDial(t, s.Addr())
	t0 := time.Now()
	var wg sync.WaitGroup
	werr := make(chan error, 1)
	wg.Add(2)
	go func() { // the writer: small writes, as a client's commands
		defer wg.Done()
		chunk := make([]byte, 4<<10)
		for off := int64(0); off < up; off += int64(len(chunk)) {
			tcpPattern(chunk, off)
			if _, err := c.Write(chunk); err != nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}()
	stop := make(chan struct{})
	go func() { // deadlines changing meanwhile, far in the future
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			_ = c.SetWriteDeadline(time.Now().Add(time.Minute))
			_ = c.SetReadDeadline(time.Now().Add(time.Minute))
			time.Sleep(100 * time.Microsecond)
		}
	}()
	// Let the inbound pile up before anyone reads, so that it moves.
	for deadline := time.Now().Add(60 * time.Second); c.Engine() != pool.TCPNetpoll; {
		if time.Now().After(deadline) {
			t.Fatal("the connection did not leave the event loop")
		}
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	t.Logf("moved after %v", time.Since(t0))
	// Two readers take turns (rmu: each Read and its check together) until
	// everything has come; then a deadline in the past lets the one left
	// waiting go.
	got := make(chan error, 2)
	var rmu sync.Mutex
	var next int64 // guarded by rmu
	for range 2 {
		go func() {
			buf := make([]byte, 32<<10)
			want := make([]byte, len(buf))
			for {
				rmu.Lock()
				if next >= down {
					rmu.Unlock()
					got <- nil
					return
				}
				n, err := c.Read(buf)
				tcpPattern(want[:n], next)
				if !bytes.Equal(buf[:n], want[:n]) {
					rmu.Unlock()
					got <- fmt.Errorf("bytes %d-%d differ", next, next+int64(n))
					return
				}
				next += int64(n)
				rmu.Unlock()
				if err != nil {
					got <- err
					return
				}
			}
		}()
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatal(err)
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	// A deadline set on the moved connection holds.
	if err := c.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read past the deadline: %v, want a timeout", err)
	}
	// As the pool does before it looks (a socket's expired deadline fails
	// the look, as on pool.TCPNetpoll).
	if err := c.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if !c.Healthy() {
		t.Error("a moved connection, open and read to the end, is not healthy")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read after Close: %v, want net.ErrClosed", err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after Close: %v, want net.ErrClosed", err)
	}
	if err := <-srvErr; err != nil {
		t.Fatal(err)
	}
}

// tcpPattern fills b with the stream's bytes from offset off on: random
// bytes with a period (tcpPatternPeriod) that no chunk size divides, so a
// byte moved, lost or doubled shows. Copies, not a computation per byte:
// the race detector's tests move 256 MiB through it.
func tcpPattern(b []byte, off int64) {
	for i := 0; i < len(b); {
		i += copy(b[i:], tcpPatternTable[(off+int64(i))%tcpPatternPeriod:])
	}
}

const tcpPatternPeriod = 1<<20 + 7

var tcpPatternTable = func() []byte {
	b := make([]byte, tcpPatternPeriod)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}()

// tcpReadPattern reads c to its end, checking each byte against
// tcpPattern, and returns how many it read; io.EOF is the nil error.
func tcpReadPattern(c io.Reader) (int64, error) {
	buf := make([]byte, 256<<10)
	want := make([]byte, len(buf))
	var off int64
	for {
		n, err := c.Read(buf)
		tcpPattern(want[:n], off)
		if !bytes.Equal(buf[:n], want[:n]) {
			return off, fmt.Errorf("bytes %d-%d differ", off, off+int64(n))
		}
		off += int64(n)
		if err == io.EOF {
			return off, nil
		}
		if err != nil {
			return off, err
		}
	}
}

// tcpWaitStill waits until the peer has finished sending (done) or has sent
// nothing for a second (the kernel's window is full). A slow machine, the
// VM under emulation, may take many seconds to send 64 MiB.
func tcpWaitStill(t *testing.T, sent *atomic.Int64, done chan struct{}) {
	t.Helper()
	for last, still, deadline := int64(-1), 0, time.Now().Add(60*time.Second); ; {
		select {
		case <-done:
			return
		case <-time.After(100 * time.Millisecond):
			if n := sent.Load(); n != last {
				last, still = n, 0
				if time.Now().Before(deadline) {
					continue
				}
				t.Fatalf("the peer was still sending after 60 s (%d MiB)", n>>20)
			}
			if still++; still >= 10 {
				return
			}
		}
	}
}

// vmRSS is the process's resident set, in bytes, or 0 where /proc has none.
func vmRSS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmRSS:" {
			var kb int64
			for _, d := range f[1] {
				kb = kb*10 + int64(d-'0')
			}
			return kb << 10
		}
	}
	return 0
}

// TestTCPMoveAfterWrite: a move due while a Write is under way (wmu held)
// waits; the peer then sends nothing more, and the Write's end has the
// event loop try again, which moves the connection.
func TestTCPMoveAfterWrite(t *testing.T) {
	testutil.LeakCheck(t, true)
	const total = 2 * tcpMoveAt
	sent := make(chan struct{})
	s := testutil.NewServer(t, func(c net.Conn) {
		defer c.Close()
		b := make([]byte, total)
		tcpPattern(b, 0)
		if _, err := c.Write(b); err != nil {
			return
		}
		close(sent)
		_, _ = io.Copy(io.Discard, c) // until the client closes
	})
	c := tcpDial(t, s.Addr())
	c.wmu.Lock() // as a Write under way
	<-sent
	// Everything the peer sent has reached our buffer, with a move due
	// and refused each time.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		n := 0
		if c.in != nil {
			n = len(c.in.B) - c.off
		}
		c.mu.Unlock()
		if n == total && c.movePending.Load() {
			break
		}
		if time.Now().After(deadline) {
			c.wmu.Unlock()
			t.Fatalf("%d of %d bytes buffered, move pending %v", n, total, c.movePending.Load())
		}
	}
	if e := c.Engine(); e != Engine {
		t.Fatalf("engine %v while a Write holds wmu, want gnet", e)
	}
	c.writeDone() // the Write ends
	for deadline := time.Now().Add(30 * time.Second); c.Engine() != pool.TCPNetpoll; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the end of the Write did not move the connection")
		}
	}
	if _, err := c.Write([]byte("after the move")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, total)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	want := make([]byte, total)
	tcpPattern(want, 0)
	if !bytes.Equal(got, want) {
		t.Error("bytes read after the move differ from those sent")
	}
}
