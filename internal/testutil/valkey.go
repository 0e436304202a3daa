package testutil

import (
	"net"
	"os/exec"
	"testing"
	"time"
)

// ValkeyServer starts Debian's valkey-server on a free loopback port, with
// no persistence, for the test or benchmark tb, and returns its address;
// it is killed when tb ends. Without valkey-server the test fails in CI and
// skips otherwise (scripts/deps.sh test installs it from
// bookworm-backports).
func ValkeyServer(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("valkey-server")
	Require(tb, err == nil, "valkey-server is not installed (scripts/deps.sh test installs it from bookworm-backports)")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no")
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for i := 0; ; i++ {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			return addr
		}
		if i > 200 {
			tb.Fatalf("valkey-server did not start on %s", addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
