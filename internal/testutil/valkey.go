package testutil

import (
	"bytes"
	"net"
	"os/exec"
	"sync"
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
	return StartValkey(tb)
}

// valkeyStartWait bounds how long a valkey-server that neither listens nor
// exits may take: a hang detector, not a measure (one starts in
// milliseconds; a loaded machine has taken seconds).
const valkeyStartWait = time.Minute

// StartValkey starts Debian's valkey-server as ValkeyServer does, with
// args appended to its command line (a cluster node's, say), and returns
// its address once it accepts connections. A server that exits first (the
// port, free when picked, taken meanwhile by another test's) is started
// again on another port; one that keeps failing fails tb with its output.
func StartValkey(tb testing.TB, args ...string) string {
	tb.Helper()
	bin, err := exec.LookPath("valkey-server")
	Require(tb, err == nil, "valkey-server is not installed (scripts/deps.sh test installs it from bookworm-backports)")
	var last string
	for range 5 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		_, port, _ := net.SplitHostPort(addr)
		var out SyncBuffer
		cmd := exec.Command(bin, append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no"}, args...)...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		kill := func() { cmd.Process.Kill(); <-exited }
		deadline := time.Now().Add(valkeyStartWait)
		for {
			if c, err := net.Dial("tcp", addr); err == nil {
				c.Close()
				tb.Cleanup(kill)
				return addr
			}
			select {
			case <-exited:
			case <-time.After(20 * time.Millisecond):
				if time.Now().Before(deadline) {
					continue
				}
				kill()
				tb.Fatalf("valkey-server neither listened on %s nor exited within %v: %s", addr, valkeyStartWait, out.String())
			}
			break
		}
		last = out.String()
	}
	tb.Fatalf("valkey-server exited before it listened, five times; the last said: %s", last)
	return ""
}

// SyncBuffer is a bytes.Buffer that a process's (or a goroutine's) output
// and the test may use at once.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
