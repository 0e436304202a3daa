package verbs

import (
	"syscall"

	"github.com/seed54442f1a/rdmapool/internal/ffi"
)

// The four data-path verbs are static inline in verbs.h: they call through the
// provider's ops table in struct ibv_context. Ops reads that table once per
// QP or CQ, so each call afterwards is one indirect C call with no lookup, no
// allocation and no lock. They return within microseconds and never block,
// so they are direct calls (ffi.Direct3): no runtime.cgocall, whose
// scheduler bookkeeping cost most of a call, and most of a busy poll.

// CQOps returns the provider's ops table of the context that owns a CQ.
func CQOps(cq Ptr[CQ]) *ContextOps { return &cq.Get().Context.Get().Ops }

// QPOps returns the provider's ops table of the context that owns a QP.
func QPOps(qp Ptr[QP]) *ContextOps { return &qp.Get().Context.Get().Ops }

// BadWR is C memory for the out parameter of ibv_post_send or
// ibv_post_recv: where a failed post leaves the first request not posted.
type BadWR struct {
	WR uintptr // struct ibv_send_wr * or struct ibv_recv_wr *
}

// PostSend posts the chain of send work requests at wr on qp; on failure the
// first request not posted is left in *badWR.
func PostSend(ops *ContextOps, qp Ptr[QP], wr Ptr[SendWR], badWR Ptr[BadWR]) syscall.Errno {
	return syscall.Errno(int32(ffi.Direct3(ops.PostSend, qp.addr, wr.addr, badWR.addr)))
}

// PostRecv posts the chain of receive work requests at wr on qp.
func PostRecv(ops *ContextOps, qp Ptr[QP], wr Ptr[RecvWR], badWR Ptr[BadWR]) syscall.Errno {
	return syscall.Errno(int32(ffi.Direct3(ops.PostRecv, qp.addr, wr.addr, badWR.addr)))
}

// PollCQ reads up to n completions into the WC array at wcs and returns how
// many it read, or a negative value when the CQ is in error.
func PollCQ(ops *ContextOps, cq Ptr[CQ], n int, wcs Ptr[WC]) int {
	return int(int32(ffi.Direct3(ops.PollCQ, cq.addr, uintptr(n), wcs.addr)))
}

// ReqNotifyCQ arms cq to signal its completion channel on the next completion.
func ReqNotifyCQ(ops *ContextOps, cq Ptr[CQ], solicitedOnly bool) syscall.Errno {
	var s uintptr
	if solicitedOnly {
		s = 1
	}
	return syscall.Errno(int32(ffi.Direct2(ops.ReqNotifyCQ, cq.addr, s)))
}
