//go:build unix

package qp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/qp"
)

const childEnv = "RDMAPOOL_QP_TEST_CHILD"

func TestMain(m *testing.M) {
	if addr := os.Getenv(childEnv); addr != "" {
		os.Exit(streamForever(addr))
	}
	if mode := os.Getenv(memlockChildEnv); mode != "" {
		os.Exit(underLowMemlock(mode))
	}
	os.Exit(m.Run())
}

// streamForever is the child process of TestPeerKilled: it connects and
// writes until it is killed.
func streamForever(addr string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := qp.Dial(ctx, addr, &qp.Options{RecvBufferSize: 16 << 10})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	buf := make([]byte, 4096)
	for {
		if _, err := c.Write(buf); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			return 1
		}
	}
}

// TestPeerKilled: the peer process dies mid-stream (SIGKILL); the next Read
// ends within a bounded time, never hangs.
func TestPeerKilled(t *testing.T) {
	e := newEnv(t, &qp.Options{RecvBufferSize: 64 << 10})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+e.l.Addr().String())
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	srv, err := e.l.AcceptConn(ctxT(t))
	if err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := io.CopyN(io.Discard, srv, 256<<10); err != nil {
		cmd.Process.Kill()
		t.Fatalf("reading from the child: %v", err)
	}
	cmd.Process.Kill()
	start := time.Now()
	srv.SetReadDeadline(time.Now().Add(60 * time.Second))
	_, err = io.Copy(io.Discard, srv)
	t.Logf("after the peer was killed, reading ended in %v with %v", time.Since(start).Round(time.Millisecond), err)
	if err != nil && !errors.Is(err, qp.ErrPeerGone) {
		t.Errorf("read after the peer was killed: %v, want io.EOF or ErrPeerGone", err)
	}
}
