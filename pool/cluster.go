package pool

import (
	"fmt"
	"net"
	"strconv"
)

// A cluster's clients (go-redis ClusterClient, valkey-go) dial each node at
// the TCP address the cluster announces (CLUSTER SLOTS, SHARDS, MOVED),
// through one Dialer; Options.RDMAAddrOf says where each node listens for
// RDMA when that is not the TCP address, or Addr's host with RDMAPort.

// RDMAAddrTable returns an Options.RDMAAddrOf that looks each node's TCP
// address up in m (TCP address to RDMA address, both host:port). A node
// that m does not name gets the default, Addr's host with RDMAPort: a node
// added to the cluster later is still reached, over TCP if its RDMA
// address is not that. The map is copied.
func RDMAAddrTable(m map[string]string) func(addr string) (string, error) {
	t := make(map[string]string, len(m))
	for k, v := range m {
		t[k] = v
	}
	return func(addr string) (string, error) { return t[addr], nil }
}

// RDMAPortOffset returns an Options.RDMAAddrOf for a cluster whose nodes
// each listen for RDMA on their TCP port plus off (for valkey-server,
// --rdma-port N+off beside --port N).
func RDMAPortOffset(off int) func(addr string) (string, error) {
	return func(addr string) (string, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return "", err
		}
		n, err := strconv.Atoi(port)
		if err != nil {
			return "", fmt.Errorf("port %q is not a number", port)
		}
		if n+off <= 0 || n+off > 65535 {
			return "", fmt.Errorf("port %d plus offset %d is out of range", n, off)
		}
		return net.JoinHostPort(host, strconv.Itoa(n+off)), nil
	}
}

// resolveRDMAAddr sets opts.RDMAAddr when it is empty: by RDMAAddrOf when
// that is set and answers, else Addr's host with RDMAPort, else Addr.
func resolveRDMAAddr(opts *Options) error {
	if opts.RDMAAddr != "" {
		return nil
	}
	if opts.RDMAAddrOf != nil {
		a, err := opts.RDMAAddrOf(opts.Addr)
		if err != nil {
			return fmt.Errorf("rdmapool: pool: RDMAAddrOf(%q): %w", opts.Addr, err)
		}
		if a != "" {
			if _, _, err := net.SplitHostPort(a); err != nil {
				return fmt.Errorf("rdmapool: pool: RDMAAddrOf(%q) = %q: %w", opts.Addr, a, err)
			}
			opts.RDMAAddr = a
			return nil
		}
	}
	opts.RDMAAddr = opts.Addr
	if opts.RDMAPort != 0 {
		host, _, _ := net.SplitHostPort(opts.Addr)
		opts.RDMAAddr = net.JoinHostPort(host, strconv.Itoa(opts.RDMAPort))
	}
	return nil
}
