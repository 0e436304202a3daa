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
// a signal would only make its next park return at once, for another round
// of spinning. A reader that spins for up to a second finds nearly every
// reply itself (the reactor leaves the CQ to it); only a reply the reactor
// handled before the reader began to poll is signalled.
func TestReaderOwnDataNoSelfSignal(t *testing.T) {
	// Both ends spin: leave a P to the netpoller beside them (see
	// TestReactorLeavesPollingOwners).
	if runtime.GOMAXPROCS(0) < 3 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(3))
	}
	e := newEnv(t, &qp.Options{SpinWait: time.Second, RecvBufferSize: 16 << 10})
	e.ownCQ() // the client's reader is the one poller of its CQ
	cli, srv := e.pair()
	go echo(srv)
	defer cli.Close()
	cli.SetDeadline(time.Now().Add(60 * time.Second))
	const rounds = 200
	msg := make([]byte, 100)
	signalled := 0
	for i := range rounds {
		if _, err := cli.Write(msg); err != nil {
			t.Fatalf("round trip %d: %v", i, err)
		}
		if _, err := io.ReadFull(cli, msg); err != nil {
			t.Fatalf("round trip %d: %v", i, err)
		}
		if cli.RxSignalled() {
			signalled++
		}
	}
	t.Logf("%d of %d reads left the reader's rxNotify signalled", signalled, rounds)
	if signalled > rounds/2 {
		t.Errorf("%d of %d reads that found their reply left their rxNotify signalled for themselves", signalled, rounds)
	}
}
