//go:build unix

package probe_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/seed54442f1a/rdmapool/loader/probe"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
)

// memlockChildEnv makes the test binary the child of TestMemlockTooLow:
// it lowers RLIMIT_MEMLOCK to 64 KiB (a container's default), probes, and
// prints the verdict.
const memlockChildEnv = "RDMAPOOL_PROBE_TEST_MEMLOCK"

func TestMain(m *testing.M) {
	if os.Getenv(memlockChildEnv) != "" {
		if err := rdmatest.LowerMemlock(); err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		r := probe.Run()
		fmt.Printf("usable=%v\n%s\n", r.Usable, r.Verdict)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestMemlockTooLow: with a locked-memory limit of 64 KiB, a page registers
// but one connection's buffers do not: the probe says RDMA cannot be used,
// and why.
func TestMemlockTooLow(t *testing.T) {
	rdmatest.Require(t)
	out, err := rdmatest.AsNobody(t, memlockChildEnv+"=1").CombinedOutput()
	t.Logf("child: %s", out)
	if err != nil {
		t.Fatalf("child: %v", err)
	}
	if !strings.HasPrefix(string(out), "usable=false\n") || !strings.Contains(string(out), "RLIMIT_MEMLOCK") {
		t.Errorf("with RLIMIT_MEMLOCK at 64 KiB the probe said %q; want not usable, naming RLIMIT_MEMLOCK", out)
	}
}
