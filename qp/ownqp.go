package qp

import (
	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// A client's QP is its own: made with ibv_create_qp on the connection's PD,
// attached to no rdma_cm id, and moved through its states here. The reason
// is one attribute. In the IB CM the active side's QP takes its RNR retry
// count from the server's REP, and valkey-server accepts with
// rnr_retry_count 0; librdmacm applies that to an attached QP inside
// rdma_get_cm_event and offers no option against it. Such a QP fails ("RNR
// retry counter exceeded") the first time a busy server (a slow command, a
// fork) has not yet re-posted the receives our messages take, and the
// connection dies with the requests in flight. Our own QP retries RNR NAKs
// without end (7), whatever the REP says: a local decision that costs the
// server nothing, since our side waits out the RNR timer the server's QP
// sets before it sends again.
//
// What librdmacm does for an attached QP (librdmacm/cma.c), and so is done
// here for our own:
//   - rdma_create_qp moves it to INIT before its receives are posted:
//     initOwnQP.
//   - rdma_connect takes the QP's number from the id's QP; ours is passed
//     in the conn_param (dial.go).
//   - On the REP, inside rdma_get_cm_event, it moves the QP to INIT again
//     (now with the access flags the connection allows), RTR and RTS, sends
//     the RTU, and reports ESTABLISHED. With no QP on the id it reports
//     CONNECT_RESPONSE instead and leaves the rest to the caller:
//     readyOwnQP, then rdma_establish, which sends the RTU. No ESTABLISHED
//     follows on this side; the connection is established when
//     rdma_establish returns (the server gets ESTABLISHED on the RTU).
//   - rdma_disconnect first moves the QP to ERR (SQD on iWARP), which
//     flushes its work requests, which the teardown and the answer to the
//     peer's disconnect rely on (close.go): shutdownQP, before every
//     rdma_disconnect.
//   - A REJECTED moves it to ERR; a client rejected is given up at once, its
//     QP destroyed, so nothing waits for that flush.
//   - rdma_destroy_qp is ibv_destroy_qp.
//
// ECE (mlx5's enhanced connection establishment, an option librdmacm
// negotiates for an attached QP) is not negotiated for ours. On iWARP the
// kernel connects the QP itself and the active side gets ESTABLISHED, for
// an attached QP or not; there is no RNR there.

// rnrRetryForever is the RNR retry count that means "retry without end".
const rnrRetryForever = 7

// legacyRoCEMask are bits 21 to 23 of a QP attribute mask (RoCE-only
// attributes of old kernels), which a bug of old kernels' rdma_ucm set in
// rdma_init_qp_attr's RTR mask on InfiniBand too. librdmacm clears them
// there ("workaround for rdma_ucm kernel bug"); current kernels set none
// of them, so this costs a port query only where one is set.
const legacyRoCEMask = 0xe00000

// initOwnQP allocates the attributes the QP's moves use and moves the new
// QP to INIT, with what rdma_cm gives for that state (port, P_Key index).
func (r *resources) initOwnQP() error {
	t := r.t
	var err error
	if r.qpAttr, err = verbs.Alloc[verbs.QPAttr](t, 2); err != nil {
		return err
	}
	// The shutdown's attributes are written once here and only read
	// after, so that the two goroutines that may disconnect at once (the
	// teardown and the event loop answering the peer's disconnect) share
	// them without a lock. rdma_disconnect's own choice: ERR on an IB
	// transport (InfiniBand, RoCE), SQD on iWARP.
	down := verbs.QPStateErr
	if verbs.ContextTransport(r.ctx) == verbs.TransportIWARP {
		down = verbs.QPStateSQD
	}
	r.qpAttr.Index(1).Get().QPState = uint32(down)
	return r.moveOwnQP(verbs.QPStateInit)
}

// readyOwnQP moves the QP to RTR and RTS once the server's REP has come
// (CONNECT_RESPONSE), as librdmacm does an attached one's, but for the RNR
// retry count, which is rnrRetryForever. The connection goroutine alone
// calls it, before the connection is established.
func (r *resources) readyOwnQP() error {
	// INIT again first: before the REP, rdma_cm allows no remote access,
	// and the peer writes into our receive buffer.
	for _, s := range []uint32{verbs.QPStateInit, verbs.QPStateRTR, verbs.QPStateRTS} {
		if err := r.moveOwnQP(s); err != nil {
			return err
		}
	}
	return nil
}

// moveOwnQP moves the QP to state with the attributes the connection's
// rdma_cm state gives for it (rdma_init_qp_attr): addresses, PSNs, path
// MTU, retry counts, access flags. For RTS the RNR retry count is ours.
func (r *resources) moveOwnQP(state uint32) error {
	t, ap := r.t, r.qpAttr
	a := ap.Get()
	*a = verbs.QPAttr{QPState: state}
	mask, err := t.InitQPAttr(r.id, ap)
	if err != nil {
		return err
	}
	switch state {
	case verbs.QPStateRTR:
		if mask&legacyRoCEMask != 0 {
			pa, err := t.QueryPort(r.ctx, verbs.IDPortNum(r.id))
			if err == nil && pa.LinkLayer == verbs.LinkLayerInfiniBand {
				mask &^= legacyRoCEMask
			}
		}
	case verbs.QPStateRTS:
		// rdma_cm's mask for an RC QP's RTS names the RNR retry count
		// (the kernel's cm_init_qp_rts_attr), with the REP's value;
		// named here too, so that ours is applied regardless.
		a.RNRRetry = rnrRetryForever
		mask |= verbs.QPAttrRNRRetry
	}
	return t.ModifyQP(r.qp, ap, mask)
}

// shutdownQP moves an own QP to the error state (SQD on iWARP), which
// flushes its work requests, as rdma_disconnect does an attached QP: call
// it before every rdma_disconnect. An attached QP is left to
// rdma_disconnect. It may run on two goroutines at once (see initOwnQP).
func (r *resources) shutdownQP() {
	if !r.own || r.qp.IsNil() {
		return
	}
	r.t.ModifyQP(r.qp, r.qpAttr.Index(1), verbs.QPAttrState)
}

// qpNum is the QP's number, which the client's rdma_connect passes on.
func (r *resources) qpNum() uint32 { return r.qp.Get().QPNum }
