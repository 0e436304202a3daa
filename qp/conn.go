package qp

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed54442f1a/rdmapool/cq"
	"github.com/seed54442f1a/rdmapool/internal/deadline"
	"github.com/seed54442f1a/rdmapool/internal/netpass"
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
	reg     cq.Registration
	h       *completions
	marks   readMarks // stage timings (stages.go)
	local   Addr
	remote  Addr

	// Read side: rmu serialises readers and is held by a Lease.
	rmu      sync.Mutex
	rxNotify chan struct{} // signalled when data arrives or the state changes
	rxArmed  atomic.Bool   // our RegisterXferMemory was sent
	readDL   deadline.Deadline
	rxPassed time.Duration // a waiting reader last let the netpoller run (monoNow; see spin)
	leased   int           // the length of the slice Lease returned (rmu)

	// Write side: wmu serialises writers and is held by a reservation.
	wmu       sync.Mutex
	txNotify  chan struct{} // signalled on arm, send-queue space, state change
	ctlNotify chan struct{} // the same, for control senders
	writeDL   deadline.Deadline
	armGen    atomic.Uint32 // bumped by each RegisterXferMemory received
	armAddr   atomic.Uint64
	armLenKey atomic.Uint64 // length<<32 | rkey
	txGen     uint32        // the arm the send ring was last armed from (wmu)
	txPassed  time.Duration // a waiting writer last let the netpoller run (monoNow, wmu; see spin)
	reserved  int           // the length of the slice Reserve returned (wmu)
	parked    atomic.Int32  // readers and writers waiting for the reactor (park)

	// The send queue: smu serialises posting and the accounting.
	smu      sync.Mutex
	sqPosted atomic.Uint32 // sequence number of the next send WR; advanced under smu
	sqDone   atomic.Uint32 // every WR before this sequence has completed

	// Reactor-side scratch (only the reactor goroutine touches it).
	repost []uint32

	// State.
	established atomic.Bool
	peerClosed  atomic.Bool
	qpDown      atomic.Bool // work requests were flushed, so every completion before them was handled
	downOnce    sync.Once
	graceOnce   sync.Once // the timer that stands in for a flush that never comes (onPeerClosed)
	closing     atomic.Bool
	userClosed  atomic.Bool // Close was called: every call fails with net.ErrClosed
	errOnce     sync.Once
	err         error         // terminal error, set once before done closes
	done        chan struct{} // closed when the connection is finished
	evDone      chan struct{} // closed when the event loop has returned
	torndown    chan struct{} // closed when every resource is freed
	leaseHeld   atomic.Bool
	reserveHeld atomic.Bool
	heldNotify  chan struct{}              // signalled when a Lease or reservation is taken
	keepalive   atomic.Pointer[time.Timer] // set when ESTABLISHED, read by teardown
	onEstablish func(*Conn)                // server: hands the connection to its Listener
	onTeardown  func(*Conn)                // server: lets the Listener forget it
	evStarted   atomic.Bool                // the event loop was started
	added       bool                       // the CQ is registered with the reactor
	acquired    bool                       // the process-wide reactor was acquired
}

var _ net.Conn = (*Conn)(nil)

// Addr is the address of an RDMA connection's end: an IP address and the
// rdma_cm port.
type Addr struct{ netip.AddrPort }

// Network returns "rdma".
func (Addr) Network() string { return "rdma" }

const (
	seqMask        = cq.LocalMask // a send WR's sequence number, in its wr_id
	signalInterval = 128          // signal at least every so many send WRs
	ctlReserve     = 64           // send-queue entries that only control SENDs may use
)

func newConn(t *verbs.Table, opts Options, id verbs.Ptr[verbs.CMID], ec *eventChannel, server bool) *Conn {
	return &Conn{
		t: t, opts: opts, id: id, ec: ec, server: server,
		rxNotify:   make(chan struct{}, 1),
		txNotify:   make(chan struct{}, 1),
		ctlNotify:  make(chan struct{}, 1),
		heldNotify: make(chan struct{}, 1),
		readDL:     deadline.New(),
		writeDL:    deadline.New(),
		repost:     make([]uint32, 0, recvSlots),
		done:       make(chan struct{}),
		evDone:     make(chan struct{}),
		torndown:   make(chan struct{}),
	}
}

// setup creates the verbs resources on the connection's id, registers its CQ
// with a reactor and posts every receive, before connect or accept.
func (c *Conn) setup() error {
	res, err := newResources(c.t, c.id, c.opts.RecvBufferSize)
	if err != nil {
		return err
	}
	c.res = res
	c.rxRing = mr.NewRecvRing(res.rx)
	c.h = &completions{c: c}
	if c.opts.Reactor != nil {
		c.reactor = c.opts.Reactor
	} else {
		if c.reactor, err = acquireReactor(c.opts.ReactorOptions); err != nil {
			return err
		}
		c.acquired = true
	}
	if c.reg, err = c.reactor.Add(res.cq, res.cc, c.h); err != nil {
		return err
	}
	c.added = true
	slots := make([]uint32, recvSlots)
	for i := range slots {
		slots[i] = uint32(i)
	}
	return res.postRecvs(slots, c.recvWRID)
}

func (c *Conn) recvWRID(slot uint32) uint64 { return c.reg.RecvWRID(slot) }

// established runs when rdma_cm reports ESTABLISHED: learn the addresses,
// advertise the receive buffer, start keepalives.
func (c *Conn) onEstablished() error {
	l, r := verbs.CMIDAddrs(c.id)
	c.local, c.remote = Addr{l}, Addr{r}
	c.established.Store(true)
	c.rxArmed.Store(true)
	if err := c.sendCmd(c.registerCmd(), true); err != nil {
		return err
	}
	// Both sides send keepalives (libvalkey's client does not; valkey-server
	// takes them as nothing): a side that only reads learns of a peer gone
	// without a disconnect (power loss, a cut link) when a keepalive's
	// retries run out.
	// Stored before it is set: sendKeepalive resets it.
	t := time.AfterFunc(time.Hour, c.sendKeepalive)
	c.keepalive.Store(t)
	t.Reset(c.opts.KeepaliveInterval)
	return nil
}

func (c *Conn) registerCmd() cmd {
	rx := c.res.rx
	return cmd{opcode: opRegisterXferMemory, addr: rx.Addr(), length: uint32(rx.Len()), rkey: rx.RKey()}
}

func (c *Conn) sendKeepalive() {
	if c.closing.Load() || c.peerClosed.Load() {
		return
	}
	if err := c.sendCmd(cmd{opcode: opKeepalive}, false); err != nil {
		c.fail(err)
		return
	}
	c.keepalive.Load().Reset(c.opts.KeepaliveInterval)
}

// Healthy reports, without blocking, whether the connection is open, its
// peer has not closed it, and no received data waits to be read: what a
// pool checks before it hands out an idle connection. It is false while a
// Read or Lease is in progress.
func (c *Conn) Healthy() bool {
	if c.terminal() != nil || c.peerClosed.Load() || !c.rmu.TryLock() {
		return false
	}
	defer c.rmu.Unlock()
	c.pollInline()
	return c.terminal() == nil && !c.peerClosed.Load() && len(c.rxRing.Readable()) == 0
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
	if c.userClosed.Load() {
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
	if c.userClosed.Load() {
		return net.ErrClosed
	}
	return c.err
}

// Read reads received data into p.
func (c *Conn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if StagesEnabled {
		c.marks.begin()
		defer c.marks.end()
	}
	b, err := c.readable()
	if err != nil {
		return 0, err
	}
	n := copy(p, b)
	return n, c.consume(n)
}

// Lease waits for received data and returns it without copying: a slice of
// the registered receive buffer. The slice stays valid, and other reads wait,
// until Release; a peer that keeps to the protocol cannot overwrite it
// before then (the buffer stays remotely writable, so one that does not
// could). Release must follow every successful Lease, from the same
// goroutine or another.
func (c *Conn) Lease() ([]byte, error) {
	c.rmu.Lock()
	b, err := c.readable()
	if err != nil {
		c.rmu.Unlock()
		return nil, err
	}
	c.leased = len(b)
	c.leaseHeld.Store(true)
	signal(c.heldNotify) // a Close that looked before now returns (Close)
	return b, nil
}

// Release ends a Lease, consuming its first n bytes (the rest is returned
// again by the next Read or Lease).
func (c *Conn) Release(n int) error {
	if !c.leaseHeld.Swap(false) {
		return errors.New("rdma: Release without a Lease")
	}
	defer c.rmu.Unlock()
	if n < 0 || n > c.leased {
		return errors.New("rdma: Release of more than was leased")
	}
	return c.consume(n)
}

// readable waits until there is data to read, the peer has closed (io.EOF
// once the data is drained), the connection fails, or the deadline passes.
func (c *Conn) readable() ([]byte, error) {
	sp := spin{c: c, lastPass: &c.rxPassed}
	defer sp.release()
	for {
		if err := c.terminal(); err != nil {
			return nil, c.opError("read", err)
		}
		// As in net.TCPConn: a passed deadline fails a read even when
		// data is waiting.
		if c.readDL.Expired() {
			return nil, c.opError("read", os.ErrDeadlineExceeded)
		}
		// After the peer's close, data it wrote before may still wait in
		// the CQ: io.EOF only once the flush of the QP (our answer to the
		// disconnect) shows that everything before it was handled. Look
		// at that before the ring: the handling records data (Wrote)
		// before the flush (onQPDown), so a reader that sees the flush
		// finds the data before it in the ring, even when both were
		// handled after its last look.
		drained := c.peerClosed.Load() && c.qpDown.Load()
		if h := c.opts.readLooks; h != nil {
			if f := h.Load(); f != nil {
				(*f)(c)
			}
		}
		if c.res != nil {
			if b := c.rxRing.Readable(); len(b) > 0 {
				return b, nil
			}
		}
		if drained {
			// A peer on the same device closes when the device goes,
			// and its DISCONNECTED can come before our DEVICE_REMOVAL
			// (removal.go). The event loop looked when DISCONNECTED came;
			// by now the removal seen elsewhere has had the time to land.
			if c.res != nil && deviceRecentlyGone(c.res.device) {
				c.fail(ErrDeviceRemoved)
				continue
			}
			return nil, io.EOF
		}
		if !c.qpDown.Load() && c.spinPoll(&sp) {
			continue
		}
		if !c.park(c.rxNotify, c.readDL.Wait()) {
			return nil, c.opError("read", os.ErrDeadlineExceeded)
		}
	}
}

// consume marks n bytes read; once the whole buffer is read it is re-armed.
func (c *Conn) consume(n int) error {
	if !c.rxRing.Consume(n) {
		return nil
	}
	c.rxRing.Reset()
	if c.peerClosed.Load() || c.closing.Load() {
		return nil
	}
	if err := c.sendCmd(c.registerCmd(), true); err != nil {
		if err == errQPDown {
			return nil // the peer is gone: the next Read says so (io.EOF)
		}
		c.fail(err)
		return c.opError("read", err)
	}
	return nil
}

// errQPDown: the QP went to the error state, its send queue will not drain.
var errQPDown = errors.New("rdma: the queue pair is down")

// Write writes p, splitting it across the peer's re-arms as needed.
func (c *Conn) Write(p []byte) (int, error) {
	if StagesEnabled {
		defer stageWrite.since(stageNow())
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	written := 0
	for len(p) > 0 {
		buf, err := c.reserve(len(p))
		if err != nil {
			return written, err
		}
		n := copy(buf, p)
		if err := c.commit(n); err != nil {
			return written, err
		}
		written += n
		p = p[n:]
	}
	return written, nil
}

// Reserve waits until the peer has room and returns registered send memory
// for up to n bytes (less if the peer's buffer has less room). Fill it, then
// call Commit with the number of bytes filled; until then the slice is valid
// and other writes wait.
func (c *Conn) Reserve(n int) ([]byte, error) {
	if n < 0 {
		return nil, errors.New("rdma: Reserve of a negative length")
	}
	c.wmu.Lock()
	b, err := c.reserve(n)
	if err != nil {
		c.wmu.Unlock()
		return nil, err
	}
	c.reserved = len(b)
	c.reserveHeld.Store(true)
	signal(c.heldNotify) // a Close that looked before now returns (Close)
	return b, nil
}

// Commit sends the first n bytes of the memory from Reserve (0 sends
// nothing) and ends the reservation.
func (c *Conn) Commit(n int) error {
	if !c.reserveHeld.Swap(false) {
		return errors.New("rdma: Commit without a Reserve")
	}
	defer c.wmu.Unlock()
	if n == 0 {
		return nil
	}
	if n < 0 || n > c.reserved {
		return errors.New("rdma: Commit of more than was reserved")
	}
	return c.commit(n)
}

// reserve waits for the peer's buffer to have room and the send queue to
// have space (wmu held).
func (c *Conn) reserve(n int) ([]byte, error) {
	sp := spin{c: c, lastPass: &c.txPassed}
	defer sp.release()
	for {
		if err := c.writeErr(); err != nil {
			return nil, err
		}
		if c.writeDL.Expired() { // even with room, as in net.TCPConn
			return nil, c.opError("write", os.ErrDeadlineExceeded)
		}
		if g := c.armGen.Load(); g != c.txGen {
			lk := c.armLenKey.Load()
			if err := c.res.tx.Arm(c.armAddr.Load(), uint32(lk>>32), uint32(lk)); err != nil {
				c.fail(err)
				return nil, c.opError("write", err)
			}
			c.txGen = g
		}
		tx := c.res.tx
		down := c.qpDown.Load()
		if !down && tx.Armed() && tx.Available() > 0 && c.sqFree() > ctlReserve {
			return tx.Reserve(n), nil
		}
		if !down && c.spinPoll(&sp) {
			continue
		}
		if !c.park(c.txNotify, c.writeDL.Wait()) {
			return nil, c.opError("write", os.ErrDeadlineExceeded)
		}
	}
}

// spinners counts the goroutines that poll a CQ inline right now, each
// yielding its P (runtime.Gosched) now and then (spinYieldFree). The
// runtime polls the network only from a P that has nothing else to run (or
// from sysmon, every 10 ms), and spinners on every P held every other
// network event in the process for milliseconds (docs/design.md, "Inline
// polling"). So at most GOMAXPROCS-1 may spin, leaving a P for the
// netpoller; with GOMAXPROCS 1, one, which lets the netpoller run every
// netpass.Every (package internal/netpass). The limit also keeps many
// waiting connections from crowding the run queue with spinners.
var spinners atomic.Int32

// maxSpinners is max(GOMAXPROCS-1, 1), GOMAXPROCS looked up again every
// 1024 calls: runtime.GOMAXPROCS takes the scheduler's lock, and a waiter
// asks before every spin.
func maxSpinners() int32 {
	if n := spinLookups.Add(1); n&1023 == 1 || spinProcs.Load() == 0 {
		spinProcs.Store(int32(runtime.GOMAXPROCS(0)))
	}
	return max(spinProcs.Load()-1, 1)
}

// spinnersHoldEveryP reports whether the spinners hold every P, so that
// they must let the netpoller run themselves.
func spinnersHoldEveryP() bool { return spinners.Load() >= spinProcs.Load() }

var spinLookups, spinProcs atomic.Int32

// spin is a waiter's polling state: whether it holds a spinner slot (and
// has told the reactor it polls), since when it has polled without result,
// and when its connection's waiters last let the netpoller run (lastPass,
// which a reader's or writer's spins share: a goroutine whose replies come
// while it spins never parks).
type spin struct {
	c        *Conn
	holding  bool
	polls    int
	start    time.Duration // monoNow at the first miss since the slot was taken or since the last hit; 0 until then
	inline   *cq.Inline
	lastPass *time.Duration
}

// monoBase anchors monoNow, taken when the package is initialised, before
// any spin: so monoNow is above 0 in a spin, and 0 can mean "not started".
var monoBase = time.Now()

// monoNow reads the monotonic clock alone: time.Since on a time with a
// monotonic reading takes one clock read, time.Now takes two (the wall
// clock too), and a spinner reads the clock at a spin's first miss and every
// spinClockEvery polls.
func monoNow() time.Duration { return time.Since(monoBase) }

func (s *spin) release() {
	if s.holding {
		s.inline.End()
		spinners.Add(-1)
		s.holding = false
		// The reactor arms no CQ while its owner polls it. A waiter of
		// this connection that parked meanwhile would then wait for the
		// reactor's next look, up to its sleep limit: have it arm the CQ
		// (or poll it) now.
		if s.c.parked.Load() > 0 {
			s.inline.BeforePark(s.c.reactor)
		}
	}
}

// park waits until ch is signalled, the connection ends or dl (nil: none)
// is closed, having made sure that the reactor will dispatch the CQ's
// completions; it reports false for dl.
func (c *Conn) park(ch, dl chan struct{}) bool {
	c.parked.Add(1)
	c.h.inline.BeforePark(c.reactor)
	ok := true
	select {
	case <-ch:
	case <-c.done:
	case <-dl:
		ok = false
	}
	c.parked.Add(-1)
	return ok
}

// spinPoll is what a waiting reader or writer does before it parks: poll
// the CQ itself, for up to opts.SpinWait without a result, if a spinner
// slot is free. It reports whether to look again (true) or to park (false).
func (c *Conn) spinPoll(s *spin) bool {
	if c.opts.SpinWait < 0 {
		return false
	}
	if !s.holding {
		if spinners.Add(1) > maxSpinners() {
			spinners.Add(-1)
			return false
		}
		s.holding, s.start, s.inline = true, 0, &c.h.inline
		s.inline.Begin()
	}
	if c.pollInline() {
		s.start = 0 // the spin's clock restarts at its next miss
		return true
	}
	if s.start == 0 {
		s.start = monoNow()
	}
	s.polls++
	if s.polls%spinClockEvery == 0 {
		now := monoNow()
		if now-s.start >= c.opts.SpinWait {
			s.release()
			return false
		}
		if now-*s.lastPass >= netpass.Every && spinnersHoldEveryP() {
			netpass.Pass()
			*s.lastPass = monoNow()
		}
	}
	if s.polls%spinYieldShared == 0 && (s.polls%spinYieldFree == 0 || spinnersHoldEveryP()) {
		runtime.Gosched()
	}
	return true
}

// A spinner yields its P (runtime.Gosched) every spinYieldFree polls, so
// that goroutines queued behind it on its P get their turn; every
// spinYieldShared when the spinners hold every P, as with GOMAXPROCS 1.
// Otherwise a P is free, and the scheduler's idle Ps take the queued work
// (work stealing), so the yield need not come often. It costs several
// polls: under emulation 3.3 µs against 0.4 µs a poll, half of a spinner's
// time when it came every 8 polls, and a completion that lands during a
// yield waits for it (round trip p50 lower by 8 % at every 64, in 8 of 8
// alternating runs; docs/benchmarks.md).
const (
	spinYieldShared = 8
	spinYieldFree   = 64
)

// spinClockEvery is how many polls a spinner makes between looks at the
// clock. A look costs about what a poll does (more under emulation, where
// the VM's profile showed the spinners' clock reads at 29 % of the CPU),
// and SpinWait need not be kept to the poll.
const spinClockEvery = 16

func (c *Conn) writeErr() error {
	if err := c.terminal(); err != nil {
		return c.opError("write", err)
	}
	if c.peerClosed.Load() {
		return c.opError("write", ErrPeerGone)
	}
	return nil
}

// commit posts an RDMA_WRITE_WITH_IMM of n reserved bytes, imm = n.
func (c *Conn) commit(n int) error {
	local, lkey, remote, rkey := c.res.tx.Commit(n)
	c.smu.Lock()
	if c.closing.Load() {
		// Close's linger waits for the WRs posted before its marker,
		// under smu: a write posted after it would be flushed by the
		// disconnect, and the Write would have reported success.
		c.smu.Unlock()
		return c.opError("write", c.endErr())
	}
	err := c.postLocked(opcodeWrite, local, uint32(n), lkey, htonl(uint32(n)), remote, rkey)
	c.smu.Unlock()
	if err != nil {
		c.fail(err)
		return c.opError("write", err)
	}
	return nil
}

const (
	opcodeWrite = verbs.WRRDMAWriteWithImm
	opcodeSend  = verbs.WRSend
)

// sqFree is the free send-queue entries. A writer calls it without smu,
// while a control SEND (a keepalive, from a timer) may post and its
// completion may come at once. So sqPosted is advanced before a WR is
// posted, and sqDone is loaded here first: then done <= posted. The other
// way round, a writer could see the completion of a WR posted after its
// look at sqPosted, compute a wrapped posted-done, and wait for a
// completion that had already come: a stall until the next keepalive,
// seen in the VM under 50 clients.
func (c *Conn) sqFree() int {
	done := c.sqDone.Load()
	return sqDepth - max(int(int32(c.sqPosted.Load()-done)), 0)
}

// postLocked posts one send WR (smu held). It signals every signalInterval
// WRs, every control SEND (its command slot is then known to be free), and
// whenever half the queue is outstanding, so a full queue always has a
// signaled WR in flight.
func (c *Conn) postLocked(opcode uint32, local uint64, n, lkey, imm uint32, remote uint64, rkey uint32) error {
	seq := c.sqPosted.Load()
	signaled := opcode == opcodeSend || seq%signalInterval == 0 || int(seq-c.sqDone.Load()) >= sqDepth/2
	c.sqPosted.Store(seq + 1) // before the WR can complete (see sqFree)
	if err := c.res.postSend(c.reg.SendWRID(seq&seqMask), opcode, signaled, local, n, lkey, imm, remote, rkey); err != nil {
		c.sqPosted.Store(seq)
		return err
	}
	return nil
}

// sendCmd sends a control message. With wait it waits for send-queue
// space, unless the QP is down (errQPDown: then nothing will free any);
// without (on the reactor goroutine) it fails when there is none.
func (c *Conn) sendCmd(m cmd, wait bool) error {
	for {
		c.smu.Lock()
		if c.closing.Load() {
			c.smu.Unlock()
			return c.endErr()
		}
		if wait && c.qpDown.Load() {
			c.smu.Unlock()
			return errQPDown
		}
		if c.sqFree() > 0 {
			err := c.postCmdLocked(m)
			c.smu.Unlock()
			return err
		}
		c.smu.Unlock()
		if !wait {
			return errors.New("rdma: send queue full")
		}
		c.park(c.ctlNotify, nil)
	}
}

// postCmdLocked posts control message m as a SEND, always signaled (smu
// held, a free send-queue entry checked).
func (c *Conn) postCmdLocked(m cmd) error {
	slot := recvSlots + c.sqPosted.Load()%sendSlots
	m.encode(c.res.cmdSlot(slot))
	return c.postLocked(opcodeSend, c.res.cmd.Addr()+uint64(slot*cmdSize), cmdSize, c.res.cmd.LKey(), 0, 0, 0)
}

func htonl(v uint32) uint32 {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return binary.NativeEndian.Uint32(b[:])
}

func ntohl(v uint32) uint32 { return htonl(v) }

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
