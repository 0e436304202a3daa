package verbs

import (
	"syscall"

	"github.com/seed54442f1a/rdmapool/internal/ffi"
	"github.com/seed54442f1a/rdmapool/internal/unsafeptr"
)

// GetDeviceList returns the RDMA devices (struct ibv_device *) and the list
// that holds them. Free the list with FreeDeviceList; devices already opened
// stay usable after that. It runs on the librdmacm thread: it allocates the
// devices libibverbs has not seen before (cmthread.go says why).
func (t *Table) GetDeviceList() (devs []uintptr, list uintptr, err error) {
	num, err := t.Calloc(8)
	if err != nil {
		return nil, 0, err
	}
	defer t.Free(num)
	list, errno := callCM(t.IBV.GetDeviceList, num, 0, 0, 0, 0, 0)
	if list == 0 {
		return nil, 0, errnoIfMinus1("ibv_get_device_list", true, errno)
	}
	n := int(*unsafeptr.At[int32](num, 0))
	return append([]uintptr(nil), unsafeptr.Slice[uintptr](list, n)...), list, nil
}

// FreeDeviceList frees a list from GetDeviceList.
func (t *Table) FreeDeviceList(list uintptr) { ffi.Call1(t.IBV.FreeDeviceList, list) }

// DeviceName names a device.
func (t *Table) DeviceName(dev uintptr) string {
	return unsafeptr.GoString(ffi.Call1(t.IBV.GetDeviceName, dev), 64)
}

// OpenDevice opens a device and returns its struct ibv_context *.
func (t *Table) OpenDevice(dev uintptr) (uintptr, error) {
	ctx, errno := ffi.CallE(t.IBV.OpenDevice, dev, 0, 0, 0, 0, 0)
	return ctx, errnoIfMinus1("ibv_open_device", ctx == 0, errno)
}

// CloseDevice closes a context.
func (t *Table) CloseDevice(ctx uintptr) error {
	return errnoIfNonzero("ibv_close_device", ffi.Call1(t.IBV.CloseDevice, ctx))
}

// QueryDevice returns a device's attributes.
func (t *Table) QueryDevice(ctx uintptr) (DeviceAttr, error) {
	attr, p, err := New[DeviceAttr](t)
	if err != nil {
		return DeviceAttr{}, err
	}
	defer t.Free(p)
	err = errnoIfNonzero("ibv_query_device", ffi.Call2(t.IBV.QueryDevice, ctx, p))
	return *attr, err
}

// QueryPort returns a port's attributes (ports count from 1).
func (t *Table) QueryPort(ctx uintptr, port uint8) (PortAttr, error) {
	attr, p, err := New[PortAttr](t)
	if err != nil {
		return PortAttr{}, err
	}
	defer t.Free(p)
	err = errnoIfNonzero("ibv_query_port", ffi.Call3(t.IBV.QueryPort, ctx, uintptr(port), p))
	return *attr, err
}

// QueryGID returns entry index of a port's GID table.
func (t *Table) QueryGID(ctx uintptr, port uint8, index int) (GID, error) {
	gid, p, err := New[GID](t)
	if err != nil {
		return GID{}, err
	}
	defer t.Free(p)
	r, errno := ffi.CallE(t.IBV.QueryGID, ctx, uintptr(port), uintptr(index), p, 0, 0)
	return *gid, errnoIfMinus1("ibv_query_gid", int32(r) != 0, errno)
}

// AllocPD allocates a protection domain.
func (t *Table) AllocPD(ctx uintptr) (uintptr, error) {
	pd, errno := ffi.CallE(t.IBV.AllocPD, ctx, 0, 0, 0, 0, 0)
	return pd, errnoIfMinus1("ibv_alloc_pd", pd == 0, errno)
}

// DeallocPD frees a protection domain; EBUSY while anything uses it.
func (t *Table) DeallocPD(pd uintptr) error {
	return errnoIfNonzero("ibv_dealloc_pd", ffi.Call1(t.IBV.DeallocPD, pd))
}

// CreateCompChannel creates a completion channel.
func (t *Table) CreateCompChannel(ctx uintptr) (uintptr, error) {
	ch, errno := ffi.CallE(t.IBV.CreateCompChannel, ctx, 0, 0, 0, 0, 0)
	return ch, errnoIfMinus1("ibv_create_comp_channel", ch == 0, errno)
}

// DestroyCompChannel destroys a completion channel with no CQ left on it.
func (t *Table) DestroyCompChannel(ch uintptr) error {
	return errnoIfNonzero("ibv_destroy_comp_channel", ffi.Call1(t.IBV.DestroyCompChannel, ch))
}

// CreateCQ creates a CQ of at least cqe entries, reporting to channel (or 0).
func (t *Table) CreateCQ(ctx uintptr, cqe int, cqContext, channel uintptr, vector int) (uintptr, error) {
	cq, errno := ffi.CallE(t.IBV.CreateCQ, ctx, uintptr(cqe), cqContext, channel, uintptr(vector), 0)
	return cq, errnoIfMinus1("ibv_create_cq", cq == 0, errno)
}

// DestroyCQ destroys a CQ; every event from it must have been acked.
func (t *Table) DestroyCQ(cq uintptr) error {
	return errnoIfNonzero("ibv_destroy_cq", ffi.Call1(t.IBV.DestroyCQ, cq))
}

// RegMR registers length bytes of C memory at addr with the access flags.
func (t *Table) RegMR(pd, addr, length uintptr, access int) (uintptr, error) {
	mr, errno := ffi.CallE(t.IBV.RegMR, pd, addr, length, uintptr(access), 0, 0)
	return mr, errnoIfMinus1("ibv_reg_mr", mr == 0, errno)
}

// DeregMR deregisters a memory region.
func (t *Table) DeregMR(mr uintptr) error {
	return errnoIfNonzero("ibv_dereg_mr", ffi.Call1(t.IBV.DeregMR, mr))
}

// GetCQEvent takes the next event from a completion channel: the CQ that
// fired. It blocks unless the channel's fd is non-blocking (then EAGAIN).
// Every event must be acked with AckCQEvents before the CQ is destroyed.
func (t *Table) GetCQEvent(ch uintptr) (cq uintptr, err error) {
	out, err := t.Calloc(16)
	if err != nil {
		return 0, err
	}
	defer t.Free(out)
	r, errno := ffi.CallE(t.IBV.GetCQEvent, ch, out, out+8, 0, 0, 0)
	if err := errnoIfMinus1("ibv_get_cq_event", int32(r) != 0, errno); err != nil {
		return 0, err
	}
	return unsafeptr.Load(out, 0), nil
}

// GetCQEventInto is GetCQEvent for the reactor's loop: out is 16 bytes of
// C memory for the out parameters, and a failure (EAGAIN when the channel
// is drained) is a bare errno, so nothing is allocated.
func (t *Table) GetCQEventInto(ch, out uintptr) (uintptr, syscall.Errno) {
	r, errno := ffi.CallE(t.IBV.GetCQEvent, ch, out, out+8, 0, 0, 0)
	if int32(r) != 0 {
		return 0, errno
	}
	return unsafeptr.Load(out, 0), 0
}

// AckCQEvents acks n events of cq.
func (t *Table) AckCQEvents(cq uintptr, n int) { ffi.Call2(t.IBV.AckCQEvents, cq, uintptr(n)) }

// IBVDestroyQP destroys a QP created with ibv_create_qp (rdma_cm's QPs are
// destroyed with the CM's DestroyQP).
func (t *Table) IBVDestroyQP(qp uintptr) error {
	return errnoIfNonzero("ibv_destroy_qp", ffi.Call1(t.IBV.DestroyQP, qp))
}

// WCStatusStr describes a work-completion status.
func (t *Table) WCStatusStr(status uint32) string {
	return unsafeptr.GoString(ffi.Call1(t.IBV.WCStatusStr, uintptr(status)), 128)
}
