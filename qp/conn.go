package qp

import (
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed54442f1a/rdmapool/cq"
	"github.com/seed54442f1a/rdmapool/internal/deadline"
	"github.com/seed54442f1a/rdmapool/internal/stages"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
	"github.com/seed54442f1a/rdmapool/mr"
)

// Conn is a Valkey-over-RDMA connection: a reliable-connected QP, a
// registered receive buffer that the peer writes into, and staging memory
// for writing into the peer's.
//
// It is a complete net.Conn: Read, Write, Close, the addresses and the
// deadlines all work; one goroutine may Read while another Writes, and
// concurrent Writes are serialised; golang.org/x/net/nettest's conformance
// suite passes over soft-RoCE (TestNetConn). Timeouts satisfy
// errors.Is(err, os.ErrDeadlineExceeded) and net.Error's Timeout(); as on a
// TCP connection, a passed deadline fails Read and Write at once, even with
// data waiting or room to write. Close
// unblocks every pending Read and Write, is idempotent, and later calls
// return errors matching net.ErrClosed. When the peer closes, Read returns
// what it had sent, then io.EOF.
//
// Beside it, a zero-copy API: Reserve/Commit write straight into registered
// send memory, Lease/Release read straight from the registered receive
// buffer.
type Conn struct {
	t       *verbs.Table
	opts    Options
	server  bool
	id      verbs.Ptr[verbs.CMID]
	ec      *eventChannel
	res     *resources
	rxRing  *mr.RecvRing
	reactor *cq.Reactor
	member  *cq.Member // the QP's place on a CQ shared with the device's other QPs
	h       *completions
	marks   stages.ReadMarks // stage timings (package internal/stages)
	local   Addr
	remote  Addr

	// Read side: rmu serialises readers and is held by a Lease.
	rmu       sync.Mutex
	rxNotify  chan struct{} // signalled when data arrives or the state changes
	rxArmed   atomic.Bool   // our RegisterXferMemory was sent
	rxArmedAt time.Time     // when the receive buffer was last advertised (rmu, after onEstablished)
	readDL    deadline.Deadline
	rxPassed  time.Duration // a waiting reader last let the netpoller run (spinwait.Now; see spin)
	leased    int           // the length of the slice Lease returned (rmu)
	rxRearm   chan struct{} // set while a re-arm registers its buffer without rmu, closed after (rmu; registerRx)
	rxPrepped atomic.Pointer[mr.Region]
	rxOld     *mr.Region // the buffer a re-arm replaced, closed once rmu is let go (rmu; unlockR)

	// Write side: wmu serialises writers and is held by a reservation.
	wmu       sync.Mutex
	txNotify  chan struct{} // signalled on arm, send-queue space, state change
	ctlNotify chan struct{} // the same, for control senders
	writeDL   deadline.Deadline
	armGen    atomic.Uint32 // bumped by each RegisterXferMemory received
	armAddr   atomic.Uint64
	armLenKey atomic.Uint64 // length<<32 | rkey
	txGen     uint32        // the arm the send ring was last armed from (wmu)
	txPassed  time.Duration // a waiting writer last let the netpoller run (spinwait.Now, wmu; see spin)
	reserved  int           // the length of the slice Reserve returned (wmu)
	txPrep    bool          // a registration of send staging is under way or not yet taken (wmu; staging.go)
	txPrepped atomic.Pointer[prepared]

	// Registrations of memory, and closes, under way without rmu or wmu
	// (staging.go); teardown waits for them before it frees the PD.
	regWG sync.WaitGroup

	// The send queue: smu serialises posting and the accounting.
	smu      sync.Mutex
	sqPosted atomic.Uint32 // sequence number of the next send WR; advanced under smu
	sqDone   atomic.Uint32 // every WR before this sequence has completed
	sqBusy   atomic.Uint32 // the sequence after the last WR but an idle keepalive (writesPending)

	// Handler scratch, under the CQ's lock (whoever polls it).
	repost []uint32

	// What the feature exchange told of the peer (features.go).
	feat features

	// State.
	state       atomic.Uint32                  // st* bits: where the connection is in its life
	err         error                          // terminal error, written once (stFailed) before stClosing is set and done closed
	done        chan struct{}                  // closed when the connection is finished
	evDone      chan struct{}                  // closed when the event loop has returned
	torndown    chan struct{}                  // closed when every resource is freed
	heldNotify  chan struct{}                  // signalled when a Lease or reservation is taken
	keepalives  atomic.Pointer[keepaliveWheel] // set when established, read by teardown
	peer        atomic.Pointer[peer]           // the keepalive group of the peer's address (keepalive.go)
	onEstablish func(*Conn)                    // server: hands the connection to its Listener
	onTeardown  func(*Conn)                    // server: lets the Listener forget it
	acquired    bool                           // the process-wide reactor was acquired
}

var _ net.Conn = (*Conn)(nil)

// The bits of Conn.state. Each is set once, but for the two holds, which
// Lease/Release and Reserve/Commit set and clear.
const (
	stEstablished uint32 = 1 << iota // the connection is up (onEstablished)
	stPeerClosed                     // the peer disconnected: writes fail, reads drain
	stQPDown                         // work requests were flushed: every completion before them was handled
	stGrace                          // the timer that stands in for a flush that never comes is set (onPeerClosed)
	stFailed                         // the terminal error is claimed (setErr); err is being written
	stClosing                        // err is written; done is closed after it
	stUserClosed                     // Close was called: every call fails with net.ErrClosed
	stLeaseHeld                      // a Lease is held (until Release)
	stReserveHeld                    // a reservation is held (until Commit)
	stEvStarted                      // the event loop was started
)

// is reports whether bit is set.
func (c *Conn) is(bit uint32) bool { return c.state.Load()&bit != 0 }

// set sets bit and reports whether this call set it (it was clear).
func (c *Conn) set(bit uint32) bool { return c.state.Or(bit)&bit == 0 }

// clear clears bit and reports whether it was set.
func (c *Conn) clear(bit uint32) bool { return c.state.And(^bit)&bit != 0 }

// Addr is the address of an RDMA connection's end: an IP address and the
// rdma_cm port.
type Addr struct{ netip.AddrPort }

// Network returns "rdma".
func (Addr) Network() string { return "rdma" }

func newConn(t *verbs.Table, opts Options, id verbs.Ptr[verbs.CMID], ec *eventChannel, server bool) *Conn {
	return &Conn{
		t: t, opts: opts, id: id, ec: ec, server: server,
		rxNotify:   make(chan struct{}, 1),
		txNotify:   make(chan struct{}, 1),
		ctlNotify:  make(chan struct{}, 1),
		heldNotify: make(chan struct{}, 1),
		readDL:     deadline.New(),
		writeDL:    deadline.New(),
		repost:     make([]uint32, 0, opts.QueueDepth),
		feat:       features{notify: make(chan struct{}, 1)},
		done:       make(chan struct{}),
		evDone:     make(chan struct{}),
		torndown:   make(chan struct{}),
	}
}

// setup creates the verbs resources on the connection's id, registers its CQ
// with a reactor and posts every receive, before connect or accept.
// setup makes the connection's resources, QP included, and posts every
// receive: prepare on the id's device, then setupQP.
func (c *Conn) setup() error {
	if err := c.prepare(verbs.IDContext(c.id)); err != nil {
		return err
	}
	return c.setupQP()
}

// prepare makes the resources but the QP, which need only the device of
// ctx (for a client, known once its address is resolved; for a Listener's
// spare, before the id exists), and takes the QP's place on a CQ of the
// reactor's: 2d entries, room for every work request of both queues, which
// a QP in error flushes.
func (c *Conn) prepare(ctx verbs.Ptr[verbs.Context]) error {
	c.h = &completions{c: c}
	var err error
	if c.opts.Reactor != nil {
		c.reactor = c.opts.Reactor
	} else {
		if c.reactor, err = acquireReactor(c.opts.ReactorOptions); err != nil {
			return err
		}
		c.acquired = true
	}
	if c.member, err = attachCQ(c.reactor, ctx, 2*c.opts.QueueDepth, c.h); err != nil {
		return err
	}
	res, err := newResources(c.t, ctx, memberCQ(c.member), min(rxStart, c.opts.RecvBufferSize), c.opts.QueueDepth)
	if err != nil {
		return err
	}
	c.res = res
	c.rxRing = mr.NewRecvRing(res.rx)
	return nil
}

// setupQP creates the id's QP (its route resolved) and posts every receive.
// A client's QP is its own, a server's attached to its id (ownqp.go says
// why).
func (c *Conn) setupQP() error {
	if err := c.res.createQP(c.id, !c.server); err != nil {
		return err
	}
	slots := make([]uint32, c.res.depth)
	for i := range slots {
		slots[i] = uint32(i)
	}
	return c.res.postRecvs(slots, c.recvWRID)
}

func (c *Conn) recvWRID(slot uint32) uint64 { return c.member.RecvWRID(slot) }

// onEstablished runs once the connection is established (a server's
// ESTABLISHED, a client's rdma_establish): learn the addresses, start
// keepalives. The receive buffer is advertised after the
// feature exchange (advertiseFirst).
func (c *Conn) onEstablished() {
	l, r := verbs.CMIDAddrs(c.id)
	c.local, c.remote = Addr{l}, Addr{r}
	c.set(stEstablished)
	startKeepalives(c)
}

func (c *Conn) registerCmd() cmd {
	rx := c.res.rx
	return cmd{opcode: opRegisterXferMemory, addr: rx.Addr(), length: uint32(rx.Len()), rkey: rx.RKey()}
}

// pinned is the registered memory of the connection: command slots, the
// receive buffer and the send staging.
func (c *Conn) pinned() int {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.res == nil || c.is(stClosing) {
		return 0
	}
	return c.res.cmd.Len() + c.res.rx.Len() + c.res.tx.Pinned()
}

// Healthy reports, without blocking, whether the connection is open, its
// peer has not closed it, and no received data waits to be read: what a
// pool checks before it hands out an idle connection. It is false while a
// Read or Lease is in progress.
func (c *Conn) Healthy() bool {
	if c.terminal() != nil || c.is(stPeerClosed) || !c.rmu.TryLock() {
		return false
	}
	defer c.rmu.Unlock()
	c.pollInline()
	return c.terminal() == nil && !c.is(stPeerClosed) && len(c.rxRing.Readable()) == 0
}

// LocalAddr returns the local address.
func (c *Conn) LocalAddr() net.Addr { return c.local }

// RemoteAddr returns the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	if err := c.checkOpen("set deadline"); err != nil {
		return err
	}
	c.readDL.Set(t)
	c.writeDL.Set(t)
	return nil
}

// SetReadDeadline sets the deadline for Read and Lease.
func (c *Conn) SetReadDeadline(t time.Time) error {
	if err := c.checkOpen("set deadline"); err != nil {
		return err
	}
	c.readDL.Set(t)
	return nil
}

// SetWriteDeadline sets the deadline for Write and Reserve.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	if err := c.checkOpen("set deadline"); err != nil {
		return err
	}
	c.writeDL.Set(t)
	return nil
}

func (c *Conn) checkOpen(op string) error {
	if c.is(stUserClosed) {
		return c.opError(op, net.ErrClosed)
	}
	return nil
}

func (c *Conn) opError(op string, err error) error {
	if err == io.EOF {
		return err
	}
	return &net.OpError{Op: op, Net: "rdma", Source: c.local, Addr: c.remote, Err: err}
}

// terminal returns the connection's terminal error (endErr), or nil while
// it is open.
func (c *Conn) terminal() error {
	select {
	case <-c.done:
		return c.endErr()
	default:
		return nil
	}
}

// endErr is the terminal error of a connection that is closing (c.err is
// set before closing is): net.ErrClosed after Close, whatever ended the
// connection before.
func (c *Conn) endErr() error {
	if c.is(stUserClosed) {
		return net.ErrClosed
	}
	return c.err
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (c *Conn) wakeAll() {
	signal(c.rxNotify)
	signal(c.txNotify)
	signal(c.ctlNotify)
}
