package qp_test

import (
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/qp"
)

// TestReaderOwnDataNoSelfSignal: a reader that finds its data in its own
// inline poll leaves its rxNotify unsignalled: it reads the data next, and
// a signal would only make its next park return at once (the second spin
// of a reader whose last wait did not park is rxSpun's). A round trip may
// still leave rxNotify signalled when another
// poller handed its reply out before the reader looked: here only the
// client's own reactor can (a poll by its writer, inside Write, comes
// before the write that the reply answers), and the reactor counts what it
// handed out. The test takes the signal after each round trip, so that one
// the reader never parked on is not counted again in the next.
func TestReaderOwnDataNoSelfSignal(t *testing.T) {
	// Both ends spin: leave a P to the netpoller beside them (see
	// TestReactorLeavesPollingOwners).
	if runtime.GOMAXPROCS(0) < 3 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	}
	e := newEnv(t, &qp.Options{SpinWait: time.Second, RecvBufferSize: 16 << 10})
	e.ownCQ() // the client's CQ is its own reactor's, apart from the server's
	cli, srv := e.pair()
	go echo(srv)
	defer cli.Close()
	cli.SetDeadline(time.Now().Add(60 * time.Second))
	r := e.dial.Reactor
	const rounds = 200
	msg := make([]byte, 100)
	signalled := 0
	start := r.Stats().Completions
	for i := range rounds {
		if _, err := cli.Write(msg); err != nil {
			t.Fatalf("round trip %d: %v", i, err)
		}
		if _, err := io.ReadFull(cli, msg); err != nil {
			t.Fatalf("round trip %d: %v", i, err)
		}
		if cli.TakeRxSignal() {
			signalled++
		}
	}
	byReactor := r.Stats().Completions - start
	t.Logf("%d of %d round trips left the reader's rxNotify signalled; the client's reactor handed out %d completions", signalled, rounds, byReactor)
	if uint64(signalled) > byReactor {
		t.Errorf("%d round trips left their rxNotify signalled, but the reactor handed out only %d completions: a reader signalled itself", signalled, byReactor)
	}
}
