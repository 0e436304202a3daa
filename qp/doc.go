// Package qp is a Valkey-over-RDMA connection: a reliable-connected queue
// pair set up with rdma_cm that speaks the protocol of valkey-server and
// libvalkey (valkey-cli and valkey-benchmark --rdma), so either end may be a
// Valkey peer. Dial connects a client; Listen and Accept (or AcceptConn)
// serve.
//
// A Conn is a net.Conn, and beside it a zero-copy API on the registered
// memory itself:
//
//   - Lease returns a slice of the receive buffer. It stays valid, and other
//     reads wait, until Release; after Release it must not be used.
//   - Reserve returns a slice of the send staging memory. It stays valid, and
//     other writes wait, until Commit, which sends the bytes filled; after
//     Commit it must not be used.
//
// Close does not take memory from a held Lease or Reserve: it is freed at
// Release or Commit.
//
// A connection never changes the length of the receive buffer it
// advertises toward a peer that has not said it takes a change (every
// Valkey peer: valkey-server 8.1 to 9.1 crash on one). Toward such a peer
// it advertises Options.RecvBufferSize (1 MiB by default) for good. Two
// rdmapool ends negotiate a change through the protocol's feature exchange
// (GetServerFeature, SetClientFeature), and then registered memory follows
// the data: a new connection with the default Options pins at most 192 KiB
// (64 KiB each of control slots, receive buffer and send staging), and the
// receive buffer grows, up to Options.RecvBufferSize, and shrinks, only
// when it is advertised anew after the peer filled it: one that grew keeps
// its size while the connection is idle. Toward any peer the send staging
// holds the bytes of writes in flight, grows up to the peer's buffer, and
// shrinks back when the connection has not written for a keepalive
// interval.
//
// A connection costs no file descriptor of its own: its CQ and completion
// channel are shared with the other connections on its device (package cq).
// Idle connections to one peer address send one keepalive per interval
// between them, however many there are.
//
// Errors are *net.OpError values. Inside them: loader.ErrUnavailable when the
// RDMA libraries cannot be loaded (always, off Linux); syscall.ECONNREFUSED
// and syscall.EHOSTUNREACH from Dial; os.ErrDeadlineExceeded, a Timeout,
// when a deadline passes; net.ErrClosed after Close; ErrPeerGone when the
// peer closed the connection or became unreachable; ErrDeviceRemoved when
// the RDMA device went away; *ProtocolError when the peer broke the
// protocol; *CompletionError for a work request that failed. A Read after
// the peer's orderly close returns io.EOF, unwrapped, once its data is read.
package qp
