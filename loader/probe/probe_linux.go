package probe

import (
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"

	"github.com/seed54442f1a/rdmapool/internal/unsafeptr"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
	"github.com/seed54442f1a/rdmapool/loader"
)

// Unlimited is a Memlock value without a limit: RLIM_INFINITY.
const Unlimited = unix.RLIM_INFINITY

// Run probes this machine.
func Run() Report {
	var r Report
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err == nil {
		r.Memlock = Memlock{rl.Cur, rl.Max}
	}
	r.Libraries, r.LoadErr = loader.Load()
	if r.LoadErr != nil {
		r.Verdict = "RDMA cannot be used: " + r.LoadErr.Error()
		return r
	}
	t := verbs.Bound()
	devs, list, err := t.GetDeviceList()
	if err != nil {
		r.ListErr = err
		r.Verdict = fmt.Sprintf("RDMA cannot be used: listing devices failed: %v; is the ib_uverbs module loaded?", err)
		return r
	}
	defer t.FreeDeviceList(list)
	var exerciseErr error
	for _, d := range devs {
		dev := describe(t, d)
		r.Devices = append(r.Devices, dev)
		if !r.Usable && dev.Err == nil && hasActive(dev) {
			if exerciseErr = exercise(t, d); exerciseErr == nil {
				r.Usable = true
			}
		}
	}
	switch {
	case len(devs) == 0:
		r.Verdict = "RDMA cannot be used: no RDMA device; load a NIC driver, or for soft-RoCE: modprobe rdma_rxe && rdma link add rxe0 type rxe netdev <ifname>"
	case r.Usable:
		r.Verdict = "RDMA can be used here"
	case exerciseErr != nil:
		r.Verdict = fmt.Sprintf("RDMA cannot be used: %v", exerciseErr)
	default:
		r.Verdict = "RDMA cannot be used: no device has an ACTIVE port; check the link (rdma link show)"
	}
	return r
}

func hasActive(d Device) bool {
	for _, p := range d.Ports {
		if p.State == "ACTIVE" {
			return true
		}
	}
	return false
}

func describe(t *verbs.Table, dev verbs.Ptr[verbs.Device]) Device {
	d := Device{Name: t.DeviceName(dev)}
	ctx, err := t.OpenDevice(dev)
	if err != nil {
		d.Err = err
		return d
	}
	defer t.CloseDevice(ctx)
	attr, err := t.QueryDevice(ctx)
	if err != nil {
		d.Err = err
		return d
	}
	for p := uint8(1); p <= attr.PhysPortCnt; p++ {
		pa, err := t.QueryPort(ctx, p)
		if err != nil {
			d.Err = err
			return d
		}
		port := Port{Num: p, State: portState(pa.State), LinkLayer: linkLayer(pa.LinkLayer), ActiveMTU: 128 << pa.ActiveMTU}
		for i := 0; i < int(pa.GIDTblLen) && i < 256; i++ {
			g, err := t.QueryGID(ctx, p, i)
			if err != nil || g.Raw == ([16]byte{}) {
				continue
			}
			port.GIDs = append(port.GIDs, GID{Index: i, Addr: netip.AddrFrom16(g.Raw)})
		}
		d.Ports = append(d.Ports, port)
	}
	return d
}

// connectionLocked is the most one connection with qp's default options
// registers, and so locks, once its buffers have grown (an idle one
// registers 192 KiB): a 1 MiB receive buffer, 1 MiB of staging for a peer
// with the same, and 64 KiB of command slots.
const connectionLocked = 2<<20 + 64<<10

// exercise creates and frees a PD, a CQ and a registered buffer of one
// connection's size: a locked-memory limit too low for that (a container's
// 64 KiB) makes RDMA unusable here, though a page would register.
func exercise(t *verbs.Table, dev verbs.Ptr[verbs.Device]) (err error) {
	ctx, err := t.OpenDevice(dev)
	if err != nil {
		return err
	}
	defer t.CloseDevice(ctx)
	pd, err := t.AllocPD(ctx)
	if err != nil {
		return err
	}
	defer t.DeallocPD(pd)
	cq, err := t.CreateCQ(ctx, 16, 0, verbs.Ptr[verbs.CompChannel]{}, 0)
	if err != nil {
		return err
	}
	defer t.DestroyCQ(cq)
	buf, err := unix.Mmap(-1, 0, connectionLocked, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return fmt.Errorf("mmap: %w", err)
	}
	defer unix.Munmap(buf)
	mr, err := t.RegMR(pd, unsafeptr.Addr(buf), uintptr(len(buf)), verbs.AccessLocalWrite)
	if err != nil {
		if errors.Is(err, unix.ENOMEM) || errors.Is(err, unix.EPERM) {
			return fmt.Errorf("registering %d KiB, what one connection with the default buffers locks: %w (locked memory limit is too low? raise RLIMIT_MEMLOCK: ulimit -l unlimited)", connectionLocked>>10, err)
		}
		return err
	}
	return t.DeregMR(mr)
}

func portState(s uint32) string {
	switch s {
	case verbs.PortDown:
		return "DOWN"
	case verbs.PortInit:
		return "INIT"
	case verbs.PortArmed:
		return "ARMED"
	case verbs.PortActive:
		return "ACTIVE"
	}
	return fmt.Sprintf("STATE(%d)", s)
}

func linkLayer(l uint8) string {
	switch l {
	case verbs.LinkLayerEthernet:
		return "Ethernet"
	case verbs.LinkLayerInfiniBand, verbs.LinkLayerUnspecified:
		return "InfiniBand"
	}
	return fmt.Sprintf("link layer %d", l)
}
