//go:build unix

package rdmatest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// AsNobody returns a command that runs this test binary again, with no test
// selected and env added, as the user nobody: a process that, unlike root,
// is held to RLIMIT_MEMLOCK. It makes the RDMA device files usable by
// anyone, which only the VM's throwaway system should allow, so it needs
// root and skips (or fails in CI) without.
func AsNobody(tb testing.TB, env ...string) *exec.Cmd {
	tb.Helper()
	testutil.Require(tb, os.Geteuid() == 0, "needs root to run the child as another user")
	paths, _ := filepath.Glob("/dev/infiniband/*")
	for _, p := range paths {
		os.Chmod(p, 0o666)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	return cmd
}

// LowerMemlock sets this process's RLIMIT_MEMLOCK, soft and hard, to 64 KiB
// (a container's default), for the child of a memlock test: a page
// registers, a connection's buffers do not.
func LowerMemlock() error {
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: 64 << 10, Max: 64 << 10}); err != nil {
		return fmt.Errorf("setrlimit RLIMIT_MEMLOCK 64 KiB: %w", err)
	}
	return nil
}
