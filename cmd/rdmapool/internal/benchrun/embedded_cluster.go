package benchrun

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"

	"github.com/seed54442f1a/rdmapool/loader/probe"
	"github.com/seed54442f1a/rdmapool/qp"
	"github.com/seed54442f1a/rdmapool/server"
)

// MaxClusterNodes bounds StartEmbeddedCluster's nodes.
const MaxClusterNodes = 64

// EmbeddedCluster is the in-process cluster `rdmapool bench --cluster`
// runs against when no host or port is given: nodes of the embedded
// server (server.Cluster) that split the slots evenly, each on a TCP port
// of 127.0.0.1 and, where RDMA works, an RDMA port of its own.
type EmbeddedCluster struct {
	srvs []*server.Server
	// Cluster is the nodes' topology.
	Cluster *server.Cluster
	// TCPAddrs are the nodes' TCP addresses, as CLUSTER SLOTS announces
	// them.
	TCPAddrs []string
	// RDMAAddrs maps each node's TCP address to its RDMA address (for
	// pool.RDMAAddrTable); nil when there is no RDMA, and RDMAErr then
	// says why.
	RDMAAddrs map[string]string
	RDMAErr   error
}

// StartEmbeddedCluster starts a cluster of n nodes (1 to MaxClusterNodes)
// on ephemeral ports, with RDMA listeners as StartEmbedded has them when
// rdma is true, and a password that clients must give when it is not
// empty.
func StartEmbeddedCluster(n int, rdma bool, opts *qp.Options, password string) (_ *EmbeddedCluster, err error) {
	if n < 1 || n > MaxClusterNodes {
		return nil, fmt.Errorf("a cluster of %d nodes: want 1 to %d", n, MaxClusterNodes)
	}
	e := &EmbeddedCluster{Cluster: server.NewCluster()}
	var tls []net.Listener
	defer func() {
		if err != nil {
			for _, l := range tls {
				l.Close()
			}
			e.Close()
		}
	}()
	var ip netip.Addr
	if rdma {
		ip, e.RDMAErr = probe.Addr()
	} else {
		e.RDMAErr = errors.New("not asked for")
	}
	ids := make([]string, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		tls = append(tls, l)
		addr := l.Addr().String()
		r := server.SlotRange{First: i * server.NumSlots / n, Last: (i+1)*server.NumSlots/n - 1}
		if ids[i], err = e.Cluster.AddNode(addr, r); err != nil {
			return nil, err
		}
		e.TCPAddrs = append(e.TCPAddrs, addr)
	}
	for i, l := range tls {
		// No bound on clients beyond valkey's, as StartEmbedded.
		srv, err := e.Cluster.NewServer(ids[i], &server.Options{MaxClients: math.MaxInt, Password: password})
		if err != nil {
			return nil, err
		}
		e.srvs = append(e.srvs, srv)
		go srv.Serve(l)
		if e.RDMAErr != nil {
			continue
		}
		rl, err := qp.Listen(netip.AddrPortFrom(ip, 0).String(), opts)
		if err != nil {
			// No RDMA for any: a cluster with some nodes over TCP would
			// measure neither transport.
			e.RDMAErr, e.RDMAAddrs = err, nil
			continue
		}
		if e.RDMAAddrs == nil {
			e.RDMAAddrs = map[string]string{}
		}
		e.RDMAAddrs[e.TCPAddrs[i]] = rl.Addr().String()
		go srv.Serve(rl)
	}
	tls = nil // the servers own them
	return e, nil
}

// Close stops the nodes.
func (e *EmbeddedCluster) Close() error {
	var errs []error
	for _, s := range e.srvs {
		errs = append(errs, s.Close())
	}
	return errors.Join(errs...)
}
