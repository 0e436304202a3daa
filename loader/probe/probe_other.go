//go:build !linux

package probe

import (
	"math"

	"github.com/seed54442f1a/rdmapool/loader"
)

// Unlimited is a Memlock value without a limit.
const Unlimited = math.MaxUint64

// Run reports that RDMA cannot be used: the loader binds nothing off Linux.
// Memlock is Unlimited: nothing here locks memory for RDMA.
func Run() Report {
	r := Report{Memlock: Memlock{Unlimited, Unlimited}}
	r.Libraries, r.LoadErr = loader.Load()
	if r.LoadErr != nil {
		r.Verdict = "RDMA cannot be used: " + r.LoadErr.Error()
	}
	return r
}
