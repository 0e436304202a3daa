package verbs_test

import (
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
)

// TestSockaddrZone: an IPv6 zone, by interface name or index, becomes the
// sockaddr's scope id and comes back as the index; an unknown one is an
// error.
func TestSockaddrZone(t *testing.T) {
	rdmatest.Require(t)
	tb := verbs.Bound()
	lo, err := net.InterfaceByName("lo")
	if err != nil {
		t.Skipf("no loopback interface: %v", err)
	}
	want := strconv.Itoa(lo.Index)
	for _, in := range []string{"[fe80::1%lo]:7", "[fe80::1%" + want + "]:7"} {
		p, err := tb.Sockaddr(netip.MustParseAddrPort(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		got := verbs.AddrPortOf(p)
		verbs.Release(tb, p)
		if got.Addr().Zone() != want || got.Port() != 7 {
			t.Errorf("%s came back as %v, want zone %s and port 7", in, got, want)
		}
	}
	if _, err := tb.Sockaddr(netip.MustParseAddrPort("[fe80::1%nosuch0]:7")); err == nil || !strings.Contains(err.Error(), "nosuch0") {
		t.Errorf("an unknown zone: %v, want an error naming it", err)
	}
}
