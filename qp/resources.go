package qp

import (
	"github.com/seed54442f1a/rdmapool/internal/stages"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
	"github.com/seed54442f1a/rdmapool/mr"
)

// The per-connection verbs resources. A connection of queue depth d
// (Options.QueueDepth) has d receives posted, command-buffer slots 0..d-1
// for them and d..2d-1 for control SENDs, a send queue of d work requests
// (max_send_wr) and 2d entries of a CQ it shares with the device's other
// connections (package cq), room for every work request of both queues,
// which a QP in error flushes.
const (
	// defaultQueueDepth is the Valkey peers' 1024 less one: soft-RoCE
	// keeps one slot of each queue empty and rounds the slots up to a
	// power of two, so that a queue of 1024 work requests (or a CQ of
	// 2048 entries) takes twice the kernel memory, zeroed and mapped at
	// creation, of one of 1023 (2046). A NIC's queues round the same way
	// or to the request itself.
	defaultQueueDepth = 1023
	minQueueDepth     = 16
	maxQueueDepth     = 8191 // 2d CQ entries within soft-RoCE's max_cqe, 32767

	// inlineAsk is the max_inline_data asked of the provider: writes up
	// to what it grants are posted IBV_SEND_INLINE, their bytes copied
	// into the work request at post time, so the NIC (or soft-RoCE's
	// kernel side) need not read them from registered memory afterwards.
	inlineAsk = 256
)

// scratch is the off-heap memory for work requests, each part a C array
// sized by its mirror: every receive WR and its SGE (one per command slot,
// so a batch of slots is re-posted as one chain), one send WR and SGE
// (posting is serialised) and the bad-WR slot.
type scratch struct {
	recvWRs  verbs.Ptr[verbs.RecvWR] // depth
	recvSGEs verbs.Ptr[verbs.SGE]    // depth
	sendWR   verbs.Ptr[verbs.SendWR]
	sendSGE  verbs.Ptr[verbs.SGE]
	badWR    verbs.Ptr[verbs.BadWR]
}

// alloc allocates every part, with depth receive WRs and SGEs; on failure,
// free frees what was allocated.
func (s *scratch) alloc(t *verbs.Table, depth int) (err error) {
	if s.recvWRs, err = verbs.Alloc[verbs.RecvWR](t, depth); err != nil {
		return err
	}
	if s.recvSGEs, err = verbs.Alloc[verbs.SGE](t, depth); err != nil {
		return err
	}
	if s.sendWR, err = verbs.Alloc[verbs.SendWR](t, 1); err != nil {
		return err
	}
	if s.sendSGE, err = verbs.Alloc[verbs.SGE](t, 1); err != nil {
		return err
	}
	s.badWR, err = verbs.Alloc[verbs.BadWR](t, 1)
	return err
}

// free frees every part, in reverse order; it is idempotent.
func (s *scratch) free(t *verbs.Table) {
	verbs.Release(t, s.badWR)
	verbs.Release(t, s.sendSGE)
	verbs.Release(t, s.sendWR)
	verbs.Release(t, s.recvSGEs)
	verbs.Release(t, s.recvWRs)
	*s = scratch{}
}

// resources are a connection's PD, registered memory and QP, on a CQ of
// the reactor's (cq.Member). Creation is in this order (newResources, then
// createQP once the id has its route, so that a client makes the rest while
// the route resolves); destroy frees in reverse.
//
// The PD is the connection's own, so that no peer can write into another
// connection's receive buffer with a guessed rkey.
type resources struct {
	t       *verbs.Table
	id      verbs.Ptr[verbs.CMID] // the rdma_cm id of the QP's connection (createQP)
	ctx     verbs.Ptr[verbs.Context]
	pd      verbs.Ptr[verbs.PD]
	cq      verbs.Ptr[verbs.CQ]     // the reactor's, shared
	qp      verbs.Ptr[verbs.QP]     // owned by the id, unless own
	own     bool                    // qp is the connection's own, not attached to id (ownqp.go)
	qpAttr  verbs.Ptr[verbs.QPAttr] // own: two, [0] for the moves to INIT, RTR and RTS, [1] the shutdown's (shutdownQP)
	ops     *verbs.ContextOps
	mpd     mr.PD        // pd, to register memory with
	cmd     *mr.Region   // 2 × depth control-message slots, local only
	rx      *mr.Region   // the receive buffer now advertised, the only remotely writable memory (replaced at a re-arm, under rmu)
	tx      *mr.SendRing // staging for writes into the peer's receive buffer (wmu)
	scratch scratch
	device  string // the device's name, for removals (removal.go)
	inline  uint32 // max_inline_data the provider granted
	depth   int    // the queue depth: receives posted, send-queue entries
}

// newResources makes everything but the QP on the device of ctx, with a
// queue depth of depth, for a QP on cq.
func newResources(t *verbs.Table, ctx verbs.Ptr[verbs.Context], cq verbs.Ptr[verbs.CQ], rxSize, depth int) (_ *resources, err error) {
	// r is not the named result, so that "return nil, err" leaves it for
	// the deferred destroy to free what was created.
	r := &resources{t: t, ctx: ctx, cq: cq, depth: depth}
	defer func() {
		if err != nil {
			r.destroy()
		}
	}()
	r.device = t.ContextDeviceName(ctx)
	deviceBack(r.device)
	if r.pd, err = t.AllocPD(ctx); err != nil {
		return nil, err
	}
	pd := newPD(r.pd)
	r.mpd = pd
	if r.cmd, err = mr.Register(pd, 2*depth*cmdSize, mr.LocalWrite); err != nil {
		return nil, err
	}
	if r.rx, err = mr.Register(pd, rxSize, mr.LocalWrite|mr.RemoteWrite); err != nil {
		return nil, err
	}
	r.tx = mr.NewSendRing(pd, txStagingMin, maxRecvBuffer) // the peer's length, at most MaxPeerBufferSize, bounds it
	if err = r.scratch.alloc(t, depth); err != nil {
		return nil, err
	}
	// Each receive WR i points at SGE i, which covers command slot i.
	for i := range depth {
		sge := r.scratch.recvSGEs.Index(i)
		*sge.Get() = verbs.SGE{Addr: r.cmd.Addr() + uint64(i*cmdSize), Length: cmdSize, LKey: r.cmd.LKey()}
		*r.scratch.recvWRs.Index(i).Get() = verbs.RecvWR{SGList: sge, NumSGE: 1}
	}
	return r, nil
}

// createQP creates the QP of id, an id on r's device, of r.depth work
// requests each way, on r's PD and CQ: attached to id (rdma_create_qp), or
// with own the connection's own, which rdmapool moves through its states
// itself (ownqp.go), left in INIT. On failure r is left as it was, for
// destroy.
func (r *resources) createQP(id verbs.Ptr[verbs.CMID], own bool) error {
	t := r.t
	r.id = id
	attr, ap, err := verbs.New[verbs.QPInitAttr](t)
	if err != nil {
		return err
	}
	defer verbs.Release(t, ap)
	// A provider that cannot inline inlineAsk bytes may refuse the QP;
	// then it is created without inline sends.
	for _, ask := range []uint32{inlineAsk, 0} {
		*attr = verbs.QPInitAttr{SendCQ: r.cq, RecvCQ: r.cq, QPType: verbs.QPTypeRC,
			Cap: verbs.QPCap{MaxSendWR: uint32(r.depth), MaxRecvWR: uint32(r.depth), MaxSendSGE: 1, MaxRecvSGE: 1, MaxInlineData: ask}}
		if own {
			r.qp, err = t.IBVCreateQP(r.pd, ap)
		} else if err = t.CreateQP(r.id, r.pd, ap); err == nil {
			r.qp = verbs.IDQP(r.id)
		}
		if err == nil {
			// Both write back the caps the provider granted.
			r.inline = attr.Cap.MaxInlineData
			break
		}
	}
	if err != nil {
		return err
	}
	r.own = own
	r.ops = verbs.QPOps(r.qp)
	if own {
		return r.initOwnQP()
	}
	return nil
}

// postRecvs posts the receive WRs of the given command slots as one chain,
// each with the wr_id from wrid(slot).
func (r *resources) postRecvs(slots []uint32, wrid func(uint32) uint64) error {
	if len(slots) == 0 {
		return nil
	}
	var head verbs.Ptr[verbs.RecvWR]
	for i := len(slots) - 1; i >= 0; i-- {
		p := r.scratch.recvWRs.Index(int(slots[i]))
		wr := p.Get()
		wr.WRID = wrid(slots[i])
		wr.Next = head
		head = p
	}
	if errno := verbs.PostRecv(r.ops, r.qp, head, r.scratch.badWR); errno != 0 {
		return &verbs.CallError{Func: "ibv_post_recv", Errno: errno}
	}
	return nil
}

// postSend posts send WR wr, with one SGE, as wr_id wrid. The caller
// serialises posting.
func (r *resources) postSend(wrid uint64, wr *sendWR) error {
	*r.scratch.sendSGE.Get() = verbs.SGE{Addr: wr.Local, Length: wr.Len, LKey: wr.LKey}
	w := r.scratch.sendWR.Get()
	*w = verbs.SendWR{WRID: wrid, SGList: r.scratch.sendSGE, NumSGE: 1, Opcode: wr.opcode,
		ImmData: wr.imm, RemoteAddr: wr.Remote, RKey: wr.RKey}
	if wr.Signal {
		w.SendFlags = verbs.SendSignaled
	}
	if wr.Len <= r.inline {
		w.SendFlags |= verbs.SendInline
	}
	var t0 int64
	if stages.Enabled {
		t0 = stages.Now()
	}
	errno := verbs.PostSend(r.ops, r.qp, r.scratch.sendWR, r.scratch.badWR)
	if stages.Enabled {
		t1 := stages.Now()
		stages.PostSend.Record(t1 - t0)
		if wr.opcode == opcodeWrite {
			stages.Posted(t0, t1)
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

// destroy frees everything in reverse order of creation: QP, memory, PD.
// The connection's completions must no longer be handled (cq.Member.Leave).
func (r *resources) destroy() {
	t := r.t
	if !r.qp.IsNil() {
		if r.own {
			t.IBVDestroyQP(r.qp)
		} else {
			cmReadMu.Lock() // see there
			t.DestroyQP(r.id)
			cmReadMu.Unlock()
		}
		r.qp = verbs.Ptr[verbs.QP]{}
	}
	verbs.Release(t, r.qpAttr)
	r.qpAttr = verbs.Ptr[verbs.QPAttr]{}
	r.scratch.free(t)
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
	if !r.pd.IsNil() {
		t.DeallocPD(r.pd)
		r.pd = verbs.Ptr[verbs.PD]{}
	}
}
