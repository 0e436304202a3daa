package rdmatest

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

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
