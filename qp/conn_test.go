package qp_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/cq"
	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/qp"
)

// These tests run on a real RDMA device: in the soft-RoCE VM (make
// test-rxe), or on a machine with one. Without a device they skip.

// env is one test's listener and its leak baseline.
type env struct {
	t       *testing.T
	addr    netip.Addr
	l       *qp.Listener
	opts    *qp.Options
	dial    *qp.Options // the dialling end's, when not opts
	before  map[string]int
	goBefor int
}

func newEnv(t *testing.T, opts *qp.Options) *env {
	t.Helper()
	rdmatest.Require(t)
	e := &env{t: t, addr: rdmatest.Addr(t), opts: opts, before: rdmatest.Resources(t), goBefor: runtime.NumGoroutine()}
	l, err := qp.Listen(netip.AddrPortFrom(e.addr, 0).String(), opts)
	if err != nil {
		t.Fatal(err)
	}
	e.l = l
	t.Cleanup(e.check)
	return e
}

// check runs after the test: the listener closes, and neither RDMA objects
// nor goroutines are left behind.
func (e *env) check() {
	e.l.Close()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > e.goBefor && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > e.goBefor {
		buf := make([]byte, 1<<20)
		e.t.Errorf("%d goroutines left behind (%d before):\n%s", n-e.goBefor, e.goBefor, buf[:runtime.Stack(buf, true)])
	}
	rdmatest.CheckNoLeaks(e.t, e.before)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// pair dials the listener and returns both ends.
func (e *env) pair() (cli, srv *qp.Conn) {
	e.t.Helper()
	cli, srv, err := e.pairErr()
	if err != nil {
		e.t.Fatal(err)
	}
	return cli, srv
}

// pairErr is pair for a goroutine other than the test's: it returns the
// error.
func (e *env) pairErr() (cli, srv *qp.Conn, err error) {
	ctx := ctxT(e.t)
	type res struct {
		c   *qp.Conn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := qp.Dial(ctx, e.l.Addr().String(), cmp.Or(e.dial, e.opts))
		ch <- res{c, err}
	}()
	srv, err = e.l.AcceptConn(ctx)
	r := <-ch
	if err != nil || r.err != nil {
		if srv != nil {
			srv.Close()
		}
		if r.c != nil {
			r.c.Close()
		}
		return nil, nil, cmp.Or(err, r.err)
	}
	return r.c, srv, nil
}

// ownCQ gives the ends that pair dials a reactor of their own, and so a CQ
// apart from the listener's ends: a test that holds one end's completions
// (HoldCompletions) holds those of every connection on its CQ.
func (e *env) ownCQ() {
	r, err := cq.New(cq.Options{})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(r.Close) // before check, after the test's own Close calls
	o := *e.opts
	o.Reactor = r
	e.dial = &o
}

func randBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// echo copies everything c reads back to it until EOF, then closes it.
func echo(c *qp.Conn) {
	io.Copy(c, c)
	c.Close()
}

// checkEcho writes data to c, whose peer echoes it, and reads the echo
// while the write goes on (a write larger than the peer's buffer waits for
// the echo to be read), then compares.
func checkEcho(t *testing.T, c *qp.Conn, data []byte) {
	t.Helper()
	werr := make(chan error, 1)
	go func() {
		_, err := c.Write(data)
		werr <- err
	}()
	got := make([]byte, len(data))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("size %d: reading the echo: %v", len(data), err)
	}
	if err := <-werr; err != nil {
		t.Fatalf("size %d: %v", len(data), err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("size %d: echoed data differs", len(data))
	}
}

func TestDialNoRDMA(t *testing.T) {
	if rdmatest.Available() {
		t.Skip("this machine has RDMA; the no-RDMA path is tested on the host")
	}
	_, err := qp.Dial(context.Background(), "127.0.0.1:6379", nil)
	if err == nil {
		t.Fatal("Dial succeeded without RDMA")
	}
	t.Logf("Dial without RDMA: %v", err)
}

// TestDialTriesEachAddress: Dial tries each address a name resolves to, as
// net.Dial does. In the VM, rdmapool-dual is ::1, which no RDMA device
// serves, then the listener's address.
func TestDialTriesEachAddress(t *testing.T) {
	e := newEnv(t, nil)
	ips, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", "rdmapool-dual")
	if err != nil || len(ips) != 2 || ips[1].Unmap() != e.addr {
		why := fmt.Sprintf("needs the name rdmapool-dual for ::1, then %v, as the VM's /etc/hosts has it: %v %v", e.addr, ips, err)
		if testutil.InVM() {
			t.Fatal(why) // vm/init.sh writes it
		}
		t.Skip(why)
	}
	_, port, _ := net.SplitHostPort(e.l.Addr().String())
	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	dialed := make(chan *qp.Conn, 1)
	go func() {
		c, err := qp.Dial(ctx, net.JoinHostPort("rdmapool-dual", port), nil)
		if err != nil {
			t.Errorf("Dial by name: %v", err)
			cancel() // the Accept below waits no longer
		}
		dialed <- c
	}()
	srv, err := e.l.AcceptConn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cli := <-dialed
	if cli == nil {
		return
	}
	defer cli.Close()
	go echo(srv)
	checkEcho(t, cli, []byte("by name"))
}

func TestAddrs(t *testing.T) {
	e := newEnv(t, nil)
	cli, srv := e.pair()
	defer cli.Close()
	defer srv.Close()
	if cli.RemoteAddr().String() != e.l.Addr().String() {
		t.Errorf("client's RemoteAddr %v, listener's Addr %v", cli.RemoteAddr(), e.l.Addr())
	}
	if srv.RemoteAddr().String() != cli.LocalAddr().String() {
		t.Errorf("server's RemoteAddr %v, client's LocalAddr %v", srv.RemoteAddr(), cli.LocalAddr())
	}
	if cli.LocalAddr().Network() != "rdma" || !strings.Contains(cli.LocalAddr().String(), ":") {
		t.Errorf("LocalAddr %v (%s)", cli.LocalAddr(), cli.LocalAddr().Network())
	}
}

// TestEcho sends 1 B to 16 MiB through an echo server with a 64 KiB receive
// buffer on both sides, so large transfers cross re-arms many times, and
// compares checksums.
func TestEcho(t *testing.T) {
	e := newEnv(t, &qp.Options{RecvBufferSize: 64 << 10})
	for _, size := range []int{1, 100, 4 << 10, 64 << 10, 64<<10 + 1, 1 << 20, 16 << 20} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			cli, srv := e.pair()
			go echo(srv)
			defer cli.Close()
			data := randBytes(size, uint64(size))
			werr := make(chan error, 1)
			go func() {
				// Odd-sized writes exercise the splitting.
				var err error
				for p := data; len(p) > 0 && err == nil; {
					n := min(len(p), 77777)
					_, err = cli.Write(p[:n])
					p = p[n:]
				}
				werr <- err
			}()
			h := sha256.New()
			if _, err := io.CopyN(h, cli, int64(size)); err != nil {
				t.Fatalf("reading the echo: %v", err)
			}
			if err := <-werr; err != nil {
				t.Fatal(err)
			}
			if got, want := h.Sum(nil), sha256.Sum256(data); !bytes.Equal(got, want[:]) {
				t.Fatal("echoed data differs")
			}
		})
	}
}

// TestEchoOneProc: with GOMAXPROCS 1 one goroutine may spin, and it passes
// through the netpoller every 200 µs of its spinning; streams and
// back-to-back round trips still arrive whole and in order.
func TestEchoOneProc(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	e := newEnv(t, &qp.Options{RecvBufferSize: 64 << 10})
	cli, srv := e.pair()
	go echo(srv)
	defer cli.Close()
	cli.SetDeadline(time.Now().Add(60 * time.Second))
	for _, size := range []int{1, 4 << 10, 1 << 20} {
		checkEcho(t, cli, randBytes(size, uint64(size)))
	}
	msg, got := make([]byte, 64), make([]byte, 64)
	for i := range 2000 {
		binary.LittleEndian.PutUint64(msg, uint64(i))
		if _, err := cli.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(cli, got); err != nil {
			t.Fatalf("round trip %d: %v", i, err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("round trip %d: echoed %x, want %x", i, got[:8], msg[:8])
		}
	}
}

// TestInlineWrites: the provider grants inline sends (soft-RoCE does), and
// writes on either side of the granted size, posted inline or not, arrive
// whole.
func TestInlineWrites(t *testing.T) {
	e := newEnv(t, &qp.Options{RecvBufferSize: 64 << 10})
	cli, srv := e.pair()
	go echo(srv)
	defer cli.Close()
	cli.SetDeadline(time.Now().Add(60 * time.Second))
	inline := int(cli.InlineCap())
	t.Logf("max_inline_data granted: %d", inline)
	if inline == 0 {
		t.Fatal("the provider granted no inline data; rdmapool asks for 256 bytes")
	}
	for _, size := range []int{1, inline - 1, inline, inline + 1, 2 * inline} {
		checkEcho(t, cli, randBytes(size, uint64(size)))
	}
}

// TestManySmallWrites sends more one-way messages than the receiver has
// receives posted (1024), each Write one RDMA write: the receives consumed
// must come back, whether the reader or the reactor handled them.
func TestManySmallWrites(t *testing.T) {
	e := newEnv(t, &qp.Options{RecvBufferSize: 64 << 10})
	cli, srv := e.pair()
	defer cli.Close()
	defer srv.Close()
	srv.SetDeadline(time.Now().Add(60 * time.Second))
	// Pause: let the reader park and the reactor handle some.
	sendNumbered(t, cli, srv, 5000, 500)
}

// sendNumbered writes n 8-byte messages numbered 0..n-1 from w, one Write
// each, and reads them back in order from r, sleeping 2 ms every pauseEvery
// messages.
func sendNumbered(t *testing.T, w, r *qp.Conn, n, pauseEvery int) {
	t.Helper()
	werr := make(chan error, 1)
	go func() {
		msg := make([]byte, 8)
		for i := range n {
			binary.LittleEndian.PutUint64(msg, uint64(i))
			if _, err := w.Write(msg); err != nil {
				werr <- err
				return
			}
		}
		werr <- nil
	}()
	got := make([]byte, 8)
	for i := range n {
		if _, err := io.ReadFull(r, got); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if v := binary.LittleEndian.Uint64(got); v != uint64(i) {
			t.Fatalf("message %d reads %d", i, v)
		}
		if i%pauseEvery == 0 {
			time.Sleep(2 * time.Millisecond)
		}
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
}

// TestBothDirections writes 8 MiB each way at once, through 64 KiB buffers.
func TestBothDirections(t *testing.T) {
	e := newEnv(t, &qp.Options{RecvBufferSize: 64 << 10})
	cli, srv := e.pair()
	defer cli.Close()
	defer srv.Close()
	const size = 8 << 20
	a, b := randBytes(size, 1), randBytes(size, 2)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	send := func(c *qp.Conn, p []byte) {
		defer wg.Done()
		_, err := c.Write(p)
		errs <- err
	}
	recv := func(c *qp.Conn, want []byte) {
		defer wg.Done()
		got := make([]byte, len(want))
		_, err := io.ReadFull(c, got)
		if err == nil && !bytes.Equal(got, want) {
			err = errors.New("data differs")
		}
		errs <- err
	}
	wg.Add(4)
	go send(cli, a)
	go send(srv, b)
	go recv(srv, a)
	go recv(cli, b)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// TestManyConns runs 64 connections on one listener at once.
func TestManyConns(t *testing.T) {
	e := newEnv(t, &qp.Options{RecvBufferSize: 16 << 10})
	const n = 64
	const size = 128 << 10
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range n {
			c, err := e.l.AcceptConn(ctxT(t))
			if err != nil {
				t.Error(err)
				return
			}
			go echo(c)
		}
	}()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := qp.Dial(ctxT(t), e.l.Addr().String(), e.opts)
			if err != nil {
				t.Errorf("conn %d: %v", i, err)
				return
			}
			defer c.Close()
			data := randBytes(size, uint64(i))
			go c.Write(data)
			got := make([]byte, size)
			if _, err := io.ReadFull(c, got); err != nil || !bytes.Equal(got, data) {
				t.Errorf("conn %d: %v, equal %v", i, err, bytes.Equal(got, data))
			}
		})
	}
	wg.Wait()
	<-done
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, os.ErrDeadlineExceeded) && errors.As(err, &ne) && ne.Timeout()
}

func TestDeadlines(t *testing.T) {
	e := newEnv(t, &qp.Options{RecvBufferSize: 16 << 10})
	cli, srv := e.pair()
	defer cli.Close()
	defer srv.Close()

	// Read: nothing comes.
	cli.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	start := time.Now()
	_, err := cli.Read(make([]byte, 10))
	if !isTimeout(err) {
		t.Fatalf("Read past the deadline: %v, want a timeout", err)
	}
	if time.Since(start) < 150*time.Millisecond {
		t.Errorf("Read returned after %v, before the deadline", time.Since(start))
	}
	// A deadline in the past fails at once; clearing it lets data through.
	cli.SetReadDeadline(time.Now().Add(-time.Second))
	if _, err := cli.Read(make([]byte, 10)); !isTimeout(err) {
		t.Fatalf("Read with a past deadline: %v", err)
	}
	cli.SetReadDeadline(time.Time{})
	go srv.Write([]byte("hello"))
	buf := make([]byte, 10)
	if n, err := cli.Read(buf); err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("Read after clearing the deadline: %q, %v", buf[:n], err)
	}

	// Write: the server reads nothing, so its 16 KiB buffer fills.
	cli.SetWriteDeadline(time.Now().Add(300 * time.Millisecond))
	n, err := cli.Write(make([]byte, 1<<20))
	if !isTimeout(err) {
		t.Fatalf("Write into a full peer: %d, %v, want a timeout", n, err)
	}
	if n != 16<<10 {
		t.Errorf("Write wrote %d bytes before timing out, want the peer's buffer, %d", n, 16<<10)
	}
	// Once the server reads, writing goes on.
	cli.SetWriteDeadline(time.Time{})
	go io.CopyN(io.Discard, srv, 16<<10+4)
	if _, err := cli.Write([]byte("more")); err != nil {
		t.Fatalf("Write after the peer read: %v", err)
	}
}

func TestCloseUnblocks(t *testing.T) {
	e := newEnv(t, &qp.Options{RecvBufferSize: 16 << 10})
	cli, srv := e.pair()
	defer srv.Close()
	errs := make(chan error, 2)
	go func() {
		_, err := cli.Read(make([]byte, 1))
		errs <- err
	}()
	go func() {
		_, err := cli.Write(make([]byte, 1<<20)) // blocks: the server does not read
		errs <- err
	}()
	time.Sleep(200 * time.Millisecond)
	if err := cli.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-errs:
			if !errors.Is(err, net.ErrClosed) {
				t.Errorf("blocked call after Close: %v, want net.ErrClosed", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not unblock a pending call")
		}
	}
	if err := cli.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := cli.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
	if _, err := cli.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}
	if err := cli.SetDeadline(time.Now()); !errors.Is(err, net.ErrClosed) {
		t.Errorf("SetDeadline after Close: %v", err)
	}
	// The server sees the disconnect.
	srv.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.Copy(io.Discard, srv); err != nil {
		t.Errorf("server reading after the client closed: %v, want EOF", err)
	}
}

// TestPeerCloseMidStream: data the peer wrote before closing is all read,
// then io.EOF; writes then fail with ErrPeerGone.
func TestPeerCloseMidStream(t *testing.T) {
	for _, closer := range []string{"server", "client"} {
		t.Run(closer, func(t *testing.T) {
			e := newEnv(t, &qp.Options{RecvBufferSize: 64 << 10})
			cli, srv := e.pair()
			w, r := srv, cli
			if closer == "client" {
				w, r = cli, srv
			}
			defer r.Close()
			data := randBytes(40<<10, 7) // fits in the reader's buffer
			if _, err := w.Write(data); err != nil {
				t.Fatal(err)
			}
			w.Close()
			r.SetReadDeadline(time.Now().Add(20 * time.Second))
			got, err := io.ReadAll(r)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("read %d of %d bytes, err %v", len(got), len(data), err)
			}
			if _, err := r.Write([]byte("x")); !errors.Is(err, qp.ErrPeerGone) || !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("Write after the peer closed: %v, want ErrPeerGone", err)
			}
		})
	}
}

// TestPeerCloseBeforeDataHandled: the peer writes and closes, and the
// disconnect is handled before the data's completion (held back here; in
// life the reactor may simply not have polled it yet). Read must still
// return the data, then io.EOF.
func TestPeerCloseBeforeDataHandled(t *testing.T) {
	e := newEnv(t, &qp.Options{RecvBufferSize: 16 << 10, SpinWait: -1})
	e.ownCQ()
	cli, srv := e.pair()
	defer srv.Close()
	release := srv.HoldCompletions()
	held := true
	defer func() {
		if held {
			release()
		}
	}()
	data := randBytes(1000, 3)
	if _, err := cli.Write(data); err != nil {
		t.Fatal(err)
	}
	cli.Close()
	waitPeerClosed(t, srv)
	type result struct {
		got []byte
		err error
	}
	res := make(chan result, 1)
	srv.SetReadDeadline(time.Now().Add(20 * time.Second))
	go func() {
		got, err := io.ReadAll(srv)
		res <- result{got, err}
	}()
	time.Sleep(50 * time.Millisecond) // let the Read find the disconnect first
	release()
	held = false
	r := <-res
	if r.err != nil || !bytes.Equal(r.got, data) {
		t.Fatalf("read %d of %d bytes, err %v", len(r.got), len(data), r.err)
	}
}

// setHook stores f in a hook from qp.ReadLooksHook.
func setHook(h *atomic.Pointer[func(*qp.Conn)], f func(*qp.Conn)) { h.Store(&f) }

// TestPeerCloseDataHandledBetweenLooks: the peer writes and closes, and
// the data's completion and the flush are both handled while a Read is
// between its look for the flush and its look at the ring (made to happen
// by a hook). The Read must return the data, not io.EOF with the data
// unread.
func TestPeerCloseDataHandledBetweenLooks(t *testing.T) {
	opts := &qp.Options{RecvBufferSize: 16 << 10, SpinWait: -1}
	hook := qp.ReadLooksHook(opts)
	e := newEnv(t, opts)
	e.ownCQ()
	cli, srv := e.pair()
	defer srv.Close()
	release := srv.HoldCompletions()
	var once sync.Once
	defer once.Do(release)
	hooked := false
	setHook(hook, func(c *qp.Conn) {
		if c != srv || !c.PeerClosed() {
			return
		}
		once.Do(func() {
			hooked = true
			release()
			for deadline := time.Now().Add(20 * time.Second); !c.QPDown(); time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					return // the Read goes on; the test fails below
				}
			}
		})
	})
	data := randBytes(1000, 4)
	if _, err := cli.Write(data); err != nil {
		t.Fatal(err)
	}
	cli.Close()
	waitPeerClosed(t, srv)
	srv.SetReadDeadline(time.Now().Add(20 * time.Second))
	got, err := io.ReadAll(srv)
	if !hooked {
		t.Fatal("the hook never ran between the Read's looks")
	}
	if !srv.QPDown() {
		t.Fatal("the flush was not handled within 20 s of the completions' release")
	}
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d of %d bytes, err %v", len(got), len(data), err)
	}
}

// waitPeerClosed waits until c has seen its peer's disconnect.
func waitPeerClosed(t *testing.T, c *qp.Conn) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !c.PeerClosed(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the disconnect was not seen within 20 s")
		}
	}
}

// closeWithin closes c and fails the test if that takes longer than limit
// (a hang, not a measurement).
func closeWithin(t *testing.T, c *qp.Conn, limit time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		c.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(limit):
		t.Fatalf("Close still running after %v", limit)
	}
}

// TestCloseWaitsForSends: Close right after a Write waits for the write's
// completion, not for its linger limit (set far beyond the test's patience
// here), and the peer reads everything.
func TestCloseWaitsForSends(t *testing.T) {
	e := newEnv(t, &qp.Options{RecvBufferSize: 64 << 10, CloseLinger: time.Hour})
	cli, srv := e.pair()
	defer srv.Close()
	data := randBytes(40<<10, 11)
	if _, err := cli.Write(data); err != nil {
		t.Fatal(err)
	}
	closeWithin(t, cli, 30*time.Second)
	srv.SetReadDeadline(time.Now().Add(20 * time.Second))
	got, err := io.ReadAll(srv)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d of %d bytes, err %v", len(got), len(data), err)
	}
}

// TestCloseLingerBounded: when the completions of what was sent do not
// come (held back here; in life a peer that stopped answering), Close ends
// its linger after the limit and disconnects, and frees everything. The
// hold is on the CQ, which the teardown needs to leave, so the test lets go
// of it once the peer sees the disconnect that follows the linger.
func TestCloseLingerBounded(t *testing.T) {
	e := newEnv(t, &qp.Options{CloseLinger: 100 * time.Millisecond})
	e.ownCQ()
	cli, srv := e.pair()
	defer srv.Close()
	// One byte through first, so that the client has the server's
	// RegisterXferMemory before its completions are held.
	checkOne(t, cli, srv)
	release := cli.HoldCompletions()
	held := true
	defer func() {
		if held {
			release()
		}
	}()
	cli.SetWriteDeadline(time.Now().Add(20 * time.Second))
	if _, err := cli.Write([]byte("tail")); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() {
		cli.Close()
		close(closed)
	}()
	waitPeerClosed(t, srv) // the linger ended: 20 s at most, not the hour a lost completion could take
	release()
	held = false
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close still running 30 s after the linger ended")
	}
}

// checkOne writes a byte from w and reads it at r.
func checkOne(t *testing.T, w, r *qp.Conn) {
	t.Helper()
	w.SetWriteDeadline(time.Now().Add(20 * time.Second))
	r.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := w.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(r, make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
}

func TestZeroCopy(t *testing.T) {
	e := newEnv(t, &qp.Options{RecvBufferSize: 16 << 10})
	cli, srv := e.pair()
	defer cli.Close()
	defer srv.Close()
	const total = 1 << 20
	go func() {
		sent := 0
		for sent < total {
			b, err := cli.Reserve(total - sent)
			if err != nil {
				t.Error(err)
				return
			}
			for i := range b {
				b[i] = byte(sent + i)
			}
			if err := cli.Commit(len(b)); err != nil {
				t.Error(err)
				return
			}
			sent += len(b)
		}
	}()
	got := 0
	for got < total {
		b, err := srv.Lease()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range b {
			if v != byte(got+i) {
				t.Fatalf("byte %d is %d, want %d", got+i, v, byte(got+i))
			}
		}
		got += len(b)
		if err := srv.Release(len(b)); err != nil {
			t.Fatal(err)
		}
	}
	if err := srv.Release(0); err == nil {
		t.Error("Release without a Lease succeeded")
	}
}

// TestCloseWhileReserved: Close returns at once while a reservation is
// held, and the Commit after it fails with net.ErrClosed and sends nothing:
// the peer sees the connection end without the bytes.
func TestCloseWhileReserved(t *testing.T) {
	e := newEnv(t, &qp.Options{RecvBufferSize: 16 << 10})
	cli, srv := e.pair()
	defer srv.Close()
	b, err := cli.Reserve(3)
	if err != nil {
		t.Fatal(err)
	}
	copy(b, "abc")
	cli.Close()
	if err := cli.Commit(3); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Commit after Close: %v, want net.ErrClosed", err)
	}
	srv.SetReadDeadline(time.Now().Add(20 * time.Second))
	if n, err := srv.Read(make([]byte, 3)); n != 0 || err != io.EOF {
		t.Errorf("the peer read %d bytes, %v; want io.EOF and nothing", n, err)
	}
}

// TestZeroCopyBadLengths: Reserve of a negative length, and Commit or
// Release of more than was reserved or leased, are errors that send or
// consume nothing, and end the reservation or lease.
func TestZeroCopyBadLengths(t *testing.T) {
	e := newEnv(t, &qp.Options{RecvBufferSize: 16 << 10})
	cli, srv := e.pair()
	defer cli.Close()
	defer srv.Close()
	if _, err := cli.Reserve(-1); err == nil {
		t.Error("Reserve(-1) succeeded")
	}
	b, err := cli.Reserve(10)
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.Commit(len(b) + 1); err == nil {
		t.Error("Commit of more than was reserved succeeded")
	}
	if _, err := cli.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	srv.SetReadDeadline(time.Now().Add(20 * time.Second))
	b, err = srv.Lease()
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "abc" {
		t.Fatalf("leased %q, want only what Write sent", b)
	}
	if err := srv.Release(len(b) + 1); err == nil {
		t.Error("Release of more than was leased succeeded")
	}
	got := make([]byte, 3)
	if _, err := io.ReadFull(srv, got); err != nil || string(got) != "abc" {
		t.Fatalf("after the bad Release, read %q, %v; want the bytes again", got, err)
	}
}
