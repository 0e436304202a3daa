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

// WRID is the work request's wr_id (see registration).
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
