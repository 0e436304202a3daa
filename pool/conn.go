// Package pool gives Go services connections that use RDMA where it works
// and TCP where it does not, behind one Conn interface, from a Pool per
// target.
//
// A Pool dials by its Policy: Auto (the default) tries RDMA and falls back
// to TCP when RDMA is unavailable here or at the target (no libraries, no
// device, no route, nothing on the RDMA port), and says so: every such
// connection is counted in Stats by reason and given to
// Options.OnFallback. A Dialer keeps a Pool per address for client
// libraries (go-redis's Options.Dialer, valkey-go's DialCtxFn), so that
// they use RDMA with no other change.
//
// Listen is the other end, for Go services of one's own: a net.Listener
// (Listener) that accepts clients over RDMA and TCP on one address, by the
// same Policy (Auto: TCP, and RDMA beside it where this machine can, saying
// why not), for grpc.Server.Serve or http.Serve; their clients dial
// through a Dialer (grpc.WithContextDialer, http.Transport.DialContext).
//
// Nothing here needs cgo: the RDMA libraries are loaded at the first RDMA
// dial (package loader). On TCP, a Conn is a *net.TCPConn behind the Conn
// contract (TCPNetpoll, the default) or, with Options.TCPEngine set to
// gnettcp.Engine, a connection on gnet's event loops (package
// pool/gnettcp, which a program imports only if it wants them: package
// pool itself does not link gnet). Options.Network replaces both
// transports; package pooltest has one in memory for tests.
//
// Pool.Get hands out a PooledConn, which Close returns to the pool when it
// is between requests (every reply read) and closes otherwise. Where the
// connection offers them, a PooledConn has the zero-copy calls
// (ZeroCopyReader, ZeroCopyWriter), whose slices are leases: valid until
// Release or Commit.
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
// ZeroCopyReader and ZeroCopyWriter (the RDMA one does), and so does the
// PooledConn that Get hands out for it.
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
