package qp_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/qp"
)

// A server busy elsewhere (valkey-server running a slow command, or
// forking) does not post again the receives our messages take. Once those
// it had posted are used, its QP answers our next message with an RNR NAK,
// and our QP must retry it (rnr_retry 7: without end) rather than fail:
// whatever the server said in its REP, since valkey-server says 0.

// rnrNAKs is the number of RNR NAKs the host's RDMA devices have received
// (soft-RoCE's rcvd_rnr_err counter), and false where no device counts them.
func rnrNAKs() (int64, bool) {
	files, _ := filepath.Glob("/sys/class/infiniband/*/ports/*/hw_counters/rcvd_rnr_err")
	var n int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
			n += v
		}
	}
	return n, len(files) > 0
}

// writeThroughStall writes msgs on c, one Write each, from another goroutine,
// while c's peer is stalled, and calls resume once our QP has been answered
// with RNR NAKs at least twice (so it has retried: a QP that does not fails
// at the first) or has failed. The messages must be more than twice the
// receives the peer posts, so that the writer is still writing then. It
// returns the writer's error, after resume.
func writeThroughStall(t *testing.T, c *qp.Conn, msgs [][]byte, resume func()) error {
	t.Helper()
	before, counted := rnrNAKs()
	if !counted {
		t.Log("no device counts RNR NAKs (rcvd_rnr_err): the stall is ended after the writer is halfway, plus three RNR timers")
	}
	var wrote atomic.Int64
	done := make(chan error, 1)
	go func() {
		for i, m := range msgs {
			if _, err := c.Write(m); err != nil {
				done <- fmt.Errorf("write %d of %d into a stalled server: %w", i, len(msgs), err)
				return
			}
			wrote.Add(1)
		}
		done <- nil
	}()
	for stalled := true; stalled; {
		select {
		case err := <-done:
			resume()
			if err == nil {
				err = fmt.Errorf("all %d writes were posted before the stall was seen: too few to stall", len(msgs))
			}
			return err
		case <-time.After(10 * time.Millisecond):
		}
		if n, _ := rnrNAKs(); counted && n-before >= 2 {
			stalled = false
		}
		if !counted && wrote.Load() > int64(len(msgs)/2) {
			time.Sleep(3 * 655 * time.Millisecond) // rdma_cm's RNR timer
			stalled = false
		}
	}
	resume()
	return <-done
}

// TestStalledServer: our client against our own server, whose completions
// go unhandled for a while (held here), must lose no write.
func TestStalledServer(t *testing.T) {
	e := newEnv(t, &qp.Options{})
	e.ownCQ()
	cli, srv := e.pair()
	defer cli.Close()
	defer srv.Close()
	checkOne(t, cli, srv) // each has the other's RegisterXferMemory
	cli.SetDeadline(time.Time{})
	srv.SetDeadline(time.Time{})
	const n = 3000 // the server posts 1023 receives
	msgs := make([][]byte, n)
	want := make([]byte, 0, 8*n)
	for i := range msgs {
		msgs[i] = binary.BigEndian.AppendUint64(nil, uint64(i))
		want = append(want, msgs[i]...)
	}
	release := srv.HoldCompletions()
	if err := writeThroughStall(t, cli, msgs, release); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(srv, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		i := 0
		for got[i] == want[i] {
			i++
		}
		t.Fatalf("the server read other bytes than were written, from byte %d (message %d)", i, i/8)
	}
}
