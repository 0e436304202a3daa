package verbs

import (
	"github.com/seed54442f1a/rdmapool/internal/ffi"
	"github.com/seed54442f1a/rdmapool/internal/unsafeptr"
)

// librdmacm's calls return 0, or -1 with errno set (rdma_getaddrinfo too).
//
// Those that may re-read the device list, and so make libibverbs allocate a
// device it has not seen, run on the librdmacm thread (cmthread.go):
// rdma_create_event_channel, rdma_create_id and rdma_getaddrinfo (librdmacm's
// first use lists the devices), rdma_bind_addr, rdma_listen and
// rdma_get_cm_event (they look up the id's device, and list the devices
// again for one they do not know), and rdma_get_devices. The others run on
// the caller's thread.

func (t *Table) cm(name string, fn, a1, a2, a3, a4 uintptr) error {
	r, errno := ffi.CallE(fn, a1, a2, a3, a4, 0, 0)
	return errnoIfMinus1(name, int32(r) != 0, errno)
}

// cmListing is cm on the librdmacm thread, for the calls that may list the
// devices.
func (t *Table) cmListing(name string, fn, a1, a2, a3, a4 uintptr) error {
	r, errno := callCM(fn, a1, a2, a3, a4, 0, 0)
	return errnoIfMinus1(name, int32(r) != 0, errno)
}

// CreateEventChannel opens an rdma_cm event channel.
func (t *Table) CreateEventChannel() (Ptr[EventChannel], error) {
	ch, errno := callCM(t.CM.CreateEventChannel, 0, 0, 0, 0, 0, 0)
	return PtrAt[EventChannel](ch), errnoIfMinus1("rdma_create_event_channel", ch == 0, errno)
}

// DestroyEventChannel closes an event channel that has no ids left.
func (t *Table) DestroyEventChannel(ch Ptr[EventChannel]) {
	ffi.Call1(t.CM.DestroyEventChannel, ch.addr)
}

// EventChannelFD returns the file descriptor of an event channel.
func EventChannelFD(ch Ptr[EventChannel]) int { return int(ch.Get().FD) }

// CompChannelFD returns the file descriptor of a completion channel.
func CompChannelFD(ch Ptr[CompChannel]) int { return int(ch.Get().FD) }

// CreateID creates an rdma_cm id on channel ch with the given context value.
func (t *Table) CreateID(ch Ptr[EventChannel], context uintptr, ps int) (Ptr[CMID], error) {
	id, err := t.withOut(func(slot uintptr) error {
		return t.cmListing("rdma_create_id", t.CM.CreateID, ch.addr, slot, context, uintptr(ps))
	})
	return PtrAt[CMID](id), err
}

// IDContext returns the verbs context of an id's device; NULL until the id
// is bound to one.
func IDContext(id Ptr[CMID]) Ptr[Context] { return id.Get().Verbs }

// IDQP returns the QP that CreateQP made for id.
func IDQP(id Ptr[CMID]) Ptr[QP] { return id.Get().QP }

// DestroyID destroys an id; its QP must be gone and its events acked.
func (t *Table) DestroyID(id Ptr[CMID]) error {
	return t.cm("rdma_destroy_id", t.CM.DestroyID, id.addr, 0, 0, 0)
}

// SetOption calls rdma_set_option with an option value in C memory.
func (t *Table) SetOption(id Ptr[CMID], level, name int, val, n uintptr) error {
	r, errno := ffi.CallE(t.CM.SetOption, id.addr, uintptr(level), uintptr(name), val, n, 0)
	return errnoIfMinus1("rdma_set_option", int32(r) != 0, errno)
}

// BindAddr binds id to the sockaddr at sa.
func (t *Table) BindAddr(id Ptr[CMID], sa Ptr[Sockaddr]) error {
	return t.cmListing("rdma_bind_addr", t.CM.BindAddr, id.addr, sa.addr, 0, 0)
}

// Listen starts listening on a bound id.
func (t *Table) Listen(id Ptr[CMID], backlog int) error {
	return t.cmListing("rdma_listen", t.CM.Listen, id.addr, uintptr(backlog), 0, 0)
}

// Accept accepts a connection request on id with the parameters at param.
func (t *Table) Accept(id Ptr[CMID], param Ptr[ConnParam]) error {
	return t.cm("rdma_accept", t.CM.Accept, id.addr, param.addr, 0, 0)
}

// Reject rejects a connection request, without private data.
func (t *Table) Reject(id Ptr[CMID]) error {
	return t.cm("rdma_reject", t.CM.Reject, id.addr, 0, 0, 0)
}

// ResolveAddr resolves dst (and optionally binds to src; NULL for any).
func (t *Table) ResolveAddr(id Ptr[CMID], src, dst Ptr[Sockaddr], timeoutMS int) error {
	return t.cm("rdma_resolve_addr", t.CM.ResolveAddr, id.addr, src.addr, dst.addr, uintptr(timeoutMS))
}

// ResolveRoute resolves the route for an id whose address is resolved.
func (t *Table) ResolveRoute(id Ptr[CMID], timeoutMS int) error {
	return t.cm("rdma_resolve_route", t.CM.ResolveRoute, id.addr, uintptr(timeoutMS), 0, 0)
}

// Connect starts connecting id with the parameters at param.
func (t *Table) Connect(id Ptr[CMID], param Ptr[ConnParam]) error {
	return t.cm("rdma_connect", t.CM.Connect, id.addr, param.addr, 0, 0)
}

// Disconnect disconnects id; both sides then get DISCONNECTED.
func (t *Table) Disconnect(id Ptr[CMID]) error {
	return t.cm("rdma_disconnect", t.CM.Disconnect, id.addr, 0, 0, 0)
}

// CreateQP creates the id's QP on pd with the attributes at attr.
func (t *Table) CreateQP(id Ptr[CMID], pd Ptr[PD], attr Ptr[QPInitAttr]) error {
	return t.cm("rdma_create_qp", t.CM.CreateQP, id.addr, pd.addr, attr.addr, 0)
}

// DestroyQP destroys the id's QP.
func (t *Table) DestroyQP(id Ptr[CMID]) { ffi.Call1(t.CM.DestroyQP, id.addr) }

// InitQPAttr fills in the attributes at attr that move a QP of id's
// connection to the state attr.QPState (the caller sets it), as the
// connection's rdma_cm state has them (addresses, PSNs, retry counts,
// access flags), and returns the mask of those it set, for ModifyQP.
func (t *Table) InitQPAttr(id Ptr[CMID], attr Ptr[QPAttr]) (mask int, err error) {
	m, err := Alloc[int32](t, 1)
	if err != nil {
		return 0, err
	}
	defer Release(t, m)
	if err := t.cm("rdma_init_qp_attr", t.CM.InitQPAttr, id.addr, attr.addr, m.addr, 0); err != nil {
		return 0, err
	}
	return int(*m.Get()), nil
}

// Establish completes the connection of an id without a QP of its own
// after CONNECT_RESPONSE: it acknowledges the response (the passive side
// then gets ESTABLISHED). The active side gets no event of its own: the
// connection is established when Establish returns.
func (t *Table) Establish(id Ptr[CMID]) error {
	return t.cm("rdma_establish", t.CM.Establish, id.addr, 0, 0, 0)
}

// IDPortNum returns the port of its device that id's route uses.
func IDPortNum(id Ptr[CMID]) uint8 { return id.Get().PortNum }

// TakeCMEvent takes the next event from ch, copies it and acks it, in one
// hand-off to the librdmacm thread (the ack there too, so that an event is
// handled as soon as it is read). Without an event it fails with EAGAIN if ch's fd is
// non-blocking, and blocks otherwise (blocking the librdmacm thread: keep
// the fd non-blocking).
func (t *Table) TakeCMEvent(ch Ptr[EventChannel]) (CMEvent, error) {
	var ev CMEvent
	// withOut's result, the event's address, is gone with the ack.
	_, err := t.withOut(func(slot uintptr) (err error) {
		onCMThread(func() {
			r, errno := ffi.CallE(t.CM.GetCMEvent, ch.addr, slot, 0, 0, 0, 0)
			if err = errnoIfMinus1("rdma_get_cm_event", int32(r) != 0, errno); err != nil {
				return
			}
			p := unsafeptr.Load(slot, 0)
			ev = *unsafeptr.At[CMEvent](p, 0)
			ev.ConnPrivateData = 0 // freed with the event
			r, errno = ffi.CallE(t.CM.AckCMEvent, p, 0, 0, 0, 0, 0)
			err = errnoIfMinus1("rdma_ack_cm_event", int32(r) != 0, errno)
		})
		return err
	})
	return ev, err
}

// GetAddrInfo resolves node and service (either may be empty) with the hints
// at hints (or NULL). Free the result with FreeAddrInfo.
func (t *Table) GetAddrInfo(node, service string, hints Ptr[AddrInfo]) (Ptr[AddrInfo], error) {
	var cnode, cservice uintptr
	var err error
	if node != "" {
		if cnode, err = t.CString(node); err != nil {
			return Ptr[AddrInfo]{}, err
		}
		defer t.Free(cnode)
	}
	if service != "" {
		if cservice, err = t.CString(service); err != nil {
			return Ptr[AddrInfo]{}, err
		}
		defer t.Free(cservice)
	}
	ai, err := t.withOut(func(slot uintptr) error {
		return t.cmListing("rdma_getaddrinfo", t.CM.GetAddrInfo, cnode, cservice, hints.addr, slot)
	})
	return PtrAt[AddrInfo](ai), err
}

// FreeAddrInfo frees a result of GetAddrInfo.
func (t *Table) FreeAddrInfo(ai Ptr[AddrInfo]) { ffi.Call1(t.CM.FreeAddrInfo, ai.addr) }

// EventStr names an rdma_cm event type.
func (t *Table) EventStr(event uint32) string {
	return unsafeptr.GoString(ffi.Call1(t.CM.EventStr, uintptr(event)), 64)
}

// MigrateID moves id to the event channel ch.
func (t *Table) MigrateID(id Ptr[CMID], ch Ptr[EventChannel]) error {
	return t.cm("rdma_migrate_id", t.CM.MigrateID, id.addr, ch.addr, 0, 0)
}

// ReleaseDeadDevices makes librdmacm re-read the device list
// (rdma_get_devices, then rdma_free_devices): it closes its own context of a
// removed device once no id uses it, which the kernel waits for before the
// removal can finish. librdmacm does this by itself only when it next looks
// up a device it does not know.
func (t *Table) ReleaseDeadDevices() {
	if list, _ := callCM(t.CM.GetDevices, 0, 0, 0, 0, 0, 0); list != 0 {
		ffi.Call1(t.CM.FreeDevices, list)
	}
}
