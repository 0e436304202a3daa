package pool

import (
	"net"
	"os"
	"strings"
	"syscall"
	"time"
)

// uverbsDir is where the kernel lists the RDMA devices a process can use
// (one uverbsN each), the list libibverbs reads.
const uverbsDir = "/sys/class/infiniband_verbs"

// A look at the kernel's device list, without loading the RDMA libraries
// (which costs a millisecond and more), can say conclusively that there is
// no RDMA device: the kernel lists none, or has no RDMA verbs module
// loaded, in a sysfs that is there.
type lookResult int

const (
	lookUnsure   lookResult = iota // there may be a device, or no sysfs to ask: dial and see
	lookNone                       // the kernel lists no device
	lookNoModule                   // no verbs module loaded: no device
)

// early is the look taken ahead of need, as the process starts (it costs
// tens of microseconds, which a first dial would otherwise pay): the
// dials of the process's first second use it; later ones look again, so
// that a device added meanwhile is seen.
var early struct {
	done chan struct{}
	res  lookResult
	at   time.Time
}

const earlyValid = time.Second

func init() {
	early.done = make(chan struct{})
	go func() {
		early.res, early.at = look(), time.Now()
		close(early.done)
	}()
}

// noRDMADevice returns an error matching syscall.ENODEV, as qp.Dial's on
// such a machine does, when the look says there is no RDMA device, and nil
// when there may be one.
func noRDMADevice(addr string) error { return lookNoDevice("dial", addr) }

// lookNoDevice is noRDMADevice for op, "dial" or "listen".
func lookNoDevice(op, addr string) error {
	r := lookUnsure
	select {
	case <-early.done:
		if time.Since(early.at) < earlyValid {
			r = early.res
			break
		}
		r = look()
	default:
		r = look()
	}
	if r == lookUnsure {
		return nil
	}
	return &net.OpError{Op: op, Net: "rdma", Addr: stringAddr(addr), Err: &noDeviceError{noModule: r == lookNoModule}}
}

func look() lookResult {
	// A stat(2) or two answer on a machine without the verbs module, the
	// common case without RDMA.
	var st syscall.Stat_t
	if err := syscall.Stat(uverbsDir, &st); err == syscall.ENOENT {
		if syscall.Stat("/sys/class", &st) != nil {
			return lookUnsure // no sysfs to ask
		}
		return lookNoModule
	}
	ents, err := os.ReadDir(uverbsDir)
	if err != nil {
		return lookUnsure
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "uverbs") {
			return lookUnsure
		}
	}
	return lookNone
}

// noDeviceError is noRDMADevice's: it matches syscall.ENODEV, and says
// what to do as `rdmapool info` does.
type noDeviceError struct {
	noModule bool // the kernel has no RDMA verbs module loaded
}

func (e *noDeviceError) Error() string {
	if e.noModule {
		return "no RDMA device: " + uverbsDir + " is missing: " + syscall.ENODEV.Error()
	}
	return "no RDMA device: " + uverbsDir + " lists none: " + syscall.ENODEV.Error()
}

func (e *noDeviceError) Is(target error) bool { return target == syscall.ENODEV }

func (e *noDeviceError) remedy() string {
	if e.noModule {
		return "RDMA cannot be used: no RDMA device is listed; is the ib_uverbs module loaded? " +
			"Else load a NIC driver, or for soft-RoCE: modprobe rdma_rxe && rdma link add rxe0 type rxe netdev <ifname>"
	}
	return remedy(ReasonNoDevice)
}

type stringAddr string

func (stringAddr) Network() string  { return "rdma" }
func (a stringAddr) String() string { return string(a) }
