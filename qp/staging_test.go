package qp_test

import (
	"bytes"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/qp"
)

// blocker blocks the registrations of more than 64 KiB by one connection
// in the registration hook until release is closed, and says when the
// first one is blocked.
type blocker struct {
	c       *qp.Conn
	entered chan int
	release chan struct{}
}

func newBlocker(c *qp.Conn) *blocker {
	return &blocker{c: c, entered: make(chan int, 1), release: make(chan struct{})}
}

// hangGuard only turns a hang into a failure: a wait it bounds is for an
// event that does not come without a registration if the code is wrong.
const hangGuard = 60 * time.Second

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(hangGuard):
		t.Fatalf("%s: never (a registration holds it)", what)
		panic("unreachable")
	}
}

// roundTrip writes data on from and reads it on to, and says when both are
// done, with the first error.
func roundTrip(from, to *qp.Conn, data []byte) <-chan error {
	done := make(chan error, 2)
	go func() {
		_, err := from.Write(data)
		done <- err
	}()
	go func() {
		got := make([]byte, len(data))
		_, err := io.ReadFull(to, got)
		if err == nil && !bytes.Equal(got, data) {
			err = io.ErrUnexpectedEOF
		}
		done <- err
	}()
	out := make(chan error, 1)
	go func() {
		err := <-done
		if e := <-done; err == nil {
			err = e
		}
		out <- err
	}()
	return out
}

// TestRegistrationHoldsNoWriter: a registration stopped inside its call
// (the hook) holds no writer. While a's staging is growing, a's own Write of
// 1 MiB goes on with the staging it has and completes, and so does a write
// on another connection; while b's peer re-arms its reader into a bigger
// receive buffer, that peer's writer completes a write. Each registration
// then completes, and the data is intact throughout.
func TestRegistrationHoldsNoWriter(t *testing.T) {
	opts := &qp.Options{KeepaliveInterval: time.Hour}
	block := stopRegistrations(opts)
	e := newEnv(t, opts)
	a, aPeer := e.pair()
	defer a.Close()
	defer aPeer.Close()
	b, bPeer := e.pair()
	defer b.Close()
	defer bPeer.Close()
	small := []byte("PING\r\n")
	for _, d := range []struct{ from, to *qp.Conn }{{a, aPeer}, {aPeer, a}, {b, bPeer}, {bPeer, b}} {
		transfer(t, d.from, d.to, small, nil) // every staging ring has its first memory
	}

	// a's staging grows (its peer's buffer grows after the first fill);
	// the registration is stopped.
	ba := newBlocker(a)
	block.Store(ba)
	big := randBytes(1<<20, 37)
	aDone := roundTrip(a, aPeer, big)
	size := waitFor(t, ba.entered, "a's staging to grow")
	t.Logf("a's staging registration of %d KiB is stopped", size>>10)
	if err := waitFor(t, roundTrip(b, bPeer, small), "a write on another connection while a's staging grows"); err != nil {
		t.Fatal(err)
	}
	if err := waitFor(t, aDone, "a's own 1 MiB write while its staging grows"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, pinned(a), "a's locks while its staging grows")
	close(ba.release)
	if err := waitFor(t, roundTrip(a, aPeer, big), "a's next 1 MiB write, with the grown staging"); err != nil {
		t.Fatal(err)
	}

	// bPeer's reader re-arms into a bigger buffer (b fills its 64 KiB in
	// few writes); that registration, under bPeer's read lock, is
	// stopped.
	bb := newBlocker(bPeer)
	block.Store(bb)
	bDone := roundTrip(b, bPeer, big)
	size = waitFor(t, bb.entered, "bPeer's receive buffer to grow")
	t.Logf("bPeer's receive buffer registration of %d KiB is stopped", size>>10)
	if err := waitFor(t, roundTrip(bPeer, b, small), "bPeer's write while its reader re-arms"); err != nil {
		t.Fatal(err)
	}
	// Pinned takes the read and write locks: neither is held.
	waitFor(t, pinned(bPeer), "bPeer's locks while its reader re-arms")
	if err := waitFor(t, roundTrip(aPeer, a, small), "a write on another connection while bPeer's reader re-arms"); err != nil {
		t.Fatal(err)
	}
	close(bb.release)
	block.Store(nil)
	if err := waitFor(t, bDone, "b's 1 MiB write once bPeer re-armed"); err != nil {
		t.Fatal(err)
	}
}

// pinned says when c.Pinned has returned.
func pinned(c *qp.Conn) <-chan int {
	ch := make(chan int, 1)
	go func() { ch <- c.Pinned() }()
	return ch
}

// TestCloseDuringRearmRegistration: a Close while a reader's re-arm
// registers its new buffer (stopped in the hook), with the read lock let go,
// waits for it, frees it, and leaks nothing (the env's check); the Read
// returns.
func TestCloseDuringRearmRegistration(t *testing.T) {
	opts := &qp.Options{KeepaliveInterval: time.Hour}
	block := stopRegistrations(opts)
	e := newEnv(t, opts)
	cli, srv := e.pair()
	defer cli.Close()
	bl := newBlocker(srv)
	block.Store(bl)
	go cli.Write(randBytes(256<<10, 41))
	read := make(chan error, 1)
	go func() {
		_, err := io.ReadFull(srv, make([]byte, 256<<10))
		read <- err
	}()
	waitFor(t, bl.entered, "srv's receive buffer to grow")
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	select {
	case <-closed:
		t.Fatal("Close returned before the teardown, which waits for the registration")
	case <-read:
		t.Fatal("the Read returned with its registration stopped")
	default:
	}
	close(bl.release)
	waitFor(t, read, "the Read once the registration ends")
	waitFor(t, closed, "Close")
}

func setRegHook(h *atomic.Pointer[func(*qp.Conn, int)], f func(*qp.Conn, int)) { h.Store(&f) }

// stopRegistrations sets opts' registration hook to stop, until released,
// a registration of more than 64 KiB by the connection of the blocker
// stored in the pointer it returns (none while it holds nil).
func stopRegistrations(opts *qp.Options) *atomic.Pointer[blocker] {
	block := new(atomic.Pointer[blocker])
	setRegHook(qp.RegisterHook(opts), func(c *qp.Conn, size int) {
		if b := block.Load(); b != nil && b.c == c && size > 64<<10 {
			select {
			case b.entered <- size:
			default:
			}
			<-b.release
		}
	})
	return block
}
