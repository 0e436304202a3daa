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
	// Set up before the connection is handed out (Dial returns it, or
	// the listener queues it for Accept), and not changed after.
	t           *verbs.Table
	opts        Options
	server      bool
	id          verbs.Ptr[verbs.CMID]
	ec          *eventChannel
	res         *resources // the pointer; what it holds has the owners its fields say
	rxRing      *mr.RecvRing
	reactor     *cq.Reactor
	member      *cq.Member // the QP's place on a CQ shared with the device's other QPs
	h           *completions
	local       Addr
	remote      Addr
	onEstablish func(*Conn) // server: hands the connection to its Listener
	onTeardown  func(*Conn) // server: lets the Listener forget it
	acquired    bool        // the process-wide reactor was acquired

	// Read side: rmu serialises readers and is held by a Lease.
	rmu       sync.Mutex
	rxNotify  chan struct{} // signalled when data arrives (but for what the reader's own poll finds) or the state changes
	rxArmed   atomic.Bool   // our RegisterXferMemory was sent
	rxArmedAt time.Time     // when the receive buffer was last advertised (rmu, after onEstablished)
	readDL    deadline.Deadline
	rxPassed  time.Duration // a waiting reader last let the netpoller run (spinwait.Now; see spin)
	rxSpun    bool          // the reader's last wait ended without a park: its next spins twice as long (rmu; readable)
	leased    int           // the length of the slice Lease returned (rmu)
	rxRearm   chan struct{} // set while a re-arm registers its buffer without rmu, closed after (rmu; registerRx)
	rxPrepped atomic.Pointer[mr.Region]
	rxOld     *mr.Region       // the buffer a re-arm replaced, closed once rmu is let go (rmu; unlockR)
	marks     stages.ReadMarks // a Read's stage timings (internal/stages): its call under rmu, its first poll by any poller

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

	// The handler's, under the CQ's lock (whoever polls it): the
	// receives to re-post.
	repost []uint32

	// What the feature exchange told of the peer (features.go).
	feat features

	// Life (life.go): the phase and the link, moved by CAS, the terminal
	// error and the grace timer; the holds of Lease and Reserve, a word
	// of their own; and what publishes the end to waiters.
	life       life
	holds      holds
	done       chan struct{} // closed once the terminal error is published (end)
	heldNotify chan struct{} // signalled when a Lease or reservation is taken
	evStarted  atomic.Bool   // the event loop was started (teardown waits for evDone)
	evDone     chan struct{} // closed when the event loop has returned
	torndown   chan struct{} // closed when every resource is freed

	// Keepalives (keepalive.go): set when established, read by ticks and
	// the teardown.
	keepalives atomic.Pointer[keepaliveWheel]
	peer       atomic.Pointer[peer] // the keepalive group of the peer's address
}

// The lock order of a connection. Each may be taken while holding those
// above it, never one above while holding it:
//
//	rmu          readers; a Lease holds it until Release
//	wmu          writers; a reservation holds it until Commit
//	the CQ's lock (cq.Member: TryLock/PollLocked, and the reactor's poll):
//	             the handler runs under it; a reader or writer takes it only
//	             with TryLock (pollInline), which never waits
//	smu          the send queue: posting and its accounting; the handler
//	             takes it to answer a control message (sendCmd)
//
// Nothing waits for rmu or wmu while holding the CQ's lock or smu; no one
// holding smu takes the CQ's lock (the teardown gives the QP's room on the
// CQ back, cq.Member.Release, after it lets smu, wmu and rmu go; Leave,
// before it takes them). A re-arm lets rmu go while it registers
// (registerRx), and what regWG counts never waits for rmu, wmu or smu: the
// teardown waits for regWG holding all three (staging.go). cmReadMu
// (events.go) comes last: the teardown takes it under smu to destroy a
// server's QP, and whoever holds it takes nothing else. The keepalive
// wheel's locks (keepalive.go), the rdma_cm channel's other locks
// (events.go) and the listener's are taken with none of these held.

var _ net.Conn = (*Conn)(nil)

// Addr is the address of an RDMA connection's end: an IP address and the
// rdma_cm port.
type Addr struct{ netip.AddrPort }

// Network returns "rdma".
func (Addr) Network() string { return "rdma" }

func newConn(t *verbs.Table, opts Options, id verbs.Ptr[verbs.CMID], ec *eventChannel, server bool) *Conn {
	c := &Conn{
		t: t, opts: opts, id: id, ec: ec, server: server,
		rxNotify:   make(chan struct{}, 1),
		txNotify:   make(chan struct{}, 1),
		ctlNotify:  make(chan struct{}, 1),
		heldNotify: make(chan struct{}, 1),
		life:       life{graceAfter: opts.qpDownGrace},
		readDL:     deadline.New(),
		writeDL:    deadline.New(),
		repost:     make([]uint32, 0, opts.QueueDepth),
		feat:       features{notify: make(chan struct{}, 1)},
		done:       make(chan struct{}),
		evDone:     make(chan struct{}),
		torndown:   make(chan struct{}),
	}
	c.life.changed = c.wakeAll
	return c
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
	c.life.move(evEstablished)
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
	if c.res == nil || c.life.ended() {
		return 0
	}
	return c.res.cmd.Len() + c.res.rx.Len() + c.res.tx.Pinned()
}

// Healthy reports, without blocking, whether the connection is open, its
// peer has not closed it, and no received data waits to be read: what a
// pool checks before it hands out an idle connection. It is false while a
// Read or Lease is in progress.
func (c *Conn) Healthy() bool {
	if c.terminal() != nil || c.life.load().peerClosed() || !c.rmu.TryLock() {
		return false
	}
	defer c.rmu.Unlock()
	c.pollInline()
	return c.terminal() == nil && !c.life.load().peerClosed() && len(c.rxRing.Readable()) == 0
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
	if c.life.load().userClosed() {
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

// endErr is the terminal error of a connection that ended (its life's
// error is published before its phase moves): net.ErrClosed after Close,
// whatever ended the connection before.
func (c *Conn) endErr() error {
	if c.life.load().userClosed() {
		return net.ErrClosed
	}
	return c.life.err()
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
