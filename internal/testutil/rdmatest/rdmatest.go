// Package rdmatest gives tests a bound RDMA device, or the reason there is none.
package rdmatest

import (
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/probe"
	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// Require returns the bound verbs table when this machine has a usable
// RDMA device. Without one the test skips with the reason, except inside the
// project's VM, where a device must exist and its absence fails the test.
func Require(tb testing.TB) *verbs.Table {
	tb.Helper()
	r := probe.Run()
	if r.Usable {
		return verbs.Bound()
	}
	if testutil.InVM() {
		tb.Fatalf("inside the RDMA VM but RDMA is not usable: %s", r.Verdict)
	}
	tb.Skipf("skipped: needs an RDMA device (run it in the VM: make test-rxe): %s", r.Verdict)
	return nil
}
