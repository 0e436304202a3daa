//go:build !linux

package verbs

import (
	"errors"
	"net/netip"
	"runtime"
)

// Sockaddr fails off Linux, whose struct sockaddr layouts rdma_cm takes.
func (t *Table) Sockaddr(ap netip.AddrPort) (Ptr[Sockaddr], error) {
	return Ptr[Sockaddr]{}, errors.New("verbs: sockaddrs are only built for Linux; this is " + runtime.GOOS)
}

// AddrPortOf gives the zero AddrPort off Linux.
func AddrPortOf(sa Ptr[Sockaddr]) netip.AddrPort { return netip.AddrPort{} }

// CMIDAddrs gives zero AddrPorts off Linux.
func CMIDAddrs(id Ptr[CMID]) (local, remote netip.AddrPort) { return }
