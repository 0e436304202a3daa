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
func (t *Table) CreateEventChannel() (uintptr, error) {
	ch, errno := callCM(t.CM.CreateEventChannel, 0, 0, 0, 0, 0, 0)
	return ch, errnoIfMinus1("rdma_create_event_channel", ch == 0, errno)
}

// DestroyEventChannel closes an event channel that has no ids left.
func (t *Table) DestroyEventChannel(ch uintptr) { ffi.Call1(t.CM.DestroyEventChannel, ch) }

// EventChannelFD returns the file descriptor of an event channel (its first
// member is the fd).
func EventChannelFD(ch uintptr) int { return int(*unsafeptr.At[int32](ch, 0)) }

// CompChannelFD returns the file descriptor of a completion channel.
func CompChannelFD(ch uintptr) int { return int(unsafeptr.At[CompChannel](ch, 0).FD) }

// CreateID creates an rdma_cm id on channel ch with the given context value.
func (t *Table) CreateID(ch, context uintptr, ps int) (uintptr, error) {
	return t.withOut(func(slot uintptr) error {
		return t.cmListing("rdma_create_id", t.CM.CreateID, ch, slot, context, uintptr(ps))
	})
}

// DestroyID destroys an id; its QP must be gone and its events acked.
func (t *Table) DestroyID(id uintptr) error {
	return t.cm("rdma_destroy_id", t.CM.DestroyID, id, 0, 0, 0)
}

// SetOption calls rdma_set_option with an option value in C memory.
func (t *Table) SetOption(id uintptr, level, name int, val, n uintptr) error {
	r, errno := ffi.CallE(t.CM.SetOption, id, uintptr(level), uintptr(name), val, n, 0)
	return errnoIfMinus1("rdma_set_option", int32(r) != 0, errno)
}

// BindAddr binds id to the sockaddr at sa (C memory).
func (t *Table) BindAddr(id, sa uintptr) error {
	return t.cmListing("rdma_bind_addr", t.CM.BindAddr, id, sa, 0, 0)
}

// Listen starts listening on a bound id.
func (t *Table) Listen(id uintptr, backlog int) error {
	return t.cmListing("rdma_listen", t.CM.Listen, id, uintptr(backlog), 0, 0)
}

// Accept accepts a connection request on id with the parameters at param.
func (t *Table) Accept(id, param uintptr) error {
	return t.cm("rdma_accept", t.CM.Accept, id, param, 0, 0)
}

// Reject rejects a connection request, without private data.
func (t *Table) Reject(id uintptr) error {
	return t.cm("rdma_reject", t.CM.Reject, id, 0, 0, 0)
}

// ResolveAddr resolves dst (and optionally binds to src; 0 for any).
func (t *Table) ResolveAddr(id, src, dst uintptr, timeoutMS int) error {
	return t.cm("rdma_resolve_addr", t.CM.ResolveAddr, id, src, dst, uintptr(timeoutMS))
}

// ResolveRoute resolves the route for an id whose address is resolved.
func (t *Table) ResolveRoute(id uintptr, timeoutMS int) error {
	return t.cm("rdma_resolve_route", t.CM.ResolveRoute, id, uintptr(timeoutMS), 0, 0)
}

// Connect starts connecting id with the parameters at param.
func (t *Table) Connect(id, param uintptr) error {
	return t.cm("rdma_connect", t.CM.Connect, id, param, 0, 0)
}

// Disconnect disconnects id; both sides then get DISCONNECTED.
func (t *Table) Disconnect(id uintptr) error {
	return t.cm("rdma_disconnect", t.CM.Disconnect, id, 0, 0, 0)
}

// CreateQP creates the id's QP on pd with the attributes at attr.
func (t *Table) CreateQP(id, pd, attr uintptr) error {
	return t.cm("rdma_create_qp", t.CM.CreateQP, id, pd, attr, 0)
}

// DestroyQP destroys the id's QP.
func (t *Table) DestroyQP(id uintptr) { ffi.Call1(t.CM.DestroyQP, id) }

// TakeCMEvent takes the next event from ch, copies it and acks it, in one
// hand-off to the librdmacm thread (the ack there too, so that an event is
// handled as soon as it is read). Without an event it fails with EAGAIN if ch's fd is
// non-blocking, and blocks otherwise (blocking the librdmacm thread: keep
// the fd non-blocking).
func (t *Table) TakeCMEvent(ch uintptr) (CMEvent, error) {
	var ev CMEvent
	// withOut's result, the event's address, is gone with the ack.
	_, err := t.withOut(func(slot uintptr) (err error) {
		onCMThread(func() {
			r, errno := ffi.CallE(t.CM.GetCMEvent, ch, slot, 0, 0, 0, 0)
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
// at hints (C memory, or 0). Free the result with FreeAddrInfo.
func (t *Table) GetAddrInfo(node, service string, hints uintptr) (uintptr, error) {
	var cnode, cservice uintptr
	var err error
	if node != "" {
		if cnode, err = t.CString(node); err != nil {
			return 0, err
		}
		defer t.Free(cnode)
	}
	if service != "" {
		if cservice, err = t.CString(service); err != nil {
			return 0, err
		}
		defer t.Free(cservice)
	}
	return t.withOut(func(slot uintptr) error {
		return t.cmListing("rdma_getaddrinfo", t.CM.GetAddrInfo, cnode, cservice, hints, slot)
	})
}

// FreeAddrInfo frees a result of GetAddrInfo.
func (t *Table) FreeAddrInfo(ai uintptr) { ffi.Call1(t.CM.FreeAddrInfo, ai) }

// EventStr names an rdma_cm event type.
func (t *Table) EventStr(event uint32) string {
	return unsafeptr.GoString(ffi.Call1(t.CM.EventStr, uintptr(event)), 64)
}

// MigrateID moves id to the event channel ch.
func (t *Table) MigrateID(id, ch uintptr) error {
	return t.cm("rdma_migrate_id", t.CM.MigrateID, id, ch, 0, 0)
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
