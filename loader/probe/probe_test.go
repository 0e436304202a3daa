package probe

import (
	"net/netip"
	"testing"
)

// TestIPv4: the first IPv4 GID of an active port, skipping ports that are
// down and GIDs that are IPv6.
func TestIPv4(t *testing.T) {
	gid := func(s string) GID { return GID{Addr: netip.MustParseAddr(s)} }
	r := Report{Devices: []Device{
		{Name: "down", Ports: []Port{{State: "DOWN", GIDs: []GID{gid("::ffff:10.0.0.1")}}}},
		{Name: "up", Ports: []Port{{State: "ACTIVE", GIDs: []GID{gid("fe80::1"), gid("::ffff:10.0.0.2")}}}},
	}}
	if a, ok := r.IPv4(); !ok || a != netip.MustParseAddr("10.0.0.2") {
		t.Errorf("IPv4() = %v, %v; want 10.0.0.2", a, ok)
	}
	if a, ok := (Report{}).IPv4(); ok {
		t.Errorf("IPv4() of no device = %v, want none", a)
	}
}
