package qp_test

import (
	"bytes"
	"crypto/sha256"
	"io"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/qp"
)

// idlePinnedMax is the most an idle connection with the default options may
// keep registered.
const idlePinnedMax = 256 << 10

// TestPinnedFollowsData: with the default options, both ends of an idle
// connection pin at most 256 KiB; a 16 MiB value, either way, grows the
// writer's send staging and the reader's receive buffer; once idle the
// staging shrinks back (at a keepalive), and the receive buffer at the
// re-arm that follows a slow fill of small writes. The data arrives intact
// throughout. The keepalives are the test's own (Keepalive), so that
// nothing shrinks before it looks, however slow the machine.
func TestPinnedFollowsData(t *testing.T) {
	e := newEnv(t, &qp.Options{KeepaliveInterval: time.Hour})
	cli, srv := e.pair()
	defer cli.Close()
	defer srv.Close()
	small := []byte("PING\r\n")
	for _, d := range []struct{ from, to *qp.Conn }{{cli, srv}, {srv, cli}} {
		transfer(t, d.from, d.to, small, nil)
	}
	checkPinned(t, "idle after a round trip", cli, srv, 0, idlePinnedMax)

	big := randBytes(16<<20, 25)
	for _, d := range []struct {
		name     string
		from, to *qp.Conn
	}{{"client to server", cli, srv}, {"server to client", srv, cli}} {
		t.Run(d.name, func(t *testing.T) {
			transfer(t, d.from, d.to, big, func() {
				// The writer's staging grew to the reader's buffer,
				// which grew past its start.
				pw, pr := d.from.Pinned(), d.to.Pinned()
				t.Logf("after 16 MiB: the writer pins %d KiB, the reader %d KiB", pw>>10, pr>>10)
				if pw <= idlePinnedMax+256<<10 {
					t.Errorf("writer pins %d KiB after 16 MiB: its staging did not grow", pw>>10)
				}
				if pr <= idlePinnedMax {
					t.Errorf("reader pins %d KiB after 16 MiB: its receive buffer did not grow", pr>>10)
				}
			})
			// Idle: the staging shrinks at a keepalive.
			waitPinned(t, d.from, func(p int) bool { return p <= idlePinnedMax }, "the writer's staging to shrink")
			// Slow fills of small writes: each re-arm after one
			// shrinks the receive buffer, back to where it started.
			for i := 0; ; i++ {
				room, size := d.to.RecvRoom()
				t.Logf("receive buffer of %d KiB, %d KiB free", size>>10, room>>10)
				if size <= 64<<10 {
					break
				}
				if i == 5 {
					t.Fatalf("receive buffer still %d KiB after %d slow fills", size>>10, i)
				}
				time.Sleep(1100 * time.Millisecond)
				piece := (room + 15) / 16 // more writes than a large value's
				for room > 0 {
					n := min(piece, room)
					transfer(t, d.from, d.to, bytes.Repeat([]byte{'x'}, n), nil)
					room -= n
				}
			}
			for _, c := range []*qp.Conn{cli, srv} {
				waitPinned(t, c, func(p int) bool { return p <= idlePinnedMax }, "idle again")
			}
		})
	}
}

// transfer writes data from one end and reads it at the other, runs after
// (if not nil), then compares.
func transfer(t *testing.T, from, to *qp.Conn, data []byte, after func()) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := from.Write(data)
		errc <- err
	}()
	got := make([]byte, len(data))
	if _, err := io.ReadFull(to, got); err != nil {
		t.Fatalf("reading %d bytes: %v", len(data), err)
	}
	if err := <-errc; err != nil {
		t.Fatalf("writing %d bytes: %v", len(data), err)
	}
	if after != nil {
		after()
	}
	if sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("%d bytes arrived changed", len(data))
	}
}

// waitPinned sends keepalives from c until ok(c.Pinned()), for up to 10 s.
func waitPinned(t *testing.T, c *qp.Conn, ok func(int) bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.Keepalive()
		time.Sleep(50 * time.Millisecond) // for its completion
		p := c.Pinned()
		if ok(p) {
			t.Logf("%s: %d KiB", what, p>>10)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: still %d KiB pinned", what, p>>10)
		}
	}
}

// checkPinned checks that both ends pin within [lo, hi] bytes.
func checkPinned(t *testing.T, what string, cli, srv *qp.Conn, lo, hi int) {
	t.Helper()
	for _, c := range []struct {
		name string
		c    *qp.Conn
	}{{"client", cli}, {"server", srv}} {
		p := c.c.Pinned()
		t.Logf("%s: %s pins %d KiB", what, c.name, p>>10)
		if p < lo || p > hi {
			t.Errorf("%s: %s pins %d KiB, want within [%d, %d] KiB", what, c.name, p>>10, lo>>10, hi>>10)
		}
	}
}
