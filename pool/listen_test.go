package pool_test

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/loader"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/pool"
	"github.com/seed54442f1a/rdmapool/qp"
)

// listenCase is a policy that both ends of a Listen test use.
type listenCase struct {
	name   string
	policy pool.Policy
}

// listenCases: TCPOnly and Auto run anywhere (Auto over TCP alone where
// this machine has no RDMA), RDMAOnly needs RDMA (the VM).
var listenCases = []listenCase{{"tcp", pool.TCPOnly}, {"auto", pool.Auto}, {"rdma", pool.RDMAOnly}}

// rdmaHere reports whether this machine has RDMA (rdmatest.Available),
// asked once, before any leak check starts: the first probe starts the
// process's librdmacm thread, for good, which a leak check begun before it
// would count as left behind.
var rdmaHere = sync.OnceValue(rdmatest.Available)

// listenHost is the host the Listen tests listen on: in the VM an address
// of the RDMA device's interface (RDMA and TCP both reach it), else the
// loopback address.
func listenHost(t *testing.T) string {
	t.Helper()
	if testutil.InVM() {
		return rdmatest.Addr(t).String()
	}
	return "127.0.0.1"
}

// listenPair listens by policy on a free port and returns the Listener and
// a Dialer of the same policy, both closed when the test ends. RDMAOnly
// needs RDMA: without it the test skips, or fails in the VM.
func listenPair(t *testing.T, policy pool.Policy) (*pool.Listener, *pool.Dialer) {
	t.Helper()
	if policy == pool.RDMAOnly {
		rdmatest.Require(t)
	}
	l, err := pool.Listen(net.JoinHostPort(listenHost(t), "0"), &pool.ListenOptions{Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	// Under emulation an RDMA setup takes up to seconds with several at once.
	d := &pool.Dialer{Options: pool.Options{Policy: policy, DialTimeout: time.Minute}}
	t.Cleanup(func() {
		d.Close()
		l.Close()
	})
	if st := l.Stats(); policy == pool.Auto {
		t.Logf("auto: RDMA listens: %v (%v)", st.RDMA, st.RDMAOff)
		if rdmaHere() != st.RDMA {
			t.Errorf("auto: RDMA listens: %v, but RDMA available here: %v (%v)", st.RDMA, rdmaHere(), st.RDMAOff)
		}
	}
	return l, d
}

// checkTransports fails t unless, under RDMAOnly or TCPOnly, every
// connection the Listener accepted and the Dialer made used that policy's
// transport.
func checkTransports(t *testing.T, policy pool.Policy, l *pool.Listener, d *pool.Dialer) {
	t.Helper()
	ls := l.Stats()
	var dials map[pool.Transport]uint64
	for _, st := range d.Stats() {
		dials = st.Dials
	}
	t.Logf("%v: accepted %v, dialled %v", policy, ls.Accepted, dials)
	want, other := pool.TCP, pool.RDMA
	switch policy {
	case pool.Auto:
		if ls.Accepted[pool.RDMA]+ls.Accepted[pool.TCP] == 0 {
			t.Errorf("auto: accepted nothing")
		}
		return
	case pool.RDMAOnly:
		want, other = pool.RDMA, pool.TCP
	}
	if ls.Accepted[want] == 0 || ls.Accepted[other] != 0 || dials[want] == 0 || dials[other] != 0 {
		t.Errorf("%v: accepted %v, dialled %v; want all over %s", policy, ls.Accepted, dials, want)
	}
}

// TestListenCloseDuringAccept: Close unblocks every waiting Accept with an
// error matching net.ErrClosed, and every later one; a client accepted by
// the Listener but not yet by Accept is closed; nothing is left running.
func TestListenCloseDuringAccept(t *testing.T) {
	rdmaHere()
	for _, lc := range listenCases {
		t.Run(lc.name, func(t *testing.T) {
			if lc.policy == pool.RDMAOnly {
				rdmatest.Require(t)
			}
			testutil.LeakCheck(t, lc.policy == pool.TCPOnly)
			addr := net.JoinHostPort(listenHost(t), "0")
			opts := &pool.ListenOptions{Policy: lc.policy}
			l, err := pool.Listen(addr, opts)
			if err != nil {
				t.Fatal(err)
			}
			const waiters = 4
			errs := make(chan error, waiters)
			for range waiters {
				go func() {
					c, err := l.AcceptConn(context.Background())
					if err == nil {
						c.Close()
						err = errors.New("Accept returned a connection, and no client dialled")
					}
					errs <- err
				}()
			}
			if err := l.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			for range waiters {
				if err := <-errs; !errors.Is(err, net.ErrClosed) {
					t.Errorf("Accept during Close: %v; want net.ErrClosed", err)
				}
			}
			if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
				t.Errorf("Accept after Close: %v; want net.ErrClosed", err)
			}
			if err := l.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			if st := l.Stats(); st.RDMA || st.AcceptErrors != 0 {
				t.Errorf("Stats after Close: %+v", st)
			}

			// A client that the Listener accepted (or the kernel queued)
			// and no Accept took is closed by Close: its Read ends.
			l, err = pool.Listen(addr, opts)
			if err != nil {
				t.Fatal(err)
			}
			var c net.Conn
			if lc.policy == pool.RDMAOnly {
				c, err = qp.Dial(context.Background(), l.Addr().String(), nil)
			} else {
				c, err = net.Dial("tcp", l.Addr().String())
			}
			if err != nil {
				l.Close()
				t.Fatal(err)
			}
			defer c.Close()
			l.Close()
			c.SetReadDeadline(time.Now().Add(time.Minute))
			var ne net.Error
			if _, err := c.Read(make([]byte, 1)); err == nil || errors.As(err, &ne) && ne.Timeout() {
				t.Errorf("client's Read after the Listener closed: %v; want EOF or a reset", err)
			}
		})
	}
}

// TestListenBothTransports (VM): one Auto Listener accepts an RDMA client
// and a TCP client on the same port number, each a Conn that says its
// transport, and counts them.
func TestListenBothTransports(t *testing.T) {
	rdmatest.Require(t)
	testutil.LeakCheck(t, false)
	l, err := pool.Listen(net.JoinHostPort(listenHost(t), "0"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st := l.Stats()
	if !st.RDMA || st.RDMAOff != nil {
		t.Fatalf("RDMA does not listen: %+v", st)
	}
	if l.RDMAAddr().(qp.Addr).Port() != uint16(l.TCPAddr().(*net.TCPAddr).Port) {
		t.Errorf("RDMA listens at %v, TCP at %v: want one port number", l.RDMAAddr(), l.TCPAddr())
	}
	ctx := context.Background()
	rc, err := qp.Dial(ctx, l.RDMAAddr().String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tc, err := net.Dial("tcp", l.TCPAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	seen := map[pool.Transport]bool{}
	for range 2 {
		c, err := l.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		tr := c.(pool.Conn).Transport()
		if seen[tr] {
			t.Fatalf("two clients over %s", tr)
		}
		seen[tr] = true
		if got := c.RemoteAddr().Network(); got != string(tr) {
			t.Errorf("a %s client's RemoteAddr().Network() = %q", tr, got)
		}
		// One byte each way.
		client := net.Conn(rc)
		if tr == pool.TCP {
			client = tc
		}
		if _, err := client.Write([]byte{'x'}); err != nil {
			t.Fatal(err)
		}
		b := make([]byte, 1)
		if _, err := io.ReadFull(c, b); err != nil || b[0] != 'x' {
			t.Fatalf("%s: read %q, %v", tr, b, err)
		}
		if _, err := c.Write([]byte{'y'}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(client, b); err != nil || b[0] != 'y' {
			t.Fatalf("%s: client read %q, %v", tr, b, err)
		}
	}
	if st := l.Stats(); st.Accepted[pool.RDMA] != 1 || st.Accepted[pool.TCP] != 1 || st.AcceptErrors != 0 {
		t.Errorf("Stats: %+v; want one client of each", st)
	}
}

// TestListenNoDevice (host, without RDMA): RDMAOnly fails Listen with the
// words of a Dialer's RDMAOnly dial (the error and what to do); Auto
// serves TCP alone and says why, once, to OnFallback and in Stats.
func TestListenNoDevice(t *testing.T) {
	if rdmaHere() {
		t.Skip("this machine has RDMA: the test is for one without")
	}
	testutil.LeakCheck(t, true)
	_, err := pool.Listen("127.0.0.1:0", &pool.ListenOptions{Policy: pool.RDMAOnly})
	if err == nil {
		t.Fatal("RDMAOnly Listen without RDMA succeeded")
	}
	t.Logf("RDMAOnly: %v", err)
	if !errors.Is(err, syscall.ENODEV) && !errors.Is(err, loader.ErrUnavailable) {
		t.Errorf("RDMAOnly Listen: %v; want ENODEV or loader.ErrUnavailable", err)
	}
	d := &pool.Dialer{Options: pool.Options{Policy: pool.RDMAOnly}}
	defer d.Close()
	_, derr := d.DialContext(context.Background(), "tcp", "127.0.0.1:1")
	if derr == nil {
		t.Fatal("RDMAOnly dial without RDMA succeeded")
	}
	// "listen rdma 127.0.0.1:0: WHY (WHAT TO DO)" and "dial rdma 127.0.0.1:1: ...".
	_, lwhy, _ := strings.Cut(err.Error(), ": ")
	_, dwhy, _ := strings.Cut(derr.Error(), ": ")
	if lwhy != dwhy || !strings.Contains(lwhy, "(") {
		t.Errorf("RDMAOnly Listen says %q, a dial %q: want the same words, with what to do", lwhy, dwhy)
	}

	var calls []*pool.FallbackError
	l, err := pool.Listen("127.0.0.1:0", &pool.ListenOptions{OnFallback: func(fe *pool.FallbackError) { calls = append(calls, fe) }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	st := l.Stats()
	if len(calls) != 1 || st.RDMA || st.RDMAOff != calls[0] || l.RDMAAddr() != nil {
		t.Fatalf("Auto without RDMA: OnFallback %v, Stats %+v; want one call, the error in Stats", calls, st)
	}
	if r := st.RDMAOff.Reason; r != pool.ReasonNoDevice && r != pool.ReasonLibraries {
		t.Errorf("reason %q; want %q or %q", r, pool.ReasonNoDevice, pool.ReasonLibraries)
	}
	if !strings.Contains(st.RDMAOff.Error(), lwhy) {
		t.Errorf("Auto says %q; want RDMAOnly's words %q", st.RDMAOff, lwhy)
	}
	// TCP serves.
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if tr := sc.(pool.Conn).Transport(); tr != pool.TCP {
		t.Errorf("accepted over %s", tr)
	}
	if st := l.Stats(); st.Accepted[pool.TCP] != 1 || st.Accepted[pool.RDMA] != 0 || len(calls) != 1 {
		t.Errorf("Stats %+v, %d OnFallback calls; want one TCP client, one call", st, len(calls))
	}
}

// TestListenOptions: Listen rejects a policy it does not know and an
// address without a port; TCPOnly does not listen on RDMA and gives no
// reason (none was asked for).
func TestListenOptions(t *testing.T) {
	if _, err := pool.Listen("127.0.0.1:0", &pool.ListenOptions{Policy: pool.Policy(9)}); err == nil {
		t.Error("Listen with Policy(9) succeeded")
	}
	if _, err := pool.Listen("127.0.0.1", nil); err == nil {
		t.Error("Listen without a port succeeded")
	}
	l, err := pool.Listen("127.0.0.1:0", &pool.ListenOptions{Policy: pool.TCPOnly})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if st := l.Stats(); st.RDMA || st.RDMAOff != nil || l.RDMAAddr() != nil || l.Addr().Network() != "tcp" {
		t.Errorf("TCPOnly: Stats %+v, RDMAAddr %v, Addr %v", st, l.RDMAAddr(), l.Addr())
	}
}
