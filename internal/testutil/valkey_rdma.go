package testutil

import (
	"bytes"
	"debug/elf"
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
// with RDMA: valkey-server and valkey-cli of one build (valkey-benchmark
// too, where there is one), and valkey-rdma.so if RDMA is a connection
// module (make BUILD_RDMA=module; 8.0's only way) rather than built in
// (make BUILD_RDMA=yes, 8.1 and later); vm/valkey-build.sh makes one from
// a source tree. No Debian package has RDMA, so neither the host nor CI
// has such a build: tests that need one skip without this variable, even
// in CI, and fail (in CI, with RDMAPOOL_STRICT and in the VM) or skip (by
// hand) only when it is set but the build is not usable. vm/valkey-rdma.sh
// sets it in the VM.
const ValkeyBuildEnv = "RDMAPOOL_VALKEY_DIR"

// RDMAMode is how a valkey build serves RDMA.
type RDMAMode int

const (
	// RDMABuiltin: RDMA built into valkey-server (BUILD_RDMA=yes, 8.1
	// and later), configured with --rdma-bind and --rdma-port.
	RDMABuiltin RDMAMode = iota
	// RDMAModule: the connection module valkey-rdma.so of 8.1 and later,
	// loaded with --loadmodule and configured as RDMABuiltin is.
	RDMAModule
	// RDMAModuleArgs: the connection module of 8.0 and the 2024
	// development tree, which takes its listener as module arguments
	// (--loadmodule valkey-rdma.so bind=IP port=N).
	RDMAModuleArgs
)

func (m RDMAMode) String() string {
	switch m {
	case RDMABuiltin:
		return "built in"
	case RDMAModule:
		return "module"
	case RDMAModuleArgs:
		return "module (bind=, port= arguments)"
	}
	return fmt.Sprintf("RDMAMode(%d)", int(m))
}

// ValkeyBuild is the valkey build in $RDMAPOOL_VALKEY_DIR.
type ValkeyBuild struct {
	Dir       string
	Server    string // valkey-server
	CLI       string // valkey-cli
	Benchmark string // valkey-benchmark, or empty if the build has none
	Module    string // valkey-rdma.so, or empty if RDMA is built in
	Mode      RDMAMode
	// Major, Minor and Patch are valkey-server's version (v=), 255.255.255
	// for a development tree.
	Major, Minor, Patch int
}

// RequireValkeyBuild returns the build that RDMAPOOL_VALKEY_DIR names. The
// variable unset, the test skips, saying so (a local build is no CI
// prerequisite); set to a directory that lacks valkey-server or
// valkey-cli, whose valkey-server does not run, or that has neither
// valkey-rdma.so nor a valkey-server with RDMA built in, the test fails
// in CI, with RDMAPOOL_STRICT=1 and inside the VM, and skips otherwise.
func RequireValkeyBuild(tb testing.TB) *ValkeyBuild {
	tb.Helper()
	dir := os.Getenv(ValkeyBuildEnv)
	if dir == "" {
		tb.Skipf("skipped: needs a valkey-server built with RDMA (vm/valkey-build.sh SRC builds one): set %s to a directory with valkey-server and valkey-cli (and valkey-rdma.so for a module build); vm/valkey-rdma.sh runs this test in the VM", ValkeyBuildEnv)
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
	}
	for _, f := range []string{b.Server, b.CLI} {
		if st, err := os.Stat(f); err != nil {
			broken("%v", err)
		} else if st.IsDir() {
			broken("%s is a directory", f)
		}
	}
	if f := filepath.Join(dir, "valkey-benchmark"); isFile(f) {
		b.Benchmark = f
	}
	out, err := exec.Command(b.Server, "--version").CombinedOutput()
	if err != nil {
		broken("%s --version: %v: %s", b.Server, err, bytes.TrimSpace(out))
	}
	if _, err := fmt.Sscanf(field(string(out), "v="), "%d.%d.%d", &b.Major, &b.Minor, &b.Patch); err != nil {
		broken("%s --version: no version in %q", b.Server, bytes.TrimSpace(out))
	}
	mode, err := b.rdmaMode()
	if err != nil {
		broken("%v", err)
	}
	b.Mode = mode
	return b
}

// rdmaMode tells how the build serves RDMA, from its files: a
// valkey-rdma.so beside valkey-server is the module (and valkey-server
// then has no RDMA of its own); otherwise valkey-server has RDMA built in
// only if it links librdmacm (a NEEDED entry), as BUILD_RDMA=yes makes
// it. 8.1 moved the module's listener from its arguments to the server's
// rdma-bind and rdma-port.
func (b *ValkeyBuild) rdmaMode() (RDMAMode, error) {
	if so := filepath.Join(b.Dir, "valkey-rdma.so"); isFile(so) {
		b.Module = so
		// 8.0's module parses its arguments and says so when one is
		// wrong; 8.1's takes none. The message tells them apart where
		// the version cannot (a development tree says 255.255.255).
		text, err := os.ReadFile(so)
		if err != nil {
			return 0, err
		}
		if bytes.Contains(text, []byte("RDMA: Unsupported argument")) {
			return RDMAModuleArgs, nil
		}
		return RDMAModule, nil
	}
	f, err := elf.Open(b.Server)
	if err != nil {
		return 0, fmt.Errorf("%s: %v", b.Server, err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		return 0, fmt.Errorf("%s: %v", b.Server, err)
	}
	for _, l := range libs {
		if strings.HasPrefix(l, "librdmacm.so") {
			return RDMABuiltin, nil
		}
	}
	return 0, fmt.Errorf("%s has no RDMA (it does not link librdmacm) and there is no valkey-rdma.so beside it: build with vm/valkey-build.sh (BUILD_RDMA=yes, or module for 8.0)", b.Server)
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular()
}

// field returns the value of the first "key=value" word of s with the
// given prefix (key=).
func field(s, prefix string) string {
	for w := range strings.FieldsSeq(s) {
		if v, ok := strings.CutPrefix(w, prefix); ok {
			return v
		}
	}
	return ""
}

// Version returns the first line of valkey-server --version.
func (b *ValkeyBuild) Version() string {
	out, _ := exec.Command(b.Server, "--version").Output()
	v, _, _ := strings.Cut(string(out), "\n")
	return v
}

// AtLeast reports whether the build's version is major.minor or later.
func (b *ValkeyBuild) AtLeast(major, minor int) bool {
	return b.Major > major || b.Major == major && b.Minor >= minor
}

// RDMAArgs returns the valkey-server arguments that make it serve RDMA on
// host:port, as the build's Mode says: --loadmodule valkey-rdma.so with
// bind= and port= (8.0's module), --loadmodule and --rdma-bind,
// --rdma-port (8.1+'s module) or --rdma-bind and --rdma-port alone (RDMA
// built in). vm/valkey-rdma.sh's guest script and vm/bench-valkey.sh make
// the same choice in shell (valkey_rdma_args).
func (b *ValkeyBuild) RDMAArgs(host string, port int) []string {
	p := strconv.Itoa(port)
	switch b.Mode {
	case RDMAModuleArgs:
		return []string{"--loadmodule", b.Module, "bind=" + host, "port=" + p}
	case RDMAModule:
		return []string{"--loadmodule", b.Module, "--rdma-bind", host, "--rdma-port", p}
	}
	return []string{"--rdma-bind", host, "--rdma-port", p}
}

// rdmaOn returns the ValkeyCluster.rdma of the build: a node on TCP port p
// also serves RDMA on host, port p+1 (RDMA ports are not TCP's: the two
// never collide, and the nodes' TCP ports differ, so their RDMA ports do).
func (b *ValkeyBuild) rdmaOn(host string) func(port int) (string, []string) {
	return func(port int) (string, []string) {
		// Connections come and go in the log (verbose), which a crash
		// report does not bury in a memory test.
		args := []string{"--loglevel", "verbose", "--crash-memcheck-enabled", "no"}
		return net.JoinHostPort(host, strconv.Itoa(port+1)), append(args, b.RDMAArgs(host, port+1)...)
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

// Exited waits up to d for the node's process to exit and reports whether
// it did.
func (nd *ValkeyNode) Exited(d time.Duration) bool {
	select {
	case <-nd.done:
		return true
	case <-time.After(d):
		return false
	}
}

// Died returns "" while the node's process runs, else why it ended: the
// line of its log that says (a signal, a failed assertion, a panic) and
// the first lines of its stack trace, or its exit status.
func (nd *ValkeyNode) Died() string {
	if nd.Alive() {
		return ""
	}
	b, _ := os.ReadFile(filepath.Join(nd.Dir, "log"))
	if e, _ := os.ReadFile(filepath.Join(nd.Dir, "stderr")); len(e) > 0 {
		b = append(append(b, '\n'), e...)
	}
	var why []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "crashed by signal") || strings.Contains(l, "ASSERTION FAILED") ||
			strings.Contains(l, "Guru Meditation") || strings.Contains(l, "free():") {
			why = append(why, strings.TrimSpace(l))
		}
	}
	// Of the stack trace (every thread's), the crashing instruction and
	// the first frames of the crashing thread (marked "*"): what a reader
	// needs first.
	if _, trace, ok := bytes.Cut(b, []byte("------ STACK TRACE ------")); ok {
		trace, _, _ = bytes.Cut(trace, []byte("------ STACK TRACE DONE"))
		lines := strings.Split(string(trace), "\n")
		for i := 0; i < len(lines); i++ {
			switch l := strings.TrimSpace(lines[i]); {
			case l == "EIP:" && i+1 < len(lines):
				why = append(why, "EIP "+strings.TrimSpace(lines[i+1]))
			case strings.HasSuffix(l, " *"):
				var frames []string
				for j := i + 1; j < len(lines) && strings.TrimSpace(lines[j]) != "" && len(frames) < 5; j++ {
					frames = append(frames, strings.TrimSpace(lines[j]))
				}
				why = append(why, "thread "+l+": "+strings.Join(frames, " < "))
			}
		}
	}
	if len(why) == 0 {
		why = append(why, nd.cmd.ProcessState.String())
	}
	return fmt.Sprintf("valkey-server %s died: %s", nd.Addr, strings.Join(why, "; "))
}

// logEnd returns the end of a valkey-server log: its last 3000 bytes, or,
// when it crashed, what it logged before and the start of the report.
func logEnd(b []byte) []byte {
	if i := bytes.Index(b, []byte("=== VALKEY BUG REPORT START")); i >= 0 {
		return b[max(0, i-3000):min(len(b), i+2500)]
	}
	return b[max(0, len(b)-3000):]
}
