// Package pool gives Valkey clients connections that use RDMA where it works
// and TCP where it does not, behind one Conn interface, from a pool per
// target.
package pool

import (
	"net"

	"github.com/seed54442f1a/rdmapool/qp"
)

// Transport names how a connection carries its bytes.
type Transport string

const (
	RDMA Transport = "rdma"
	TCP  Transport = "tcp"
)

// Conn is a connection of either transport. Both guarantee the full
// net.Conn contract:
//
//   - Read, Write, Close, LocalAddr and RemoteAddr work, with real addresses;
//   - SetDeadline, SetReadDeadline and SetWriteDeadline work; a timeout
//     satisfies errors.Is(err, os.ErrDeadlineExceeded) and net.Error's
//     Timeout();
//   - Close unblocks every pending Read and Write and is idempotent; later
//     calls return errors matching net.ErrClosed;
//   - one goroutine may Read while another Writes; concurrent Writes are
//     serialised;
//   - when the peer closes, Read returns what it sent, then io.EOF.
//
// Where a transport can do without copies, its Conn also implements
// ZeroCopyReader and ZeroCopyWriter (the RDMA one does).
type Conn interface {
	net.Conn
	// Transport reports which transport the connection uses.
	Transport() Transport
}

// ZeroCopyReader reads straight from the transport's receive memory. Lease
// waits for data and returns it; the slice stays valid until Release, which
// consumes its first n bytes.
type ZeroCopyReader interface {
	Lease() ([]byte, error)
	Release(n int) error
}

// ZeroCopyWriter writes straight into the transport's send memory. Reserve
// returns up to n bytes to fill; Commit sends the first n of them. The slice
// stays valid until Commit.
type ZeroCopyWriter interface {
	Reserve(n int) ([]byte, error)
	Commit(n int) error
}

// rdmaConn is a qp.Conn as a Conn.
type rdmaConn struct{ *qp.Conn }

func (rdmaConn) Transport() Transport { return RDMA }

var (
	_ Conn           = rdmaConn{}
	_ ZeroCopyReader = rdmaConn{}
	_ ZeroCopyWriter = rdmaConn{}
)
