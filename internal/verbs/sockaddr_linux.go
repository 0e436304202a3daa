package verbs

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/seed54442f1a/rdmapool/internal/unsafeptr"
)

// Sockaddr writes ap as a struct sockaddr_in or sockaddr_in6 into C memory.
// Free it with Release.
func (t *Table) Sockaddr(ap netip.AddrPort) (Ptr[Sockaddr], error) {
	a := ap.Addr()
	if a.Is4() || a.Is4In6() {
		sa, p, err := New[unix.RawSockaddrInet4](t)
		if err != nil {
			return Ptr[Sockaddr]{}, err
		}
		sa.Family = unix.AF_INET
		sa.Addr = a.Unmap().As4()
		binary.BigEndian.PutUint16(unsafeptr.Bytes(p.addr, 4)[2:], ap.Port())
		return PtrAt[Sockaddr](p.addr), nil
	}
	if !a.Is6() {
		return Ptr[Sockaddr]{}, fmt.Errorf("invalid address %v", ap)
	}
	scope, err := scopeID(a.Zone())
	if err != nil {
		return Ptr[Sockaddr]{}, fmt.Errorf("address %v: %w", ap, err)
	}
	sa, p, err := New[unix.RawSockaddrInet6](t)
	if err != nil {
		return Ptr[Sockaddr]{}, err
	}
	sa.Family = unix.AF_INET6
	sa.Addr = a.As16()
	sa.Scope_id = scope
	binary.BigEndian.PutUint16(unsafeptr.Bytes(p.addr, 4)[2:], ap.Port())
	return PtrAt[Sockaddr](p.addr), nil
}

// AddrPortOf reads a struct sockaddr_in or sockaddr_in6 from C memory; other
// families give the zero AddrPort.
func AddrPortOf(p Ptr[Sockaddr]) netip.AddrPort {
	if p.IsNil() {
		return netip.AddrPort{}
	}
	sa := p.addr
	b := unsafeptr.Bytes(sa, 4)
	port := binary.BigEndian.Uint16(b[2:])
	switch *unsafeptr.At[uint16](sa, 0) {
	case unix.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4(unsafeptr.At[unix.RawSockaddrInet4](sa, 0).Addr), port)
	case unix.AF_INET6:
		s := unsafeptr.At[unix.RawSockaddrInet6](sa, 0)
		a := netip.AddrFrom16(s.Addr)
		if s.Scope_id != 0 {
			a = a.WithZone(fmt.Sprint(s.Scope_id))
		}
		return netip.AddrPortFrom(a, port)
	}
	return netip.AddrPort{}
}

// CMIDAddrs returns the local and the remote address of an rdma_cm id.
func CMIDAddrs(id Ptr[CMID]) (local, remote netip.AddrPort) {
	return AddrPortOf(PtrAt[Sockaddr](id.addr + offsetSrcAddr)), AddrPortOf(PtrAt[Sockaddr](id.addr + offsetDstAddr))
}

// scopeID is the sin6_scope_id of an IPv6 zone: an interface's name or
// index (a link-local address such as fe80::1%eth0 needs one).
func scopeID(zone string) (uint32, error) {
	if zone == "" {
		return 0, nil
	}
	if n, err := strconv.ParseUint(zone, 10, 32); err == nil {
		return uint32(n), nil
	}
	ifi, err := net.InterfaceByName(zone)
	if err != nil {
		return 0, fmt.Errorf("zone %q: %w", zone, err)
	}
	return uint32(ifi.Index), nil
}
