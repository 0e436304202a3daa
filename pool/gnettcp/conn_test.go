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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/panjf2000/gnet/v2"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/pool"
)

// tcpTest is the tcpConfig that tcpDial dials with: a test that changes it
// restores the zero value (the engine as it is) when it ends.
var tcpTest tcpConfig

// tcpDial dials addr with tcpTest and closes the connection when the test
// ends.
func tcpDial(t testing.TB, addr string) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := dialTCP(ctx, nil, addr, tcpTest)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// tcpBothWriteModes runs f with Write's direct write(2) on and off (then
// every Write goes through gnet's AsyncWrite).
func tcpBothWriteModes(t *testing.T, f func(t *testing.T)) {
	for _, direct := range []bool{true, false} {
		name := "direct"
		if !direct {
			name = "asyncwrite"
		}
		t.Run(name, func(t *testing.T) {
			tcpTest.asyncWritesOnly = !direct
			defer func() { tcpTest = tcpConfig{} }()
			f(t)
		})
	}
}

func tcpRandom(n int) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(n), byte(n >> 8), byte(n >> 16)})
	r.Read(b)
	return b
}

func tcpIsTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) && errors.As(err, &ne) && ne.Timeout()
}

func TestTCPEcho(t *testing.T) { tcpBothWriteModes(t, testTCPEcho) }

func testTCPEcho(t *testing.T) {
	testutil.LeakCheck(t, true)
	s := testutil.NewServer(t, testutil.Echo)
	c := tcpDial(t, s.Addr())
	if c.Transport() != pool.TCP {
		t.Errorf("Transport() = %q", c.Transport())
	}
	if got, want := c.RemoteAddr().String(), s.Addr(); got != want {
		t.Errorf("RemoteAddr() = %s, want %s", got, want)
	}
	if la, ok := c.LocalAddr().(*net.TCPAddr); !ok || !la.IP.Equal(net.IPv4(127, 0, 0, 1)) || la.Port == 0 {
		t.Errorf("LocalAddr() = %v", c.LocalAddr())
	}
	for _, size := range []int{1, 2, 63, 64, 1000, 4096, 65535, 65536, 65537, 300 << 10, 1 << 20, 8 << 20} {
		msg := tcpRandom(size)
		errc := make(chan error, 1)
		go func() {
			n, err := c.Write(msg)
			if err == nil && n != len(msg) {
				err = fmt.Errorf("short write: %d of %d", n, len(msg))
			}
			errc <- err
		}()
		got := make([]byte, size)
		if _, err := io.ReadFull(c, got); err != nil {
			t.Fatalf("size %d: read: %v", size, err)
		}
		if err := <-errc; err != nil {
			t.Fatalf("size %d: write: %v", size, err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("size %d: echo differs", size)
		}
	}
}

// TestTCPBothWays sends a stream each way at once; neither side reads
// before it has written everything, so both rely on the other reading
// concurrently.
func TestTCPBothWays(t *testing.T) { tcpBothWriteModes(t, testTCPBothWays) }

func testTCPBothWays(t *testing.T) {
	testutil.LeakCheck(t, false)
	const size = 16 << 20
	up, down := tcpRandom(size), tcpRandom(size + 1)[1:]
	srvErr := make(chan error, 1)
	s := testutil.NewServer(t, func(c net.Conn) {
		defer c.Close()
		werr := make(chan error, 1)
		go func() { _, err := c.Write(down); werr <- err }()
		got := make([]byte, size)
		_, err := io.ReadFull(c, got)
		if err == nil && !bytes.Equal(got, up) {
			err = errors.New("server received other bytes")
		}
		if e := <-werr; err == nil {
			err = e
		}
		srvErr <- err
	})
	c := tcpDial(t, s.Addr())
	werr := make(chan error, 1)
	go func() { _, err := c.Write(up); werr <- err }()
	got := make([]byte, size)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, down) {
		t.Error("client received other bytes")
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	if err := <-srvErr; err != nil {
		t.Fatal(err)
	}
}

// TestTCPConcurrentWrites: Writes from several goroutines reach the peer
// whole, never interleaved.
func TestTCPConcurrentWrites(t *testing.T) { tcpBothWriteModes(t, testTCPConcurrentWrites) }

func testTCPConcurrentWrites(t *testing.T) {
	testutil.LeakCheck(t, false)
	s := testutil.NewServer(t, testutil.Echo)
	c := tcpDial(t, s.Addr())
	const writers, msgs, size = 8, 50, 100 << 10 // larger than a write chunk
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			msg := bytes.Repeat([]byte{byte(w)}, size)
			for range msgs {
				if _, err := c.Write(msg); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	buf := make([]byte, size)
	count := make([]int, writers)
	for range writers * msgs {
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		w := buf[0]
		if int(w) >= writers || !bytes.Equal(buf, bytes.Repeat([]byte{w}, size)) {
			t.Fatal("messages interleaved")
		}
		count[w]++
	}
	wg.Wait()
	for w, n := range count {
		if n != msgs {
			t.Errorf("writer %d: %d messages, want %d", w, n, msgs)
		}
	}
}

func TestTCPReadDeadline(t *testing.T) { testTCPReadDeadline(t) }

func testTCPReadDeadline(t *testing.T) {
	testutil.LeakCheck(t, false)
	s := testutil.NewServer(t, testutil.Echo)
	c := tcpDial(t, s.Addr())
	buf := make([]byte, 16)

	// Nothing arrives: the Read waits for the deadline, then times out.
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	start := time.Now()
	if _, err := c.Read(buf); !tcpIsTimeout(err) {
		t.Fatalf("Read = %v, want a timeout", err)
	}
	if d := time.Since(start); d < 90*time.Millisecond {
		t.Errorf("timed out after %v, before the deadline (100ms)", d)
	}
	// A deadline in the past fails at once; one that passes while a Read
	// waits, set by SetDeadline, wakes it.
	c.SetReadDeadline(time.Unix(1, 0))
	if _, err := c.Read(buf); !tcpIsTimeout(err) {
		t.Fatalf("Read with a past deadline = %v, want a timeout", err)
	}
	c.SetDeadline(time.Time{})
	errc := make(chan error, 1)
	go func() { _, err := c.Read(buf); errc <- err }()
	time.Sleep(50 * time.Millisecond)
	c.SetDeadline(time.Now().Add(10 * time.Millisecond))
	select {
	case err := <-errc:
		if !tcpIsTimeout(err) {
			t.Fatalf("Read = %v, want a timeout", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a deadline set during a Read did not wake it")
	}

	// The connection still works once the deadline is lifted. As on a
	// net.TCPConn, a passed deadline fails a Read even with data waiting,
	// and the data stays for the next Read.
	c.SetDeadline(time.Time{})
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c, buf[:4]); err != nil || string(buf[:4]) != "ping" {
		t.Fatalf("echo after a timeout: %q, %v", buf[:4], err)
	}
	if _, err := c.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	c.SetReadDeadline(time.Unix(1, 0))
	if n, err := c.Read(buf); !tcpIsTimeout(err) || n != 0 {
		t.Fatalf("Read of arrived data after the deadline: %q, %v; want a timeout", buf[:n], err)
	}
	c.SetReadDeadline(time.Time{})
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "pong" {
		t.Fatalf("Read once the deadline is lifted: %q, %v", buf[:n], err)
	}
}

// TestTCPWriteDeadline writes to a server that reads nothing until the
// socket buffers fill, then lets it read: the bytes Write reported, and
// only those, arrive.
func TestTCPWriteDeadline(t *testing.T) { tcpBothWriteModes(t, testTCPWriteDeadline) }

func testTCPWriteDeadline(t *testing.T) {
	testutil.LeakCheck(t, false)
	startReading := make(chan struct{})
	received := make(chan int64, 1)
	s := testutil.NewServer(t, func(c net.Conn) {
		defer c.Close()
		<-startReading
		n, _ := io.Copy(io.Discard, c)
		received <- n
	})
	c := tcpDial(t, s.Addr())

	chunk := make([]byte, 1<<20)
	var sent int64
	c.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
	start := time.Now()
	var err error
	for time.Since(start) < 20*time.Second {
		var n int
		n, err = c.Write(chunk)
		sent += int64(n)
		if err != nil {
			break
		}
	}
	if !tcpIsTimeout(err) {
		t.Fatalf("Write = %v, want a timeout", err)
	}
	if sent > 256<<20 {
		t.Errorf("%d MiB written into a peer that does not read: buffering without bound?", sent>>20)
	}
	t.Logf("%d KiB accepted before the timeout", sent>>10)

	// The deadline has passed: a Write that would wait fails at once
	// (the peer reads nothing until startReading: one that waited would
	// wait for ever, and the test's own timeout would tell).
	n, err := c.Write(chunk)
	sent += int64(n)
	if !tcpIsTimeout(err) {
		t.Fatalf("Write after the deadline = %v, want a timeout", err)
	}

	// Lift the deadline, let the server read, finish.
	c.SetWriteDeadline(time.Time{})
	close(startReading)
	n, err = c.Write([]byte("end"))
	sent += int64(n)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case got := <-received:
		if got != sent {
			t.Errorf("server received %d bytes, Write reported %d", got, sent)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not see the end")
	}
}

func TestTCPCloseUnblocks(t *testing.T) { tcpBothWriteModes(t, testTCPCloseUnblocks) }

func testTCPCloseUnblocks(t *testing.T) {
	testutil.LeakCheck(t, true)
	hold := make(chan struct{})
	s := testutil.NewServer(t, func(c net.Conn) { // reads and writes nothing
		defer c.Close()
		<-hold
	})
	defer close(hold)
	c := tcpDial(t, s.Addr())
	rerr, werr := make(chan error, 1), make(chan error, 1)
	go func() { _, err := c.Read(make([]byte, 1)); rerr <- err }()
	go func() {
		for {
			if _, err := c.Write(make([]byte, 4<<20)); err != nil {
				werr <- err
				return
			}
		}
	}()
	time.Sleep(300 * time.Millisecond) // the Read waits, the Write fills the buffers
	select {
	case err := <-rerr:
		t.Fatalf("Read returned before Close: %v", err)
	case err := <-werr:
		t.Fatalf("Write returned before Close: %v", err)
	default:
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]chan error{"Read": rerr, "Write": werr} {
		select {
		case err := <-ch:
			if !errors.Is(err, net.ErrClosed) {
				t.Errorf("%s after Close: %v, want net.ErrClosed", name, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("%s still blocked a minute after Close", name)
		}
	}
}

// TestTCPReadSpinOrPark runs the reading tests with a waiting Read
// spinning first (GOMAXPROCS of at least 2) and parking at once (no spin),
// and checks which connections spin.
func TestTCPReadSpinOrPark(t *testing.T) {
	defer func() { tcpTest = tcpConfig{} }()
	for _, spin := range []time.Duration{tcpSpinWait, 0} {
		t.Run(fmt.Sprint("spin=", spin), func(t *testing.T) {
			tcpTest.spinWait = spin
			if spin == 0 {
				tcpTest.spinWait = -1 // none
			}
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(tcpSpinMinProcs, runtime.GOMAXPROCS(0))))
			t.Run("echo", testTCPEcho)
			t.Run("readdeadline", testTCPReadDeadline)
			t.Run("closeunblocks", testTCPCloseUnblocks)
			t.Run("peerclose", testTCPPeerClose)
			c := tcpDial(t, testutil.NewServer(t, testutil.Echo).Addr())
			if c.spinWait != spin {
				t.Errorf("spinWait = %v with GOMAXPROCS %d, want %v", c.spinWait, runtime.GOMAXPROCS(0), spin)
			}
		})
	}
	t.Run("gomaxprocs=1", func(t *testing.T) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		c := tcpDial(t, testutil.NewServer(t, testutil.Echo).Addr())
		if c.spinWait != 0 {
			t.Errorf("spinWait = %v with GOMAXPROCS 1, want none", c.spinWait)
		}
	})
}

func TestTCPDoubleClose(t *testing.T) {
	testutil.LeakCheck(t, true)
	s := testutil.NewServer(t, testutil.Echo)
	c := tcpDial(t, s.Addr())
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second Close = %v, want net.ErrClosed", err)
	}
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read after Close = %v, want net.ErrClosed", err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after Close = %v, want net.ErrClosed", err)
	}
	if err := c.SetDeadline(time.Now()); !errors.Is(err, net.ErrClosed) {
		t.Errorf("SetDeadline after Close = %v, want net.ErrClosed", err)
	}
	var oe *net.OpError
	if err := c.Close(); !errors.As(err, &oe) {
		t.Errorf("Close error %T, want *net.OpError", err)
	}
}

// TestTCPPeerClose: the peer sends, pauses, sends again and closes; the
// client gets every byte, then io.EOF, and a Write fails.
func TestTCPPeerClose(t *testing.T) { testTCPPeerClose(t) }

func testTCPPeerClose(t *testing.T) {
	testutil.LeakCheck(t, true)
	data := tcpRandom(3 << 20)
	s := testutil.NewServer(t, func(c net.Conn) {
		defer c.Close()
		c.Write(data[:1<<20])
		time.Sleep(50 * time.Millisecond)
		c.Write(data[1<<20:])
	})
	c := tcpDial(t, s.Addr())
	time.Sleep(200 * time.Millisecond) // all of it arrives before the first Read
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("got %d bytes, want the %d sent", len(got), len(data))
	}
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("Read after EOF = %v, want io.EOF", err)
	}
	if _, err := c.Write([]byte("x")); err == nil || errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after the peer closed = %v, want a connection error", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close after the peer closed = %v", err)
	}
}

// TestTCPPeerReset: a peer that resets the connection makes Read fail with
// an error matching ECONNRESET, and Write fail too.
func TestTCPPeerReset(t *testing.T) {
	testutil.LeakCheck(t, true)
	s := testutil.NewServer(t, func(c net.Conn) {
		io.ReadFull(c, make([]byte, 1))
		c.(*net.TCPConn).SetLinger(0) // close with a RST
		c.Close()
	})
	c := tcpDial(t, s.Addr())
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(time.Minute))
	_, err := c.Read(make([]byte, 1))
	var oe *net.OpError
	if !errors.Is(err, syscall.ECONNRESET) || !errors.As(err, &oe) || oe.Op != "read" {
		t.Errorf("Read after a reset = %v, want a read *net.OpError matching ECONNRESET", err)
	}
	if _, err := c.Write([]byte("x")); err == nil || errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after a reset = %v, want a connection error", err)
	}
}

func TestTCPDialRefused(t *testing.T) {
	testutil.LeakCheck(t, true)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c, err := Dial(context.Background(), addr)
	if err == nil {
		c.Close()
		t.Fatal("dial to a closed port succeeded")
	}
	var oe *net.OpError
	if !errors.As(err, &oe) || oe.Op != "dial" {
		t.Errorf("error %T %v, want a dial *net.OpError", err, err)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("error %v does not match ECONNREFUSED", err)
	}
}

func TestTCPDialTimeout(t *testing.T) {
	testutil.LeakCheck(t, true)
	addr := testutil.FullListener(t)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	c, err := Dial(ctx, addr)
	if err == nil {
		c.Close()
		t.Fatal("dial to a full backlog succeeded")
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("dial gave up after %v, before its context's 200ms", d)
	}
	var oe *net.OpError
	var ne net.Error
	if !errors.As(err, &oe) || !errors.As(err, &ne) || !ne.Timeout() ||
		!errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("error %T %v, want a *net.OpError timeout", err, err)
	}

	// Cancellation while the connect hangs.
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if c, err := Dial(ctx, addr); !errors.Is(err, context.Canceled) {
		if c != nil {
			c.Close()
		}
		t.Errorf("dial cancelled: %v, want context.Canceled", err)
	}
}

// TestTCPDialContextDone: a context already cancelled, or with a deadline
// already passed, fails the dial before it starts.
func TestTCPDialContextDone(t *testing.T) {
	testutil.LeakCheck(t, true)
	s := testutil.NewServer(t, testutil.Echo)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if c, err := Dial(ctx, s.Addr()); !errors.Is(err, context.Canceled) {
		if c != nil {
			c.Close()
		}
		t.Errorf("cancelled context: %v, want context.Canceled", err)
	}
	ctx, cancel = context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	c, err := Dial(ctx, s.Addr())
	var ne net.Error
	if err == nil {
		c.Close()
	}
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("past deadline: %v, want a timeout", err)
	}
}

// TestTCPEngineRestarts: the event loops stop with the last connection and
// start again with the next.
func TestTCPEngineRestarts(t *testing.T) {
	testutil.LeakCheck(t, true)
	s := testutil.NewServer(t, testutil.Echo)
	for range 3 {
		a, b := tcpDial(t, s.Addr()), tcpDial(t, s.Addr())
		for _, c := range []*Conn{a, b} {
			if _, err := c.Write([]byte("hi")); err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 2)
			if _, err := io.ReadFull(c, buf); err != nil {
				t.Fatal(err)
			}
		}
		a.Close()
		b.Close()
		running := tcpEngine.Peek(func(*gnet.Client) {})
		if running {
			t.Fatal("the gnet client still runs with no connection")
		}
	}
}

// BenchmarkTCPRoundTrip: one request and its answer per op, through a
// Conn and, to compare, a plain net.Conn, against the same server: an
// echo goroutine in this process (64 bytes), and valkey-server on loopback
// (PING, +PONG). gnet is the Conn as it is (a waiting Read spins first,
// see tcpSpinWait); gnet-nospin parks a waiting Read at once;
// gnet-asyncwrite also sends every Write through the event loop (gnet's
// AsyncWrite) instead of write(2).
func BenchmarkTCPRoundTrip(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go testutil.Echo(c)
		}
	}()
	echo := make([]byte, 64)
	servers := []struct {
		name, addr string
		req, resp  []byte
	}{
		{"echo", l.Addr().String(), echo, echo},
		{"valkey", testutil.ValkeyServer(b), []byte("PING\r\n"), []byte("+PONG\r\n")},
	}
	gnetDial := func(direct bool, spin time.Duration) func(b *testing.B, addr string) net.Conn {
		return func(b *testing.B, addr string) net.Conn {
			tcpTest = tcpConfig{asyncWritesOnly: !direct, spinWait: spin}
			if spin == 0 {
				tcpTest.spinWait = -1 // none
			}
			defer func() { tcpTest = tcpConfig{} }()
			return tcpDial(b, addr)
		}
	}
	dials := []struct {
		name string
		dial func(b *testing.B, addr string) net.Conn
	}{
		{"gnet", gnetDial(true, tcpSpinWait)},
		{"gnet-nospin", gnetDial(true, 0)},
		{"gnet-asyncwrite", gnetDial(false, 0)},
		{"net.Conn", func(b *testing.B, addr string) net.Conn {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { c.Close() })
			return c
		}},
	}
	for _, s := range servers {
		for _, d := range dials {
			b.Run("server="+s.name+"/conn="+d.name, func(b *testing.B) {
				got := make([]byte, len(s.resp))
				testutil.BenchRoundTrips(b, d.dial(b, s.addr), s.req, got)
				if !bytes.Equal(got, s.resp) {
					b.Fatalf("answer %q, want %q", got, s.resp)
				}
			})
		}
	}
}

// TestTCPConcurrentReadsWake: with two Reads parked, data for both wakes
// both, and so does the peer's close.
func TestTCPConcurrentReadsWake(t *testing.T) {
	testutil.LeakCheck(t, true)
	send, bye, quit := make(chan struct{}), make(chan struct{}), make(chan struct{})
	s := testutil.NewServer(t, func(c net.Conn) {
		defer c.Close()
		select {
		case <-send:
			c.Write([]byte("ab")) // one segment, one OnTraffic
		case <-quit:
			return
		}
		select {
		case <-bye:
		case <-quit:
		}
	})
	t.Cleanup(func() { close(quit) }) // before the server's cleanup
	c := tcpDial(t, s.Addr())
	reads := func() <-chan error {
		errc := make(chan error, 2)
		for range 2 {
			go func() {
				b := make([]byte, 1)
				_, err := c.Read(b)
				errc <- err
			}()
		}
		time.Sleep(100 * time.Millisecond) // both park
		return errc
	}
	wait := func(what string, errc <-chan error, want error) {
		t.Helper()
		for range 2 {
			select {
			case err := <-errc:
				if err != want {
					t.Errorf("%s: Read = %v, want %v", what, err, want)
				}
			case <-time.After(time.Minute):
				c.Close() // frees the Read left waiting
				<-errc
				t.Fatalf("%s: a second parked Read still waits after a minute", what)
			}
		}
	}
	errc := reads()
	close(send)
	wait("two bytes for two Reads", errc, nil)
	errc = reads()
	close(bye)
	wait("the peer closed", errc, io.EOF)
}
