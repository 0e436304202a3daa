package benchrun

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"

	"github.com/seed54442f1a/rdmapool/internal/probe"
	"github.com/seed54442f1a/rdmapool/internal/respserver"
	"github.com/seed54442f1a/rdmapool/qp"
)

// Embedded is the in-process server `rdmapool bench` runs against when no
// host or port is given: TCP on 127.0.0.1 always, and RDMA where it works.
type Embedded struct {
	srv *respserver.Server
	// TCPAddr is the TCP listener's address.
	TCPAddr string
	// RDMAAddr is the RDMA listener's address, empty when there is none;
	// then RDMAErr says why.
	RDMAAddr string
	RDMAErr  error
}

// StartEmbedded starts the server on ephemeral ports. The RDMA listener is
// on RDMAPOOL_TEST_ADDR when set, else on the first IPv4 GID of an active
// port (probe.Run), when rdma is true; opts are its connections' options
// (nil: the defaults).
func StartEmbedded(rdma bool, opts *qp.Options) (*Embedded, error) {
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	// No bound on clients beyond valkey's: -c is bounded by the file
	// limit, and may pass valkey's 10000.
	e := &Embedded{srv: respserver.New(&respserver.Options{MaxClients: math.MaxInt}), TCPAddr: tl.Addr().String()}
	go e.srv.Serve(tl)
	if rdma {
		if ip, err := rdmaIP(); err != nil {
			e.RDMAErr = err
		} else if rl, err := qp.Listen(netip.AddrPortFrom(ip, 0).String(), opts); err != nil {
			e.RDMAErr = err
		} else {
			e.RDMAAddr = rl.Addr().String()
			go e.srv.Serve(rl)
		}
	}
	return e, nil
}

// Close stops the server.
func (e *Embedded) Close() error { return e.srv.Close() }

// rdmaIP is the address to serve RDMA on, or why there is none.
func rdmaIP() (netip.Addr, error) {
	if s := os.Getenv("RDMAPOOL_TEST_ADDR"); s != "" {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Addr{}, fmt.Errorf("RDMAPOOL_TEST_ADDR=%q: %v", s, err)
		}
		return a, nil
	}
	r := probe.Run()
	if !r.Usable {
		return netip.Addr{}, errors.New(r.Verdict)
	}
	if a, ok := r.IPv4(); ok {
		return a, nil
	}
	return netip.Addr{}, errors.New("RDMA cannot be used: no active RDMA port has an IPv4 GID")
}
