package pool

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// TestNetpollHealthy: a netpoll connection is healthy while open with
// nothing to read, not with data waiting or once its peer has closed, and
// the look allocates nothing.
func TestNetpollHealthy(t *testing.T) {
	peers := make(chan net.Conn, 1)
	s := testutil.NewServer(t, func(c net.Conn) { peers <- c })
	c, err := dialNetpoll(context.Background(), nil, s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer := <-peers
	if !c.Healthy() {
		t.Error("a fresh connection is not healthy")
	}
	if n := testing.AllocsPerRun(100, func() { c.Healthy() }); n != 0 {
		t.Errorf("Healthy allocates %v times", n)
	}
	peer.Write([]byte("x"))
	waitFor(t, func() bool { return !c.Healthy() }, "data waiting")
	c.Read(make([]byte, 1))
	if !c.Healthy() {
		t.Error("not healthy once the data is read")
	}
	peer.Close()
	waitFor(t, func() bool { return !c.Healthy() }, "the peer closed")
}

func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("still healthy with %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}
