package pool

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"strings"
	"syscall"
)

// uverbsDir is where the kernel lists the RDMA devices a process can use
// (one uverbsN each), the list libibverbs reads.
const uverbsDir = "/sys/class/infiniband_verbs"

// noRDMADevice is a look, in microseconds and without loading the RDMA
// libraries (which costs a millisecond and more), for a conclusive "no RDMA
// device": the kernel lists none (or has no RDMA verbs module loaded) in a
// sysfs that is there. It returns nil when there may be one, or when it
// cannot tell (no sysfs): the RDMA dial then finds out. The error matches
// syscall.ENODEV, as qp.Dial's on such a machine does.
func noRDMADevice(addr string) error {
	ents, err := os.ReadDir(uverbsDir)
	switch {
	case err == nil:
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "uverbs") {
				return nil
			}
		}
		return &net.OpError{Op: "dial", Net: "rdma", Addr: stringAddr(addr), Err: &noDeviceError{}}
	case errors.Is(err, fs.ErrNotExist):
		if _, err := os.Stat("/sys/class"); err != nil {
			return nil // no sysfs to ask
		}
		return &net.OpError{Op: "dial", Net: "rdma", Addr: stringAddr(addr), Err: &noDeviceError{noModule: true}}
	}
	return nil
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
