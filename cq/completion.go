package cq

import (
	"github.com/seed54442f1a/rdmapool/internal/unsafeptr"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// Completion is one work completion, as the NIC reported it. It has the
// layout of the C struct the provider writes (the verbs mirror), so a
// poll's batch is handed to a Handler in place: no copy, no allocation.
type Completion struct {
	wc verbs.WC
}

// WRID is the work request's wr_id (see Registration).
func (c *Completion) WRID() uint64 { return c.wc.WRID }

// Send reports whether the work request was posted to the send queue
// (its wr_id came from SendWRID). Unlike Opcode, it holds for a completion
// in error too.
func (c *Completion) Send() bool { return c.wc.WRID&sendBit != 0 }

// Local is the handler's part of the wr_id: what SendWRID or RecvWRID was
// given.
func (c *Completion) Local() uint32 { return uint32(c.wc.WRID) & LocalMask }

// Status is the completion's status (enum ibv_wc_status): 0 for success.
func (c *Completion) Status() uint32 { return c.wc.Status }

// Opcode says what completed (enum ibv_wc_opcode); defined only when Status
// is 0.
func (c *Completion) Opcode() uint32 { return c.wc.Opcode }

// VendorErr is the provider's own error code for a failed completion.
func (c *Completion) VendorErr() uint32 { return c.wc.VendorErr }

// ByteLen is the number of bytes a receive took.
func (c *Completion) ByteLen() uint32 { return c.wc.ByteLen }

// ImmData is the immediate data of a receive, in network byte order, as the
// NIC wrote it; meaningful when Flags has IBV_WC_WITH_IMM.
func (c *Completion) ImmData() uint32 { return c.wc.ImmData }

// Flags are the completion's flags (enum ibv_wc_flags).
func (c *Completion) Flags() uint32 { return c.wc.WCFlags }

// completions returns the n completions of a poll in the C array at wcs,
// in place.
func completions(wcs verbs.Ptr[verbs.WC], n int) []Completion {
	return unsafeptr.Slice[Completion](wcs.Addr(), n)
}

// Poller polls one CQ from its owner's goroutine, for an InlinePoller's
// own polls, into C memory the owner holds. Polling allocates nothing.
type Poller struct {
	ops *verbs.ContextOps
	cq  verbs.Ptr[verbs.CQ]
	wcs verbs.Ptr[verbs.WC]
	n   int
}

// NewPoller returns a Poller of cq that reads up to n completions at a
// time into wcs, a C array of n WCs that must outlive it.
func NewPoller(cq verbs.Ptr[verbs.CQ], wcs verbs.Ptr[verbs.WC], n int) Poller {
	return Poller{ops: verbs.CQOps(cq), cq: cq, wcs: wcs, n: n}
}

// Poll polls the CQ once and returns the completions it found, in place:
// they are valid until the next Poll. It returns nil when there were none,
// and when the CQ is in error, which the reactor's own poll reports to
// the Handler (HandleCQError).
func (p *Poller) Poll() []Completion {
	n := verbs.PollCQ(p.ops, p.cq, p.n, p.wcs)
	if n <= 0 {
		return nil
	}
	return completions(p.wcs, n)
}
