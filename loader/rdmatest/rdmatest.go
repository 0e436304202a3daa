// Package rdmatest gives tests a bound RDMA device, or the reason there is none.
package rdmatest

import (
	"net/netip"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/loader/probe"
)

// Require returns when this machine has a usable RDMA device (and the RDMA
// libraries are bound). Without one the test skips with the reason, except
// inside the project's VM, where a device must exist and its absence fails
// the test.
func Require(tb testing.TB) {
	tb.Helper()
	r := probe.Run()
	if r.Usable {
		return
	}
	if testutil.InVM() {
		tb.Fatalf("inside the RDMA VM but RDMA is not usable: %s", r.Verdict)
	}
	tb.Skipf("skipped: needs an RDMA device (run it in the VM: make test-rxe): %s", r.Verdict)
}

// Addr returns the IP address of an RDMA-capable interface to listen on and
// connect to: probe.Addr (RDMAPOOL_TEST_ADDR, which the VM sets, else the
// first IPv4 GID of an active port).
func Addr(tb testing.TB) netip.Addr {
	tb.Helper()
	a, err := probe.Addr()
	if err != nil {
		tb.Fatalf("no address for RDMA: %v", err)
	}
	return a
}

// Resources returns the kernel's count of RDMA objects per kind ("pd", "cq",
// "qp", "mr", "cm_id", "ctx") summed over all devices, from `rdma resource
// show`. Compare counts before and after a test to find leaks.
func Resources(tb testing.TB) map[string]int {
	tb.Helper()
	out, err := exec.Command("rdma", "resource", "show").CombinedOutput()
	if err != nil {
		tb.Fatalf("rdma resource show: %v\n%s", err, out)
	}
	counts := map[string]int{}
	for _, line := range strings.Split(string(out), "\n") {
		// "0: rxe0: pd 1 cq 1 qp 1 cm_id 0 mr 0 ctx 0 srq 0"
		f := strings.Fields(line)
		for i := 2; i+1 < len(f); i += 2 {
			n, err := strconv.Atoi(f[i+1])
			if err == nil {
				counts[f[i]] += n
			}
		}
	}
	return counts
}

// CheckNoLeaks fails the test if the kernel holds more RDMA objects of any
// kind than before (counts from Resources). Device contexts ("ctx") are not
// compared: librdmacm opens one per device on first use and keeps it for the
// life of the process.
func CheckNoLeaks(tb testing.TB, before map[string]int) {
	tb.Helper()
	after := Resources(tb)
	for _, k := range []string{"pd", "cq", "qp", "mr", "cm_id"} {
		if after[k] > before[k] {
			tb.Errorf("RDMA objects left behind: %s %d before, %d after", k, before[k], after[k])
		}
	}
}

// Available reports whether this machine has a usable RDMA device, without
// failing or skipping anything.
func Available() bool { return probe.Run().Usable }
