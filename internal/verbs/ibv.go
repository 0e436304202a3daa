package verbs

import (
	"syscall"
	"unsafe"

	"github.com/seed54442f1a/rdmapool/internal/ffi"
	"github.com/seed54442f1a/rdmapool/internal/unsafeptr"
)

// GetDeviceList returns the RDMA devices and the list that holds them. Free the list with FreeDeviceList; devices already opened
// stay usable after that. It runs on the librdmacm thread: it allocates the
// devices libibverbs has not seen before (cmthread.go says why).
func (t *Table) GetDeviceList() (devs []Ptr[Device], list Ptr[Ptr[Device]], err error) {
	num, err := Alloc[int32](t, 1)
	if err != nil {
		return nil, list, err
	}
	defer Release(t, num)
	l, errno := callCM(t.IBV.GetDeviceList, num.addr, 0, 0, 0, 0, 0)
	if l == 0 {
		return nil, list, errnoIfMinus1("ibv_get_device_list", true, errno)
	}
	list = PtrAt[Ptr[Device]](l)
	n := int(*num.Get())
	return append([]Ptr[Device](nil), list.Slice(n)...), list, nil
}

// FreeDeviceList frees a list from GetDeviceList.
func (t *Table) FreeDeviceList(list Ptr[Ptr[Device]]) { ffi.Call1(t.IBV.FreeDeviceList, list.addr) }

// DeviceName names a device.
func (t *Table) DeviceName(dev Ptr[Device]) string {
	return unsafeptr.GoString(ffi.Call1(t.IBV.GetDeviceName, dev.addr), 64)
}

// ContextDeviceName names the device of an open context.
func (t *Table) ContextDeviceName(ctx Ptr[Context]) string {
	return t.DeviceName(ctx.Get().Device)
}

// ContextTransport returns the transport (enum ibv_transport_type) of the
// device of an open context.
func ContextTransport(ctx Ptr[Context]) int32 { return ctx.Get().Device.Get().TransportType }

// OpenDevice opens a device and returns its context.
func (t *Table) OpenDevice(dev Ptr[Device]) (Ptr[Context], error) {
	ctx, errno := ffi.CallE(t.IBV.OpenDevice, dev.addr, 0, 0, 0, 0, 0)
	return PtrAt[Context](ctx), errnoIfMinus1("ibv_open_device", ctx == 0, errno)
}

// CloseDevice closes a context.
func (t *Table) CloseDevice(ctx Ptr[Context]) error {
	return errnoIfNonzero("ibv_close_device", ffi.Call1(t.IBV.CloseDevice, ctx.addr))
}

// QueryDevice returns a device's attributes.
func (t *Table) QueryDevice(ctx Ptr[Context]) (DeviceAttr, error) {
	attr, p, err := New[DeviceAttr](t)
	if err != nil {
		return DeviceAttr{}, err
	}
	defer Release(t, p)
	err = errnoIfNonzero("ibv_query_device", ffi.Call2(t.IBV.QueryDevice, ctx.addr, p.addr))
	return *attr, err
}

// QueryPort returns a port's attributes (ports count from 1).
func (t *Table) QueryPort(ctx Ptr[Context], port uint8) (PortAttr, error) {
	attr, p, err := New[PortAttr](t)
	if err != nil {
		return PortAttr{}, err
	}
	defer Release(t, p)
	err = errnoIfNonzero("ibv_query_port", ffi.Call3(t.IBV.QueryPort, ctx.addr, uintptr(port), p.addr))
	return *attr, err
}

// QueryGID returns entry index of a port's GID table.
func (t *Table) QueryGID(ctx Ptr[Context], port uint8, index int) (GID, error) {
	gid, p, err := New[GID](t)
	if err != nil {
		return GID{}, err
	}
	defer Release(t, p)
	r, errno := ffi.CallE(t.IBV.QueryGID, ctx.addr, uintptr(port), uintptr(index), p.addr, 0, 0)
	return *gid, errnoIfMinus1("ibv_query_gid", int32(r) != 0, errno)
}

// AllocPD allocates a protection domain.
func (t *Table) AllocPD(ctx Ptr[Context]) (Ptr[PD], error) {
	pd, errno := ffi.CallE(t.IBV.AllocPD, ctx.addr, 0, 0, 0, 0, 0)
	return PtrAt[PD](pd), errnoIfMinus1("ibv_alloc_pd", pd == 0, errno)
}

// DeallocPD frees a protection domain; EBUSY while anything uses it.
func (t *Table) DeallocPD(pd Ptr[PD]) error {
	return errnoIfNonzero("ibv_dealloc_pd", ffi.Call1(t.IBV.DeallocPD, pd.addr))
}

// CreateCompChannel creates a completion channel.
func (t *Table) CreateCompChannel(ctx Ptr[Context]) (Ptr[CompChannel], error) {
	ch, errno := ffi.CallE(t.IBV.CreateCompChannel, ctx.addr, 0, 0, 0, 0, 0)
	return PtrAt[CompChannel](ch), errnoIfMinus1("ibv_create_comp_channel", ch == 0, errno)
}

// DestroyCompChannel destroys a completion channel with no CQ left on it.
func (t *Table) DestroyCompChannel(ch Ptr[CompChannel]) error {
	return errnoIfNonzero("ibv_destroy_comp_channel", ffi.Call1(t.IBV.DestroyCompChannel, ch.addr))
}

// CreateCQ creates a CQ of at least cqe entries, reporting to channel (or
// none: the zero Ptr).
func (t *Table) CreateCQ(ctx Ptr[Context], cqe int, cqContext uintptr, channel Ptr[CompChannel], vector int) (Ptr[CQ], error) {
	cq, errno := ffi.CallE(t.IBV.CreateCQ, ctx.addr, uintptr(cqe), cqContext, channel.addr, uintptr(vector), 0)
	return PtrAt[CQ](cq), errnoIfMinus1("ibv_create_cq", cq == 0, errno)
}

// DestroyCQ destroys a CQ; every event from it must have been acked.
func (t *Table) DestroyCQ(cq Ptr[CQ]) error {
	return errnoIfNonzero("ibv_destroy_cq", ffi.Call1(t.IBV.DestroyCQ, cq.addr))
}

// RegMR registers length bytes of C memory at addr with the access flags.
func (t *Table) RegMR(pd Ptr[PD], addr, length uintptr, access int) (Ptr[MR], error) {
	mr, errno := ffi.CallE(t.IBV.RegMR, pd.addr, addr, length, uintptr(access), 0, 0)
	return PtrAt[MR](mr), errnoIfMinus1("ibv_reg_mr", mr == 0, errno)
}

// DeregMR deregisters a memory region.
func (t *Table) DeregMR(mr Ptr[MR]) error {
	return errnoIfNonzero("ibv_dereg_mr", ffi.Call1(t.IBV.DeregMR, mr.addr))
}

// GetCQEvent takes the next event from a completion channel: the CQ that
// fired. It blocks unless the channel's fd is non-blocking (then EAGAIN).
// Every event must be acked with AckCQEvents before the CQ is destroyed.
func (t *Table) GetCQEvent(ch Ptr[CompChannel]) (cq Ptr[CQ], err error) {
	out, err := Alloc[CQEventOut](t, 1)
	if err != nil {
		return cq, err
	}
	defer Release(t, out)
	cq, errno := t.GetCQEventInto(ch, out)
	if errno != 0 {
		return cq, &CallError{Func: "ibv_get_cq_event", Errno: errno}
	}
	return cq, nil
}

// CQEventOut is C memory for ibv_get_cq_event's out parameters (struct
// ibv_cq ** and void **).
type CQEventOut struct {
	CQ        Ptr[CQ]
	CQContext uintptr
}

// GetCQEventInto is GetCQEvent for the reactor's loop: out is C memory for
// the out parameters, and a failure (EAGAIN when the channel is drained) is
// a bare errno, so nothing is allocated.
func (t *Table) GetCQEventInto(ch Ptr[CompChannel], out Ptr[CQEventOut]) (Ptr[CQ], syscall.Errno) {
	r, errno := ffi.CallE(t.IBV.GetCQEvent, ch.addr, out.addr, out.addr+unsafe.Offsetof(CQEventOut{}.CQContext), 0, 0, 0)
	if int32(r) != 0 {
		if errno == 0 {
			errno = syscall.EIO
		}
		return Ptr[CQ]{}, errno
	}
	return out.Get().CQ, 0
}

// AckCQEvents acks n events of cq.
func (t *Table) AckCQEvents(cq Ptr[CQ], n int) { ffi.Call2(t.IBV.AckCQEvents, cq.addr, uintptr(n)) }

// IBVCreateQP creates a QP on pd with the attributes at attr, attached to
// no rdma_cm id, in the RESET state; ibv_create_qp writes the capabilities
// the provider granted back into attr. Destroy it with IBVDestroyQP.
func (t *Table) IBVCreateQP(pd Ptr[PD], attr Ptr[QPInitAttr]) (Ptr[QP], error) {
	qp, errno := ffi.CallE(t.IBV.CreateQP, pd.addr, attr.addr, 0, 0, 0, 0)
	return PtrAt[QP](qp), errnoIfMinus1("ibv_create_qp", qp == 0, errno)
}

// ModifyQP applies to qp the members of the attributes at attr that mask
// (enum ibv_qp_attr_mask) names.
func (t *Table) ModifyQP(qp Ptr[QP], attr Ptr[QPAttr], mask int) error {
	return errnoIfNonzero("ibv_modify_qp", ffi.Call3(t.IBV.ModifyQP, qp.addr, attr.addr, uintptr(mask)))
}

// IBVDestroyQP destroys a QP created with ibv_create_qp (rdma_cm's QPs are
// destroyed with the CM's DestroyQP).
func (t *Table) IBVDestroyQP(qp Ptr[QP]) error {
	return errnoIfNonzero("ibv_destroy_qp", ffi.Call1(t.IBV.DestroyQP, qp.addr))
}

// WCStatusStr describes a work-completion status.
func (t *Table) WCStatusStr(status uint32) string {
	return unsafeptr.GoString(ffi.Call1(t.IBV.WCStatusStr, uintptr(status)), 128)
}
