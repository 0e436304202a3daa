package qp

import (
	"fmt"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/seed54442f1a/rdmapool/cq"
)

// Options configure Dial and Listen. The zero value (or nil) gives the
// Valkey peers' defaults.
type Options struct {
	// RecvBufferSize is the receive buffer advertised to a peer that
	// cannot take a change of its length, which the connection then
	// keeps for its whole life: every Valkey peer (valkey-server 8.1-9.1
	// crash on a change; libvalkey's valkey-cli and valkey-benchmark, and
	// the Go transports on it, never make one). It is what such a peer
	// may write before it waits for us to read, and what an idle
	// connection pins for it. 0 means 1 MiB, as valkey-server and
	// libvalkey use. Between 4 KiB and 256 MiB.
	//
	// Toward a peer that negotiated a change of length (rdmapool's own,
	// through the feature exchange: see docs/design.md) it is the largest
	// the buffer grows to: it starts at 64 KiB (or this, if smaller) and
	// changes size when it is advertised anew, once the peer has filled
	// it and it has been read: 4 times larger after a fill in at most 8
	// writes (a large value) or in less than 20 ms, up to this size; else
	// 4 times smaller after one that took more than 1 s, down to 64 KiB.
	RecvBufferSize int
	// MaxPeerBufferSize bounds the receive buffer a peer may advertise,
	// and so the send staging memory it can make us register. 0 means
	// 16 MiB, valkey-server's largest rdma-rx-size. The staging memory
	// follows the bytes in flight, not the peer's buffer: it starts at
	// 64 KiB (or the peer's buffer, if smaller), grows when a write
	// finds too little room, up to the peer's buffer, and shrinks back
	// after a keepalive interval without writes.
	MaxPeerBufferSize int
	// KeepaliveInterval is how often the connections to a peer address
	// that heard nothing from it send a keepalive; 0 means 3 s, as
	// valkey-server does. One of them sends it, or every one once a
	// connection to the peer found it gone (keepalive.go). Client
	// connections send them too (libvalkey's do not; valkey-server takes
	// them as nothing), so that a client that only reads learns of a
	// server gone without a disconnect when a keepalive's retries run out.
	KeepaliveInterval time.Duration
	// LocalAddr, for Dial, binds the connection to a local address (and
	// so to its RDMA device); the zero value lets rdma_cm choose.
	LocalAddr netip.Addr
	// Reactor polls the connection's completion queue. nil means the
	// process-wide reactor, started with the first connection and
	// stopped with the last. A Reactor given here must outlive every
	// connection that uses it: close them before it.
	Reactor *cq.Reactor
	// ReactorOptions configure the process-wide reactor when this
	// connection starts it.
	ReactorOptions cq.Options
	// SpinWait is how long a Read or Write that must wait polls the
	// connection's completion queue itself before it parks until the
	// reactor wakes it. Polling saves the reactor's wake-up of the
	// goroutine on the latency path, at the price of a busy core while it
	// lasts. A Read whose last wait ended without parking polls twice as
	// long. 0 means 1 ms (see docs/design.md for the measurements behind
	// it); a negative value never polls.
	SpinWait time.Duration
	// Backlog is how many established connections a Listener holds for
	// Accept; beyond it a new one is closed as soon as it is established
	// (its Dial succeeds, its first Read or Write finds the peer gone).
	// 0 means 128.
	Backlog int
	// QueueDepth is how many work requests each of the connection's
	// queues holds: the receives posted for the peer's writes and control
	// messages, and the writes and control messages this side may have in
	// flight (the completion queue holds both). 0 means 1023: the Valkey
	// peers' 1024 less one, which halves the kernel memory soft-RoCE
	// allocates (and zeroes) for the queues, as it rounds 1024 up to a
	// queue of 2048 slots. A smaller depth makes a connection cheaper
	// to set up and to keep (for thousands of connections, 16 to 64), at
	// the price of throughput under deep pipelining: a peer that finds no
	// receive posted waits out rdma_cm's RNR timer (655 ms) and tries
	// again, without end. Between 16 and 8191.
	QueueDepth int
	// CloseLinger bounds how long Close waits for the writes posted
	// before it to complete (a disconnect flushes those not done, and
	// the tail of a Write that had returned would be lost). 0 means 2 s.
	CloseLinger time.Duration

	// readLooks, set only by tests (export_test.go), holds a hook that
	// runs in Read between its look at the QP's flush and its look at
	// the receive ring. Atomic, so that a test may set it while reads run.
	readLooks *atomic.Pointer[func(*Conn)]
	// registering, set only by tests, holds a hook that runs before each
	// registration of a send staging region or a receive buffer of the
	// connection, with its size, on the goroutine that registers it.
	registering *atomic.Pointer[func(*Conn, int)]
	// qpDownGrace, set only by tests, replaces qpDownGrace (life.go):
	// how long a link half down waits for the other half.
	qpDownGrace time.Duration
}

const (
	defaultRecvBuffer    = 1 << 20
	minRecvBuffer        = 4 << 10
	maxRecvBuffer        = 256 << 20
	defaultMaxPeerBuffer = 16 << 20
	defaultKeepalive     = 3 * time.Second
	defaultBacklog       = 128
	defaultSpinWait      = time.Millisecond
	defaultCloseLinger   = 2 * time.Second
)

func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.RecvBufferSize == 0 {
		r.RecvBufferSize = defaultRecvBuffer
	}
	if r.RecvBufferSize < minRecvBuffer || r.RecvBufferSize > maxRecvBuffer {
		return r, fmt.Errorf("rdma: RecvBufferSize %d is outside [%d, %d]", r.RecvBufferSize, minRecvBuffer, maxRecvBuffer)
	}
	if r.MaxPeerBufferSize == 0 {
		r.MaxPeerBufferSize = defaultMaxPeerBuffer
	}
	if r.MaxPeerBufferSize < minRecvBuffer || r.MaxPeerBufferSize > maxRecvBuffer {
		return r, fmt.Errorf("rdma: MaxPeerBufferSize %d is outside [%d, %d]", r.MaxPeerBufferSize, minRecvBuffer, maxRecvBuffer)
	}
	if r.KeepaliveInterval < 0 {
		return r, fmt.Errorf("rdma: KeepaliveInterval %v is negative", r.KeepaliveInterval)
	}
	if r.KeepaliveInterval == 0 {
		r.KeepaliveInterval = defaultKeepalive
	}
	if r.SpinWait == 0 {
		r.SpinWait = defaultSpinWait
	}
	if r.Backlog < 0 {
		return r, fmt.Errorf("rdma: Backlog %d is negative", r.Backlog)
	}
	if r.Backlog == 0 {
		r.Backlog = defaultBacklog
	}
	if r.QueueDepth == 0 {
		r.QueueDepth = defaultQueueDepth
	}
	if r.QueueDepth < minQueueDepth || r.QueueDepth > maxQueueDepth {
		return r, fmt.Errorf("rdma: QueueDepth %d is outside [%d, %d]", r.QueueDepth, minQueueDepth, maxQueueDepth)
	}
	if r.CloseLinger < 0 {
		return r, fmt.Errorf("rdma: CloseLinger %v is negative", r.CloseLinger)
	}
	if r.CloseLinger == 0 {
		r.CloseLinger = defaultCloseLinger
	}
	return r, nil
}
