// Package probe finds out whether RDMA can be used in this process: it binds
// the libraries, lists devices and ports with their GIDs, reads the locked
// memory limit, and exercises the first active port (PD, CQ, memory
// registration) rather than guessing.
//
// Probing is built for Linux (probe_linux.go); on other systems
// (probe_other.go) Run reports the loader's answer, that RDMA needs Linux.
package probe

import (
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/seed54442f1a/rdmapool/loader"
)

// Port is one port of a device.
type Port struct {
	Num       uint8
	State     string // "ACTIVE", "DOWN", ...
	LinkLayer string // "Ethernet" (RoCE) or "InfiniBand"
	ActiveMTU int    // bytes
	GIDs      []GID
}

// GID is a non-zero entry of a port's GID table.
type GID struct {
	Index int
	Addr  netip.Addr // RoCE GIDs are IPv6 or IPv4-mapped addresses
}

// Device is an RDMA device.
type Device struct {
	Name  string
	Ports []Port
	Err   error // why it could not be opened or queried, if it could not
}

// Memlock is RLIMIT_MEMLOCK, in bytes; Unlimited means unlimited.
type Memlock struct {
	Cur, Max uint64
}

// Report is what Run found.
type Report struct {
	Libraries *loader.Libraries // nil when they could not be loaded
	LoadErr   error
	ListErr   error // listing the devices failed (libraries loaded)
	Devices   []Device
	Memlock   Memlock
	// Usable is true when an active port was found and a PD, a CQ and a
	// registered buffer were created on it.
	Usable bool
	// Verdict says in one line whether RDMA can be used and, if not, what to do.
	Verdict string
}

// IPv4 returns the first IPv4 GID of an active port: an address to listen
// on or dial from over RDMA (RoCE). ok is false when there is none.
func (r Report) IPv4() (addr netip.Addr, ok bool) {
	for _, d := range r.Devices {
		for _, p := range d.Ports {
			if p.State != "ACTIVE" {
				continue
			}
			for _, g := range p.GIDs {
				if a := g.Addr.Unmap(); a.Is4() {
					return a, true
				}
			}
		}
	}
	return netip.Addr{}, false
}

// AddrEnv names the environment variable that, when set, overrides the
// address Addr picks. The VM harness sets it to the interface that carries
// soft-RoCE, so that tests, `rdmapool serve` and `rdmapool bench` agree.
const AddrEnv = "RDMAPOOL_TEST_ADDR"

// Addr returns the local address to listen on or dial from over RDMA: the
// value of AddrEnv when it is set, else the first IPv4 GID of an active port.
// The error says why there is none (the probe's verdict when RDMA is not
// usable). It probes the devices, so call it once, not per connection.
func Addr() (netip.Addr, error) {
	if s := os.Getenv(AddrEnv); s != "" {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("%s=%q: %v", AddrEnv, s, err)
		}
		return a, nil
	}
	r := Run()
	if !r.Usable {
		return netip.Addr{}, errors.New(r.Verdict)
	}
	if a, ok := r.IPv4(); ok {
		return a, nil
	}
	return netip.Addr{}, errors.New("RDMA cannot be used: no active RDMA port has an IPv4 GID")
}
