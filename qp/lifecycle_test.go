package qp_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/qp"
)

// These tests drive the races of a connection's life (qp/life.go) on real
// connections: Close during a Lease, the peer's close during a Reserve,
// and the QP's error before and after the peer's disconnect. Their time
// limits only catch a hang; they assert events and states.

// waitUntil waits until cond holds, failing the test after 30 s (a hang, not
// a measurement).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
	}
}

// returns runs f on a goroutine and returns its error, failing the test
// if it does not return within 30 s (a hang).
func returns(t *testing.T, what string, f func() error) error {
	t.Helper()
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	select {
	case err := <-ch:
		return err
	case <-time.After(30 * time.Second):
		t.Fatalf("%s still running after 30 s", what)
		return nil
	}
}

// TestLifeCloseDuringLease: Close returns while a Lease is held; the
// leased bytes stay valid and the teardown waits for Release; after it,
// everything is freed, calls fail with net.ErrClosed and the peer sees
// the close.
func TestLifeCloseDuringLease(t *testing.T) {
	e := newEnv(t, &qp.Options{RecvBufferSize: 16 << 10})
	cli, srv := e.pair()
	defer cli.Close()
	if _, err := cli.Write([]byte("abc")); err != nil {
		t.Fatal(err)
	}
	srv.SetReadDeadline(time.Now().Add(20 * time.Second))
	b, err := srv.Lease()
	if err != nil || string(b) != "abc" {
		t.Fatalf("Lease: %q, %v", b, err)
	}
	if err := returns(t, "Close with a Lease held", srv.Close); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(srv.Life(), "closed/") {
		t.Errorf("after Close: life %s, want closed", srv.Life())
	}
	if srv.TornDown() {
		t.Fatal("torn down while the Lease is held")
	}
	if string(b) != "abc" {
		t.Fatalf("the leased bytes changed to %q before Release", b)
	}
	if err := srv.Release(len(b)); err != nil {
		t.Errorf("Release after Close: %v", err)
	}
	waitUntil(t, "the teardown after Release", srv.TornDown)
	if _, err := srv.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read after Close and Release: %v, want net.ErrClosed", err)
	}
	cli.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := cli.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the peer's Read: %v, want io.EOF", err)
	}
}

// TestLifeCloseRacesLease: Close at the moment a Lease takes (or waits
// for) its data. Either the Lease fails with net.ErrClosed, or it returns
// the data and the teardown waits for its Release; Close returns in both
// cases, and everything is freed. Each outcome is counted.
func TestLifeCloseRacesLease(t *testing.T) {
	e := newEnv(t, &qp.Options{RecvBufferSize: 16 << 10})
	leased, refused := 0, 0
	for i := range 20 {
		cli, srv := e.pair()
		if i%2 == 0 { // half with data waiting, half with the Lease waiting for it
			if _, err := cli.Write([]byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		srv.SetReadDeadline(time.Now().Add(30 * time.Second))
		type res struct {
			b   []byte
			err error
		}
		got := make(chan res, 1)
		started := make(chan struct{})
		go func() {
			close(started)
			b, err := srv.Lease()
			got <- res{b, err}
		}()
		<-started
		if i%4 < 2 {
			runtime.Gosched() // the Lease a little ahead, half the time
		}
		if err := returns(t, "Close racing a Lease", srv.Close); err != nil {
			t.Fatal(err)
		}
		r := <-got
		switch {
		case r.err == nil:
			leased++
			if string(r.b) != "x" {
				t.Errorf("leased %q, want x", r.b)
			}
			if err := srv.Release(len(r.b)); err != nil {
				t.Errorf("Release: %v", err)
			}
		case errors.Is(r.err, net.ErrClosed):
			refused++
		default:
			t.Errorf("Lease racing Close: %v, want the data or net.ErrClosed", r.err)
		}
		waitUntil(t, "the teardown", srv.TornDown)
		cli.Close()
	}
	t.Logf("of 20 Leases racing Close, %d took the data and %d failed with net.ErrClosed", leased, refused)
}

// TestLifePeerCloseDuringReserve: the peer closes while a reservation is
// held (its Commit returns, the next Write fails with ErrPeerGone), and
// while a Reserve waits for room in the peer's buffer (it fails with
// ErrPeerGone).
func TestLifePeerCloseDuringReserve(t *testing.T) {
	t.Run("held", func(t *testing.T) {
		e := newEnv(t, &qp.Options{RecvBufferSize: 16 << 10})
		cli, srv := e.pair()
		defer cli.Close()
		b, err := cli.Reserve(3)
		if err != nil {
			t.Fatal(err)
		}
		copy(b, "abc")
		srv.Close()
		waitPeerClosed(t, cli)
		// The Commit posts to a QP the disconnect moved to the error
		// state: the provider flushes the write, or refuses it, which
		// fails the connection.
		cerr := returns(t, "Commit after the peer closed", func() error { return cli.Commit(3) })
		t.Logf("Commit after the peer closed: %v", cerr)
		_, err = cli.Write([]byte("x"))
		if cerr == nil && !errors.Is(err, qp.ErrPeerGone) || cerr != nil && err == nil {
			t.Errorf("Write after the peer closed (Commit: %v): %v, want ErrPeerGone", cerr, err)
		}
		if !cli.PeerClosed() {
			t.Errorf("life %s, want the peer closed", cli.Life())
		}
	})
	t.Run("waiting", func(t *testing.T) {
		e := newEnv(t, &qp.Options{RecvBufferSize: 16 << 10})
		cli, srv := e.pair()
		defer cli.Close()
		// Fill the server's buffer, which it never reads: the next
		// Reserve waits for a re-arm.
		cli.SetWriteDeadline(time.Now().Add(20 * time.Second))
		if _, err := cli.Write(make([]byte, 16<<10)); err != nil {
			t.Fatal(err)
		}
		cli.SetWriteDeadline(time.Time{})
		reserved := make(chan error, 1)
		go func() {
			b, err := cli.Reserve(1)
			if err == nil {
				cli.Commit(0)
				err = fmt.Errorf("Reserve found %d bytes of room in a full buffer", len(b))
			}
			reserved <- err
		}()
		srv.Close()
		select {
		case err := <-reserved:
			if !errors.Is(err, qp.ErrPeerGone) {
				t.Errorf("Reserve waiting when the peer closed: %v, want ErrPeerGone", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a waiting Reserve did not end when the peer closed")
		}
	})
}

// TestLifeQPErrorBeforeDisconnect: the client's QP goes to the error state
// (a fault, BreakQP) before any disconnect: the link is flushed, and a
// Read waits; the peer's close then drains it (the grace timer is set to
// an hour, so only the DISCONNECTED can), and the Read returns io.EOF.
func TestLifeQPErrorBeforeDisconnect(t *testing.T) {
	// The server's Close lingers (for up to CloseLinger) on what it
	// sent to the broken QP.
	opts := &qp.Options{RecvBufferSize: 16 << 10, CloseLinger: 100 * time.Millisecond}
	qp.SetQPDownGrace(opts, time.Hour)
	e := newEnv(t, opts)
	cli, srv := e.pair()
	defer cli.Close()
	checkOne(t, srv, cli)
	cli.BreakQP()
	waitUntil(t, "the flush after the QP's error", cli.QPDown)
	if cli.PeerClosed() || cli.Life() != "open/flushed" {
		t.Fatalf("after the QP's error: life %s, want open/flushed", cli.Life())
	}
	read := make(chan error, 1)
	go func() {
		_, err := cli.Read(make([]byte, 1))
		read <- err
	}()
	srv.Close()
	select {
	case err := <-read:
		if err != io.EOF {
			t.Errorf("Read after the QP's error and the peer's close: %v, want io.EOF", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the Read did not end after the peer's close")
	}
	if cli.Life() != "open/draining" {
		t.Errorf("life %s, want open/draining", cli.Life())
	}
	if _, err := cli.Write([]byte("x")); !errors.Is(err, qp.ErrPeerGone) {
		t.Errorf("Write: %v, want ErrPeerGone", err)
	}
}

// TestLifeQPErrorAfterDisconnect: the peer's DISCONNECTED comes before
// the flush it causes (the flush is held back here, with the CQ's
// completions): the link is peer-closed, writes fail at once; once the
// completions go, the flush drains it (the grace timer is set to an hour)
// and a Read returns io.EOF.
func TestLifeQPErrorAfterDisconnect(t *testing.T) {
	opts := &qp.Options{RecvBufferSize: 16 << 10, SpinWait: -1}
	qp.SetQPDownGrace(opts, time.Hour)
	e := newEnv(t, opts)
	e.ownCQ()
	cli, srv := e.pair()
	defer cli.Close()
	release := sync.OnceFunc(cli.HoldCompletions()) // before Close, if the test ends early
	defer release()
	srv.Close()
	waitPeerClosed(t, cli)
	if cli.QPDown() || cli.Life() != "open/peer-closed" {
		t.Fatalf("with the completions held: life %s, want open/peer-closed", cli.Life())
	}
	if _, err := cli.Write([]byte("x")); !errors.Is(err, qp.ErrPeerGone) {
		t.Errorf("Write after the peer closed: %v, want ErrPeerGone", err)
	}
	release()
	cli.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := cli.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("Read after the flush: %v, want io.EOF", err)
	}
	if cli.Life() != "open/draining" {
		t.Errorf("life %s, want open/draining", cli.Life())
	}
}

// TestLifeGraceStandsIn: when the other half of the link's going down
// never comes, the grace timer stands in for it: a QP error no rdma_cm
// event explains is taken as the peer's close, and a peer's close whose
// flush is never handled (held back here) ends the reads.
func TestLifeGraceStandsIn(t *testing.T) {
	t.Run("no-disconnect", func(t *testing.T) {
		opts := &qp.Options{RecvBufferSize: 16 << 10, CloseLinger: 100 * time.Millisecond}
		qp.SetQPDownGrace(opts, 50*time.Millisecond)
		e := newEnv(t, opts)
		cli, srv := e.pair()
		defer srv.Close()
		defer cli.Close()
		checkOne(t, srv, cli)
		cli.BreakQP()
		cli.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := cli.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("Read after a QP error that no event explains: %v, want io.EOF", err)
		}
		if cli.Life() != "open/draining" {
			t.Errorf("life %s, want open/draining", cli.Life())
		}
		if _, err := cli.Write([]byte("x")); !errors.Is(err, qp.ErrPeerGone) {
			t.Errorf("Write: %v, want ErrPeerGone", err)
		}
	})
	t.Run("no-flush", func(t *testing.T) {
		opts := &qp.Options{RecvBufferSize: 16 << 10, SpinWait: -1}
		qp.SetQPDownGrace(opts, 50*time.Millisecond)
		e := newEnv(t, opts)
		e.ownCQ()
		cli, srv := e.pair()
		defer cli.Close()
		release := sync.OnceFunc(cli.HoldCompletions()) // before Close, if the test ends early
		defer release()
		srv.Close()
		waitUntil(t, "the grace after the peer's close", func() bool { return cli.PeerClosed() && cli.QPDown() })
		cli.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := cli.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("Read with the flush held: %v, want io.EOF", err)
		}
		release()
	})
}
