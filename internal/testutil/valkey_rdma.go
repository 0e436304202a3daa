package testutil

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ValkeyBuildEnv names a directory holding a local build of valkey-server
// with RDMA as a connection module (make BUILD_RDMA=module): valkey-server,
// valkey-cli and valkey-rdma.so of one build. No Debian package has RDMA,
// so neither the host nor CI has such a build: tests that need one skip
// without this variable, even in CI, and fail (in CI, with RDMAPOOL_STRICT
// and in the VM) or skip (by hand) only when it is set but the build is
// not usable. vm/valkey-rdma.sh sets it in the VM.
const ValkeyBuildEnv = "RDMAPOOL_VALKEY_DIR"

// ValkeyBuild is the valkey build in $RDMAPOOL_VALKEY_DIR.
type ValkeyBuild struct {
	Dir    string
	Server string // valkey-server
	CLI    string // valkey-cli
	Module string // valkey-rdma.so
}

// RequireValkeyBuild returns the build that RDMAPOOL_VALKEY_DIR names. The
// variable unset, the test skips, saying so (a local build is no CI
// prerequisite); set to a directory that lacks one of the three files, or
// whose valkey-server does not run, the test fails in CI, with
// RDMAPOOL_STRICT=1 and inside the VM, and skips otherwise.
func RequireValkeyBuild(tb testing.TB) *ValkeyBuild {
	tb.Helper()
	dir := os.Getenv(ValkeyBuildEnv)
	if dir == "" {
		tb.Skipf("skipped: needs a valkey-server built with RDMA (make BUILD_RDMA=module): set %s to a directory with valkey-server, valkey-cli and valkey-rdma.so; vm/valkey-rdma.sh runs this test in the VM", ValkeyBuildEnv)
	}
	broken := func(format string, args ...any) {
		tb.Helper()
		why := fmt.Sprintf("%s=%s: ", ValkeyBuildEnv, dir) + fmt.Sprintf(format, args...)
		if Strict() || InVM() {
			tb.Fatalf("set but not usable: %s", why)
		}
		tb.Skipf("skipped: %s (set RDMAPOOL_STRICT=1 to make this a failure)", why)
	}
	b := &ValkeyBuild{
		Dir:    dir,
		Server: filepath.Join(dir, "valkey-server"),
		CLI:    filepath.Join(dir, "valkey-cli"),
		Module: filepath.Join(dir, "valkey-rdma.so"),
	}
	for _, f := range []string{b.Server, b.CLI, b.Module} {
		if st, err := os.Stat(f); err != nil {
			broken("%v", err)
		} else if st.IsDir() {
			broken("%s is a directory", f)
		}
	}
	if out, err := exec.Command(b.Server, "--version").CombinedOutput(); err != nil {
		broken("%s --version: %v: %s", b.Server, err, bytes.TrimSpace(out))
	}
	return b
}

// Version returns the first line of valkey-server --version.
func (b *ValkeyBuild) Version() string {
	out, _ := exec.Command(b.Server, "--version").Output()
	v, _, _ := strings.Cut(string(out), "\n")
	return v
}

// rdmaOn returns the ValkeyCluster.rdma of the build: a node on TCP port p
// also serves RDMA on host, port p+1 (RDMA ports are not TCP's: the two
// never collide, and the nodes' TCP ports differ, so their RDMA ports do).
func (b *ValkeyBuild) rdmaOn(host string) func(port int) (string, []string) {
	return func(port int) (string, []string) {
		rp := strconv.Itoa(port + 1)
		// Connections come and go in the log (verbose), which a crash
		// report does not bury in a memory test.
		return net.JoinHostPort(host, rp), []string{"--loglevel", "verbose", "--crash-memcheck-enabled", "no",
			"--loadmodule", b.Module, "bind=" + host, "port=" + rp}
	}
}

// StartValkeyRDMA starts the build's valkey-server, not in cluster mode,
// with TCP and RDMA on host (an address of an RDMA device) and returns it
// once it is ready for both; its RDMA port is not its TCP port. It is
// killed when tb ends, and its log printed if tb failed.
func StartValkeyRDMA(tb testing.TB, b *ValkeyBuild, host string) *ValkeyNode {
	tb.Helper()
	c := &ValkeyCluster{tb: tb, cli: b.CLI, bin: b.Server, host: host, noCluster: true, rdma: b.rdmaOn(host)}
	c.startNodes(1)
	return c.Nodes[0]
}

// StartValkeyRDMACluster is StartValkeyCluster with the build's
// valkey-server and valkey-cli, each node on host with the RDMA module on a
// port of its own (RDMAAddrs); the cluster is created over TCP.
func StartValkeyRDMACluster(tb testing.TB, b *ValkeyBuild, host string, masters, replicas int) *ValkeyCluster {
	tb.Helper()
	c := &ValkeyCluster{tb: tb, cli: b.CLI, bin: b.Server, host: host, rdma: b.rdmaOn(host)}
	c.startNodes(masters * (1 + replicas))
	c.create(replicas)
	return c
}

// RDMAAddrs maps each node's TCP address to its RDMA address, for
// pool.RDMAAddrTable.
func (c *ValkeyCluster) RDMAAddrs() map[string]string {
	m := map[string]string{}
	for _, nd := range c.Nodes {
		if nd.RDMAAddr != "" {
			m[nd.Addr] = nd.RDMAAddr
		}
	}
	return m
}

// waitLogged waits until the file at path contains line, the process
// exits (exited closes) or timeout passes.
func waitLogged(path, line string, exited <-chan struct{}, timeout time.Duration) error {
	end := time.Now().Add(timeout)
	for {
		if b, err := os.ReadFile(path); err == nil && bytes.Contains(b, []byte(line)) {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before it logged %q", line)
		default:
		}
		if time.Now().After(end) {
			return fmt.Errorf("%q not logged after %v", line, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// logEnd returns the end of a valkey-server log: its last 3000 bytes, or,
// when it crashed, what it logged before and the start of the report.
func logEnd(b []byte) []byte {
	if i := bytes.Index(b, []byte("=== VALKEY BUG REPORT START")); i >= 0 {
		return b[max(0, i-3000):min(len(b), i+2500)]
	}
	return b[max(0, len(b)-3000):]
}
