package pool

import (
	"context"
	"net"
	"os"
	"syscall"
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

// TestNetpollHealthySignals: a signal arriving while Healthy looks (the
// runtime preempts goroutines with SIGURG) does not make an idle
// connection look unhealthy: poll(2) interrupted is asked again.
func TestNetpollHealthySignals(t *testing.T) {
	peers := make(chan net.Conn, 1)
	s := testutil.NewServer(t, func(c net.Conn) { peers <- c })
	c, err := dialNetpoll(context.Background(), nil, s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	defer (<-peers).Close()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				_ = syscall.Kill(os.Getpid(), syscall.SIGURG)
			}
		}
	}()
	bad := 0
	const looks = 200000
	for range looks {
		if !c.Healthy() {
			bad++
		}
	}
	close(stop)
	<-done
	if bad > 0 {
		t.Errorf("%d of %d looks at an idle connection under signals found it unhealthy", bad, looks)
	}
}
