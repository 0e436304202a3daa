//go:build unix

package testutil

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"
)

// FullListener listens on 127.0.0.1 with a backlog of 0 and fills its
// accept queue, so that the kernel drops the SYNs of further connections
// and they hang in connect. If it could not get there, the test cannot
// run: it fails under CI, else skips (Require).
func FullListener(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.CloseOnExec(fd)
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
	hangs := false
	for range 16 {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			var ne net.Error
			hangs = errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded)
			break
		}
		t.Cleanup(func() { c.Close() })
	}
	Require(t, hangs, "could not make a connect hang on 127.0.0.1")
	return addr
}
