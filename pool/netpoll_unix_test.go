//go:build unix

package pool

import (
	"context"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

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
