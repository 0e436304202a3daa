package qp

import (
	"github.com/seed54442f1a/rdmapool/internal/unsafeptr"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
	"github.com/seed54442f1a/rdmapool/mr"
)

// The per-connection verbs resources, sized as the Valkey peers size theirs.
const (
	cqEntries = 2048
	recvSlots = 1024 // command-buffer slots 0..1023: posted receives
	sendSlots = 1024 // command-buffer slots 1024..2047: control SENDs
	sqDepth   = 1024 // max_send_wr

	// inlineAsk is the max_inline_data asked of the provider: writes up
	// to what it grants are posted IBV_SEND_INLINE, their bytes copied
	// into the work request at post time, so the NIC (or soft-RoCE's
	// kernel side) need not read them from registered memory afterwards.
	inlineAsk = 256

	// Off-heap scratch for work requests: every receive WR and its SGE
	// (one per command slot, so a batch of slots is re-posted as one
	// chain), one send WR and SGE (posting is serialised), a bad-WR slot.
	offRecvWRs   = 0
	offRecvSGEs  = offRecvWRs + recvSlots*32
	offSendWR    = offRecvSGEs + recvSlots*16
	offSendSGE   = offSendWR + 128
	offBadWR     = offSendSGE + 16
	offInlineWCs = offBadWR + 16
	scratchSize  = offInlineWCs + inlineBatch*48
)

// resources are a connection's PD, completion channel, CQ, QP and
// registered memory. Creation is in this order; destroy frees in reverse.
type resources struct {
	t       *verbs.Table
	id      uintptr // the rdma_cm id the QP belongs to
	pd      uintptr
	cc      uintptr // completion channel
	cq      uintptr
	qp      uintptr // struct ibv_qp *, owned by the id
	ops     *verbs.ContextOps
	cmd     *mr.Region   // 2048 control-message slots, local only
	rx      *mr.Region   // the receive buffer, the only remotely writable memory
	tx      *mr.SendRing // staging for writes into the peer's receive buffer
	scratch uintptr
	device  string // the device's name, for removals (removal.go)
	inline  uint32 // max_inline_data the provider granted
}

func newResources(t *verbs.Table, id uintptr, rxSize int) (_ *resources, err error) {
	// r is not the named result, so that "return nil, err" leaves it for
	// the deferred destroy to free what was created.
	r := &resources{t: t, id: id}
	defer func() {
		if err != nil {
			r.destroy()
		}
	}()
	ctx := unsafeptr.At[verbs.CMID](id, 0).Verbs
	r.device = t.DeviceName(unsafeptr.At[verbs.Context](ctx, 0).Device)
	deviceBack(r.device)
	if r.pd, err = t.AllocPD(ctx); err != nil {
		return nil, err
	}
	if r.cc, err = t.CreateCompChannel(ctx); err != nil {
		return nil, err
	}
	if r.cq, err = t.CreateCQ(ctx, cqEntries, 0, r.cc, 0); err != nil {
		return nil, err
	}
	attr, ap, err := verbs.New[verbs.QPInitAttr](t)
	if err != nil {
		return nil, err
	}
	// A provider that cannot inline inlineAsk bytes may refuse the QP;
	// then it is created without inline sends.
	for _, ask := range []uint32{inlineAsk, 0} {
		*attr = verbs.QPInitAttr{SendCQ: r.cq, RecvCQ: r.cq, QPType: verbs.QPTypeRC,
			Cap: verbs.QPCap{MaxSendWR: sqDepth, MaxRecvWR: recvSlots, MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: ask}}
		if err = t.CreateQP(id, r.pd, ap); err == nil {
			// rdma_create_qp writes back the caps the provider granted.
			r.inline = attr.Cap.MaxInlineData
			break
		}
	}
	t.Free(ap)
	if err != nil {
		return nil, err
	}
	r.qp = unsafeptr.At[verbs.CMID](id, 0).QP
	r.ops = verbs.Ops(r.cq)
	if r.cmd, err = mr.Register(mr.PD(r.pd), (recvSlots+sendSlots)*cmdSize, mr.LocalWrite); err != nil {
		return nil, err
	}
	if r.rx, err = mr.Register(mr.PD(r.pd), rxSize, mr.LocalWrite|mr.RemoteWrite); err != nil {
		return nil, err
	}
	r.tx = mr.NewSendRing(mr.PD(r.pd))
	if r.scratch, err = t.Calloc(scratchSize); err != nil {
		return nil, err
	}
	// Each receive WR i points at SGE i, which covers command slot i.
	for i := range recvSlots {
		sge := unsafeptr.At[verbs.SGE](r.scratch, offRecvSGEs+uintptr(i)*16)
		*sge = verbs.SGE{Addr: r.cmd.Addr() + uint64(i*cmdSize), Length: cmdSize, LKey: r.cmd.LKey()}
		wr := unsafeptr.At[verbs.RecvWR](r.scratch, offRecvWRs+uintptr(i)*32)
		*wr = verbs.RecvWR{SGList: r.scratch + offRecvSGEs + uintptr(i)*16, NumSGE: 1}
	}
	return r, nil
}

// postRecvs posts the receive WRs of the given command slots as one chain,
// each with the wr_id from wrid(slot).
func (r *resources) postRecvs(slots []uint32, wrid func(uint32) uint64) error {
	if len(slots) == 0 {
		return nil
	}
	var head uintptr
	for i := len(slots) - 1; i >= 0; i-- {
		p := r.scratch + offRecvWRs + uintptr(slots[i])*32
		wr := unsafeptr.At[verbs.RecvWR](p, 0)
		wr.WRID = wrid(slots[i])
		wr.Next = head
		head = p
	}
	if errno := verbs.PostRecv(r.ops, r.qp, head, r.scratch+offBadWR); errno != 0 {
		return &verbs.CallError{Func: "ibv_post_recv", Errno: errno}
	}
	return nil
}

// postSend posts one send WR with one SGE. The caller serialises posting.
func (r *resources) postSend(wrid uint64, opcode uint32, signaled bool, local uint64, n uint32, lkey uint32, imm uint32, remote uint64, rkey uint32) error {
	sge := unsafeptr.At[verbs.SGE](r.scratch, offSendSGE)
	*sge = verbs.SGE{Addr: local, Length: n, LKey: lkey}
	wr := unsafeptr.At[verbs.SendWR](r.scratch, offSendWR)
	*wr = verbs.SendWR{WRID: wrid, SGList: r.scratch + offSendSGE, NumSGE: 1, Opcode: opcode,
		ImmData: imm, RemoteAddr: remote, RKey: rkey}
	if signaled {
		wr.SendFlags = verbs.SendSignaled
	}
	if n <= r.inline {
		wr.SendFlags |= verbs.SendInline
	}
	var t0 int64
	if StagesEnabled {
		t0 = stageNow()
	}
	errno := verbs.PostSend(r.ops, r.qp, r.scratch+offSendWR, r.scratch+offBadWR)
	if StagesEnabled {
		t1 := stageNow()
		stagePostSend.record(t1 - t0)
		if opcode == opcodeWrite {
			timelinePost(t0, t1)
		}
	}
	if errno != 0 {
		return &verbs.CallError{Func: "ibv_post_send", Errno: errno}
	}
	return nil
}

// cmdSlot returns the bytes of command slot i.
func (r *resources) cmdSlot(i uint32) []byte {
	return r.cmd.Bytes()[i*cmdSize : (i+1)*cmdSize]
}

// destroy frees everything in reverse order of creation: QP, CQ, channel,
// memory, PD. The CQ must no longer be polled.
func (r *resources) destroy() {
	t := r.t
	if r.qp != 0 {
		t.DestroyQP(r.id)
		r.qp = 0
	}
	if r.cq != 0 {
		t.DestroyCQ(r.cq)
		r.cq = 0
	}
	if r.cc != 0 {
		t.DestroyCompChannel(r.cc)
		r.cc = 0
	}
	if r.scratch != 0 {
		t.Free(r.scratch)
		r.scratch = 0
	}
	if r.tx != nil {
		r.tx.Close()
		r.tx = nil
	}
	if r.rx != nil {
		r.rx.Close()
		r.rx = nil
	}
	if r.cmd != nil {
		r.cmd.Close()
		r.cmd = nil
	}
	if r.pd != 0 {
		t.DeallocPD(r.pd)
		r.pd = 0
	}
}
