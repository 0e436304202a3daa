package benchrun

import (
	"math"
	"net"
	"net/netip"

	"github.com/seed54442f1a/rdmapool/loader/probe"
	"github.com/seed54442f1a/rdmapool/qp"
	"github.com/seed54442f1a/rdmapool/server"
)

// Embedded is the in-process server `rdmapool bench` runs against when no
// host or port is given: TCP on 127.0.0.1 always, and RDMA where it works.
type Embedded struct {
	srv *server.Server
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
	return StartEmbeddedAuth(rdma, opts, "")
}

// StartEmbeddedAuth is StartEmbedded with a password that clients must
// give (server.Options.Password); empty means none.
func StartEmbeddedAuth(rdma bool, opts *qp.Options, password string) (*Embedded, error) {
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	// No bound on clients beyond valkey's: -c is bounded by the file
	// limit, and may pass valkey's 10000.
	e := &Embedded{srv: server.New(&server.Options{MaxClients: math.MaxInt, Password: password}), TCPAddr: tl.Addr().String()}
	go e.srv.Serve(tl)
	if rdma {
		if ip, err := probe.Addr(); err != nil {
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
