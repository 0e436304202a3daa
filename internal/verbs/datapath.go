package verbs

import (
	"syscall"

	"github.com/seed54442f1a/rdmapool/internal/ffi"
	"github.com/seed54442f1a/rdmapool/internal/unsafeptr"
)

// The four data-path verbs are static inline in verbs.h: they call through the
// provider's ops table in struct ibv_context. Ops reads that table once per
// QP or CQ, so each call afterwards is one indirect C call with no lookup, no
// allocation and no lock. They return within microseconds and never block,
// so they are direct calls (ffi.Direct3): no runtime.cgocall, whose
// scheduler bookkeeping cost most of a call, and most of a busy poll.

// Ops returns the provider's ops table of the context that owns a CQ or QP
// (both have the context as their first member).
func Ops(cqOrQP uintptr) *ContextOps {
	ctx := unsafeptr.Load(cqOrQP, 0)
	return &unsafeptr.At[Context](ctx, 0).Ops
}

// PostSend posts the chain of send work requests at wr on qp; on failure the
// first request not posted is left at *badWR (badWR: a C pointer slot).
func PostSend(ops *ContextOps, qp, wr, badWR uintptr) syscall.Errno {
	return syscall.Errno(int32(ffi.Direct3(ops.PostSend, qp, wr, badWR)))
}

// PostRecv posts the chain of receive work requests at wr on qp.
func PostRecv(ops *ContextOps, qp, wr, badWR uintptr) syscall.Errno {
	return syscall.Errno(int32(ffi.Direct3(ops.PostRecv, qp, wr, badWR)))
}

// PollCQ reads up to n completions into the WC array at wcs and returns how
// many it read, or a negative value when the CQ is in error.
func PollCQ(ops *ContextOps, cq uintptr, n int, wcs uintptr) int {
	return int(int32(ffi.Direct3(ops.PollCQ, cq, uintptr(n), wcs)))
}

// ReqNotifyCQ arms cq to signal its completion channel on the next completion.
func ReqNotifyCQ(ops *ContextOps, cq uintptr, solicitedOnly bool) syscall.Errno {
	var s uintptr
	if solicitedOnly {
		s = 1
	}
	return syscall.Errno(int32(ffi.Direct2(ops.ReqNotifyCQ, cq, s)))
}
