//go:build unix

package qp_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/mr"
	"github.com/seed54442f1a/rdmapool/qp"
)

// memlockChildEnv runs the test binary as the child of a memlock test:
// "dial ADDR" or "listen IP".
const memlockChildEnv = "RDMAPOOL_QP_TEST_MEMLOCK"

// memlockChild starts the test binary as nobody (root may lock any amount of
// memory) with mode; the child lowers RLIMIT_MEMLOCK to 64 KiB itself.
func memlockChild(t *testing.T, mode string) *exec.Cmd {
	t.Helper()
	return rdmatest.AsNobody(t, memlockChildEnv+"="+mode)
}

// TestDialMemlockExhausted: a client that cannot register its buffers gets
// an error matching mr.ErrMemlock from Dial, not a crash; the listener never
// hears of it and serves the next client.
func TestDialMemlockExhausted(t *testing.T) {
	e := newEnv(t, nil)
	cmd := memlockChild(t, "dial "+e.l.Addr().String())
	out, err := cmd.CombinedOutput()
	t.Logf("child: %s", out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if !strings.Contains(string(out), "RLIMIT_MEMLOCK") {
		t.Errorf("the child's Dial error does not name RLIMIT_MEMLOCK")
	}
	cli, srv := e.pair()
	defer srv.Close()
	defer cli.Close()
	go echo(srv)
	checkEcho(t, cli, randBytes(4096, 1))
}

// TestAcceptMemlockExhausted: a server that cannot register a new
// connection's buffers rejects it; the client's Dial fails promptly and the
// server process lives on, its listener still open.
func TestAcceptMemlockExhausted(t *testing.T) {
	e := newEnv(t, nil) // for the address and the leak check of this process
	cmd := memlockChild(t, "listen "+e.addr.String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	}()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		cmd.Wait()
		t.Fatalf("the child printed no address: %s", stderr.String())
	}
	addr := lines.Text()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	c, err := qp.Dial(ctx, addr, nil)
	if err == nil {
		c.Close()
		t.Fatal("Dial to a server out of locked memory succeeded")
	}
	t.Logf("Dial failed in %v: %v", time.Since(start).Round(time.Millisecond), err)
	if ctx.Err() != nil {
		t.Errorf("Dial waited for its context instead of being rejected")
	}
	stdin.Close()
	rest, _ := io.ReadAll(stdout)
	werr := cmd.Wait()
	t.Logf("child: %s%s", rest, stderr.String())
	if werr != nil {
		t.Errorf("the server process: %v", werr)
	}
}

// underLowMemlock is the child of the memlock tests: with RLIMIT_MEMLOCK at
// 64 KiB, "dial ADDR" dials and succeeds (exit 0) if the error matches
// mr.ErrMemlock; "listen IP" listens, prints its address, and after its
// standard input closes, closes the listener and exits 0.
func underLowMemlock(mode string) int {
	if err := rdmatest.LowerMemlock(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	verb, arg, _ := strings.Cut(mode, " ")
	switch verb {
	case "dial":
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := qp.Dial(ctx, arg, nil)
		if err == nil {
			c.Close()
			fmt.Println("Dial under a 64 KiB memlock limit succeeded")
			return 1
		}
		fmt.Println(err)
		if !errors.Is(err, mr.ErrMemlock) {
			fmt.Println("the error does not match mr.ErrMemlock")
			return 1
		}
		return 0
	case "listen":
		ip, err := netip.ParseAddr(arg)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		l, err := qp.Listen(netip.AddrPortFrom(ip, 0).String(), nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "listen:", err)
			return 1
		}
		fmt.Println(l.Addr())
		io.Copy(io.Discard, os.Stdin)
		if err := l.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "close:", err)
			return 1
		}
		fmt.Println("listener closed")
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown mode", mode)
	return 1
}
