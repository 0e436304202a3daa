package gnettcp

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/logging"
	"github.com/valyala/bytebufferpool"

	"github.com/seed54442f1a/rdmapool/internal/deadline"
	"github.com/seed54442f1a/rdmapool/internal/singleton"
	"github.com/seed54442f1a/rdmapool/internal/spinwait"
	"github.com/seed54442f1a/rdmapool/internal/tcpdial"
	"github.com/seed54442f1a/rdmapool/pool"
)

// Conn is a TCP connection driven by a gnet event loop, as a pool.Conn.
//
// gnet gives a connection no deadlines, no blocking Read or Write and no
// dial timeout; Conn adds them:
//
//   - Inbound bytes are copied, in the event loop's OnTraffic, into a
//     bytebufferpool buffer that Read drains. A reader that finds nothing
//     polls for up to tcpSpinWait (with GOMAXPROCS of 2 or more, where
//     spinning pays), then parks on a channel that OnTraffic and OnClose
//     signal.
//   - Write calls write(2) on the socket itself while the kernel takes the
//     bytes (see directWritesDefault). When the kernel's buffer is full, it
//     hands the rest to the event loop with AsyncWrite (the one write of
//     gnet that may be called off the event loop), a chunk of at most
//     tcpWriteChunk bytes at a time: gnet writes what the kernel takes,
//     copies the rest into the connection's outbound buffer and sends it
//     when the socket is writable. Write waits for that buffer to drain
//     before it writes more and before it returns, so it returns once the
//     kernel has everything, and no more than one chunk is ever queued in
//     user space.
//   - A deadline that has passed fails a Read or Write at once, even with
//     data waiting or room in the kernel, as on a net.TCPConn and in
//     package qp (golang.org/x/net/nettest's suite checks it), and one
//     that passes wakes a Read or Write that waits.
//
// A write deadline that passes while a chunk is still queued in gnet
// returns a timeout, but the chunk is not withdrawn: gnet still sends it.
// The n returned counts it, so the stream stays consistent for a caller
// that continues with p[n:].
//
// Inbound data is bounded as on a net.Conn. gnet v2 cannot stop reading a
// connection (no call pauses one, and bytes OnTraffic leaves unconsumed go
// to gnet's own inbound buffer, which grows the same way), so the event
// loop reads whatever the peer sends as it arrives. Once more than
// tcpMoveAt is received and unread, the connection leaves the event loop
// (moveOff): on the loop, it takes a duplicate of gnet's descriptor and
// has gnet close its own, and goes on as a netpoll connection
// (pool.NewTCPConn, engine pool.TCPNetpoll) on the duplicate, after the
// bytes it buffered. The kernel's receive window then holds back the peer,
// as it does for a net.Conn nobody reads. It stays there for good; the
// method Engine reports it. The move waits
// for a moment when no Write is under way and gnet holds nothing of ours
// to send (gnet's close would drop it); if that never comes, or the move
// fails, tcpMaxInbound bounds what is held: past it, the connection is
// closed, and Read returns what was buffered, then an error matching
// ErrInboundLimit (what arrived last, past the bound, is dropped).
type Conn struct {
	gc           gnet.Conn
	laddr, raddr net.Addr
	fd           int             // gnet's descriptor for the socket
	direct       bool            // Write calls write(2) itself first (directWritesDefault)
	spinWait     time.Duration   // tcpSpinWait when dialled, if GOMAXPROCS allows
	spinBudget   spinwait.Budget // whether spinning pays on this connection (see tcpSpinWait)
	opened       bool            // OnOpen ran (set on the event loop before EnrollContext returns)

	// fdmu is held around each write(2) we make on fd, and by OnClose
	// before gnet closes fd, which sets fdDone: a descriptor number is
	// never written after gnet has closed it (and maybe reused it).
	fdmu   sync.Mutex
	fdDone bool

	// mu guards the state below; the event loop takes it in OnTraffic and
	// OnClose.
	mu      sync.Mutex
	in      *bytebufferpool.ByteBuffer // received, unread: in.B[off:]
	off     int
	waiting int   // Reads waiting for data (spinning or parked)
	closed  bool  // Close was called
	gone    bool  // gnet closed the connection (OnClose)
	goneErr error // the error OnClose gave, nil if we closed it
	// goneFlushed: at OnClose gnet held none of our bytes: everything a
	// Write handed it had reached the kernel. Set before goneCh is
	// closed; read after it.
	goneFlushed bool
	over        bool // more than tcpMaxInbound arrived unread: OnTraffic closed it
	// moved is the connection on the duplicate of gnet's descriptor once
	// it has left the event loop (moveOff), which sets it with wmu held
	// too: a Write may read it holding wmu alone. rdT and wdT are the
	// deadlines last set, for moveOff to give it.
	moved    pool.Conn
	movedH   pool.HealthChecker // moved's
	rdT, wdT time.Time
	noMove   bool // a move failed: none is tried again (event loop only)
	noMoves  bool // tcpConfig.noMoves: never tried
	// movePending: a move was due but a Write was under way; the Write
	// that ends has the event loop try again (writeDone).
	movePending atomic.Bool

	avail  atomic.Bool   // there is data, or gnet closed the connection: a spinning Read looks at it
	rdy    chan struct{} // cap 1: data arrived or the state changed
	done   chan struct{} // closed by Close
	goneCh chan struct{} // closed by OnClose

	// The write side; wmu serialises writers and guards queued, probing
	// and wtimer.
	wmu     sync.Mutex
	queued  int  // bytes gnet still held at the last look
	probing bool // a probe's answer is still to come on pres
	wtimer  *time.Timer
	wres    chan tcpWriteResult // cap 1: AsyncWrite's callback
	pres    chan int            // cap 1: a probe's answer
	wcb     gnet.AsyncCallback  // bound once: no allocation per Write
	probe   gnet.Runnable

	rd, wd deadline.Deadline
}

type tcpWriteResult struct {
	queued int // bytes gnet kept in its outbound buffer
	err    error
}

const (
	// tcpWriteChunk bounds the bytes handed to the event loop at once, and
	// so what gnet may copy into its outbound buffer when the kernel's is
	// full. It equals gnet's default write buffer, which gnet keeps in a
	// ring buffer instead of a list of allocated slices.
	tcpWriteChunk = 64 << 10
	// tcpKeepInbound is the largest inbound buffer a connection keeps once
	// it has read everything; a larger one goes back to the pool.
	tcpKeepInbound = 64 << 10
	// tcpMoveAt is how much a connection holds received and unread
	// before it leaves the event loop for the netpoller (moveOff): about
	// what the kernel buffers for a socket nobody reads.
	tcpMoveAt = 4 << 20
	// tcpMaxInbound bounds the bytes a connection holds received and
	// unread if it could not leave the event loop; past it, OnTraffic
	// closes the connection.
	tcpMaxInbound = 64 << 20
	// The bounds of the backoff between looks at gnet's outbound buffer:
	// gnet tells nobody when it has drained it.
	tcpProbeMin = 20 * time.Microsecond
	tcpProbeMax = time.Millisecond
)

var (
	_ pool.Conn          = (*Conn)(nil)
	_ pool.HealthChecker = (*Conn)(nil)
)

// Direct writes: where directWritesDefault (fd_*.go) is true, Write calls
// write(2) on the socket from the caller's goroutine while the kernel
// takes the bytes, and goes through the
// event loop only when it does not. Through the event loop every Write
// costs a wake-up of the loop's thread and, inside gnet's AsyncWrite, three
// allocations (the hook, the method value, the task queue's node); the
// direct write costs neither. It bypasses nothing gnet relies on: gnet
// writes to the socket only from its outbound buffer, which is empty
// whenever we write (Write waits for it to drain first), and fdmu keeps us
// off the descriptor once gnet closes it. Tests and the benchmark turn it
// off (tcpConfig.asyncWritesOnly) to exercise and compare the
// AsyncWrite-only path.

// tcpSpinWait is how long a Read that finds nothing polls for data, with
// runtime.Gosched between looks, before it parks until OnTraffic wakes it.
// Like the RDMA connection's SpinWait, it buys latency with a busy
// processor while it lasts: with gnet, what arrives is read by the event
// loop's goroutine, whose thread sleeps in epoll_wait, and the wake-up of a
// parked reader is a second hop, often to another thread, that net.Conn
// does not have. A spinning reader sees the data as soon as the loop has
// it.
//
// Spinning pays only when the answer comes while it lasts. With GOMAXPROCS
// 1 the spinner would hold the processor the event loop needs, so no
// connection spins. With a peer in the same process and few processors it
// rarely does: the runtime polls the network for the peer's goroutine only
// once nothing is runnable, and a spinner is always runnable. Under
// pipelining, the reader's yields let the callers run, and data that
// arrives after them is late. So spinning adapts (spinwait.Budget) and stops on a
// connection where it does not pay (BenchmarkTCPRoundTrip compares the
// engines with and without it). A connection takes the value when it is
// dialled; tests and the benchmark change it (tcpConfig.spinWait) to
// compare.
const tcpSpinWait = 50 * time.Microsecond

// tcpConfig is what tests and benchmarks change of a gnet Conn when
// they dial it; its zero value is the engine as it is.
type tcpConfig struct {
	asyncWritesOnly bool          // every Write goes through AsyncWrite (no direct write(2))
	spinWait        time.Duration // a waiting Read's spin: 0 tcpSpinWait, below 0 none
	noMoves         bool          // the connection never leaves the loop (moveOff); tcpMaxInbound bounds it
}

const tcpSpinMinProcs = 2

var errTCPRegister = errors.New("gnet: the event loop could not register the connection")

// ErrInboundLimit is matched by the error a Conn's Read returns, once
// the buffered data is read, when the connection was closed because its
// peer had sent more than 64 MiB that nobody read (see Conn).
var ErrInboundLimit = errors.New("rdmapool: tcp (gnet): over 64 MiB received and unread; connection closed")

// tcpInPool is ours alone, so that its size calibration follows what TCP
// connections receive.
var tcpInPool bytebufferpool.Pool

// Dial connects to addr ("host:port") over TCP and registers the
// connection with the process's gnet event loops, starting them if this is
// the first connection.
//
// ctx bounds the dial (cancellation and deadline); when it ends first,
// nothing is left behind. Errors are *net.OpError values, as the net
// package's are; a refused connection matches syscall.ECONNREFUSED.
func Dial(ctx context.Context, addr string) (*Conn, error) {
	return dialTCP(ctx, nil, addr, tcpConfig{})
}

// dialTCP is Dial with nd's settings (LocalAddr, KeepAlive, Control and
// the rest) if nd is not nil, but not its Timeout or Deadline: ctx alone
// bounds the dial; cfg is the connection's tcpConfig.
func dialTCP(ctx context.Context, nd *net.Dialer, addr string, cfg tcpConfig) (*Conn, error) {
	cli, err := acquireTCPEngine()
	if err != nil {
		return nil, &net.OpError{Op: "dial", Net: "tcp", Addr: tcpdial.Addr(addr), Err: err}
	}
	// gnet's Client.Dial is net.Dial with neither a context nor a timeout,
	// and Client.DialContext's "context" is only a value to attach. So we
	// connect with net.Dialer (tcpdial.Connect) and give the socket to gnet with
	// Client.EnrollContext: it duplicates the descriptor, registers the
	// duplicate with an event loop, closes ours, and returns once OnOpen
	// has run.
	nc, err := tcpdial.Connect(ctx, nd, addr)
	if err != nil {
		releaseTCPEngine()
		return nil, err
	}
	tc := &Conn{
		laddr:  nc.LocalAddr(),
		raddr:  nc.RemoteAddr(),
		rdy:    make(chan struct{}, 1),
		done:   make(chan struct{}),
		goneCh: make(chan struct{}),
		wres:   make(chan tcpWriteResult, 1),
		pres:   make(chan int, 1),
		rd:     deadline.New(),
		wd:     deadline.New(),

		noMoves: cfg.noMoves, // before EnrollContext: the loop reads it
	}
	tc.wcb = tc.written
	tc.probe = gnet.RunnableFunc(tc.look)
	gc, err := cli.EnrollContext(nc, tc)
	if err != nil {
		releaseTCPEngine()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Source: tc.laddr, Addr: tc.raddr, Err: err}
	}
	if !tc.opened {
		// The event loop failed to register the descriptor (epoll_ctl), has
		// closed it, and EnrollContext does not say so.
		releaseTCPEngine()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Source: tc.laddr, Addr: tc.raddr, Err: errTCPRegister}
	}
	tc.gc = gc
	tc.fd = gc.Fd()
	tc.direct = directWritesDefault && !cfg.asyncWritesOnly
	if runtime.GOMAXPROCS(0) >= tcpSpinMinProcs {
		switch {
		case cfg.spinWait == 0:
			tc.spinWait = tcpSpinWait
		case cfg.spinWait > 0:
			tc.spinWait = cfg.spinWait
		}
	}
	return tc, nil
}

// Transport reports TCP.
func (tc *Conn) Transport() pool.Transport { return pool.TCP }

// LocalAddr is the local address.
func (tc *Conn) LocalAddr() net.Addr { return tc.laddr }

// RemoteAddr is the peer's address.
func (tc *Conn) RemoteAddr() net.Addr { return tc.raddr }

// Read reads what has arrived, waiting for something if nothing has. Once
// the peer has closed and everything is read, it returns io.EOF.
func (tc *Conn) Read(p []byte) (int, error) {
	waiting := false // counted in tc.waiting
	for {
		tc.mu.Lock()
		if waiting {
			tc.waiting--
			waiting = false
		}
		if tc.closed {
			tc.mu.Unlock()
			return 0, tc.opError("read", net.ErrClosed)
		}
		// As in net.TCPConn: a passed deadline fails a read even when
		// data is waiting.
		if tc.rd.Expired() {
			tc.mu.Unlock()
			return 0, tc.opError("read", os.ErrDeadlineExceeded)
		}
		if tc.in != nil && tc.off < len(tc.in.B) {
			n := copy(p, tc.in.B[tc.off:])
			tc.off += n
			// OnTraffic signalled once for what it added; if some is left
			// and another Read waits, this one took the signal: pass it on.
			// Once the connection has moved, no OnTraffic comes again, and
			// the next Read reads the socket.
			pass := (tc.off < len(tc.in.B) || tc.moved != nil) && tc.waiting > 0
			if tc.off == len(tc.in.B) {
				tc.avail.Store(false)
				tc.off = 0
				if cap(tc.in.B) > tcpKeepInbound {
					tcpInPool.Put(tc.in) // Put sizes by len: keep it
					tc.in = nil
				} else {
					tc.in.B = tc.in.B[:0]
				}
			}
			tc.mu.Unlock()
			if pass {
				tc.signal()
			}
			return n, nil
		}
		if tc.gone {
			err := tc.readErrLocked()
			tc.mu.Unlock()
			return 0, err
		}
		if nc := tc.moved; nc != nil {
			pass := tc.waiting > 0 // parked when it moved: they read the socket too
			tc.mu.Unlock()
			if pass {
				tc.signal()
			}
			return nc.Read(p)
		}
		if len(p) == 0 {
			tc.mu.Unlock()
			return 0, nil
		}
		tc.waiting++
		waiting = true
		tc.mu.Unlock()
		if tc.spin() {
			continue
		}
		// goneCh: OnClose signals once, and another Read may take it.
		if !spinwait.Park(tc.rdy, tc.goneCh, tc.done, tc.rd.Wait()) {
			tc.mu.Lock()
			tc.waiting--
			tc.mu.Unlock()
			return 0, tc.opError("read", os.ErrDeadlineExceeded)
		}
	}
}

// spin waits up to tc.spinWait for OnTraffic or OnClose to leave something
// for Read, yielding the processor between looks, and reports whether they
// did. Parking instead costs the event loop a wake-up of the reader's
// goroutine on the latency path. A deadline that has passed skips it, and
// so does the connection's spin budget while spinning does not pay.
func (tc *Conn) spin() bool {
	if tc.rd.Expired() {
		return false
	}
	s := spinwait.Spin{Policy: &tcpSpinPolicy, Wait: tc.spinWait, Budget: &tc.spinBudget}
	if !s.Begin() {
		return false
	}
	for {
		if tc.avail.Load() {
			s.Hit()
			s.End()
			return true
		}
		if !s.Miss() {
			return false
		}
	}
}

// tcpSpinPolicy: a spinning Read looks at the clock and yields after every
// look, so that the event loop's goroutine, which brings the data, runs.
// It takes no spinner slot: no Read spins with GOMAXPROCS 1 (tcpSpinMinProcs),
// and the spinners' yields leave the netpoller its turns.
var tcpSpinPolicy = spinwait.Policy{ClockEvery: 1, YieldEvery: 1, YieldShared: 1}

// readErrLocked is what Read returns once gnet has closed the connection
// and everything is read.
func (tc *Conn) readErrLocked() error {
	if tc.goneErr == nil || errors.Is(tc.goneErr, io.EOF) {
		return io.EOF
	}
	return tc.opError("read", tc.goneErr)
}

// Write writes p and returns once the kernel has taken all of it.
func (tc *Conn) Write(p []byte) (int, error) {
	tc.wmu.Lock()
	defer tc.writeDone()
	if err := tc.writeState(); err != nil {
		return 0, err
	}
	if nc := tc.moved; nc != nil { // set with wmu held
		return nc.Write(p)
	}
	n := 0
	for {
		if err := tc.waitFlushed(); err != nil {
			return n, err
		}
		if len(p) == 0 {
			return n, nil
		}
		// As in net.TCPConn: a passed deadline fails a write even when
		// the kernel would take it.
		if tc.wd.Expired() {
			return n, tc.opError("write", os.ErrDeadlineExceeded)
		}
		if tc.direct {
			m, err := tc.writeDirect(p)
			n += m
			p = p[m:]
			if err != nil {
				return n, err
			}
			if len(p) == 0 {
				return n, nil
			}
			// The kernel's buffer is full: hand a chunk to gnet, which
			// sends it when the socket is writable.
		}
		chunk := p[:min(len(p), tcpWriteChunk)]
		if err := tc.gc.AsyncWrite(chunk, tc.wcb); err != nil {
			return n, tc.opError("write", err)
		}
		// Wait for the callback whatever the deadline: until it has run,
		// the event loop may still read chunk, which is the caller's.
		// Once gnet has closed the connection, it will not.
		var r tcpWriteResult
		select {
		case r = <-tc.wres:
		case <-tc.goneCh:
			// The callback may have run before the close: then the
			// chunk was written, and counts.
			select {
			case r = <-tc.wres:
			default:
				return n, tc.writeState()
			}
		}
		if r.err != nil {
			if errors.Is(r.err, net.ErrClosed) {
				return n, tc.writeState()
			}
			return n, tc.opError("write", os.NewSyscallError("write", r.err))
		}
		n += len(chunk)
		p = p[len(chunk):]
		tc.queued = r.queued
	}
}

// writeDone ends a Write: it releases wmu and, if the connection was due to
// leave the event loop while the Write ran, has the loop try now (Wake
// runs OnTraffic with no new data). Otherwise only more traffic would try
// again, and a peer that has sent all it will would leave the connection
// buffering on the loop. Wake only queues a task (it never waits for the
// loop); it is called under mu with closed not set, so the engine, which
// Close releases after setting closed, still runs.
func (tc *Conn) writeDone() {
	tc.wmu.Unlock()
	if !tc.movePending.Load() {
		return
	}
	tc.mu.Lock()
	if !tc.closed && !tc.gone && tc.moved == nil && tc.movePending.CompareAndSwap(true, false) {
		_ = tc.gc.Wake(nil)
	}
	tc.mu.Unlock()
}

// writeDirect writes p with write(2) until the kernel takes no more. It is
// called only while gnet holds nothing of ours to send, so the bytes keep
// their order (wmu held).
func (tc *Conn) writeDirect(p []byte) (int, error) {
	tc.fdmu.Lock()
	defer tc.fdmu.Unlock()
	if tc.fdDone {
		return 0, tc.writeState()
	}
	n := 0
	for n < len(p) {
		m, err := writeFD(tc.fd, p[n:])
		switch err {
		case nil:
			n += m
		case errEINTR:
		case errEAGAIN:
			return n, nil
		default:
			return n, tc.opError("write", os.NewSyscallError("write", err))
		}
	}
	return n, nil
}

// written is the AsyncWrite callback; it runs on the event loop.
func (tc *Conn) written(c gnet.Conn, err error) error {
	q := 0
	if err == nil {
		q = c.OutboundBuffered()
	}
	tc.wres <- tcpWriteResult{queued: q, err: err} // one write at a time: never blocks
	return nil
}

// look is the probe of gnet's outbound buffer; it runs on the event loop.
func (tc *Conn) look(context.Context) error {
	tc.pres <- tc.gc.OutboundBuffered() // one probe at a time: never blocks
	return nil
}

// waitFlushed waits until gnet's outbound buffer for the connection is
// empty: everything written so far is in the kernel (wmu held). gnet has
// no event for that, so it looks, from the event loop, with a backoff.
func (tc *Conn) waitFlushed() error {
	if tc.queued == 0 && !tc.probing {
		return nil
	}
	backoff := tcpProbeMin
	for {
		if !tc.probing {
			if tc.queued == 0 {
				return nil
			}
			if tc.wtimer == nil {
				tc.wtimer = time.NewTimer(backoff)
			} else {
				tc.wtimer.Reset(backoff)
			}
			select {
			case <-tc.wtimer.C:
			case <-tc.done:
				return tc.opError("write", net.ErrClosed)
			case <-tc.goneCh:
				return tc.goneFlush()
			case <-tc.wd.Wait():
				tc.wtimer.Stop()
				return tc.opError("write", os.ErrDeadlineExceeded)
			}
			if err := tc.gc.EventLoop().Execute(context.Background(), tc.probe); err != nil {
				return tc.opError("write", err)
			}
			tc.probing = true
			backoff = min(2*backoff, tcpProbeMax)
		}
		select {
		case q := <-tc.pres:
			tc.queued, tc.probing = q, false
		case <-tc.done:
			return tc.opError("write", net.ErrClosed)
		case <-tc.goneCh:
			return tc.goneFlush()
		case <-tc.wd.Wait():
			return tc.opError("write", os.ErrDeadlineExceeded)
		}
	}
}

// goneFlush is waitFlushed's answer once gnet has closed the connection:
// nil if gnet held none of our bytes then (each had reached the kernel,
// as with a peer that read everything and closed), so that a Write whose
// bytes all went out succeeds, as with net.TCPConn; the connection's
// error otherwise. A Write with more to send meets the error next.
func (tc *Conn) goneFlush() error {
	if tc.goneFlushed {
		tc.queued = 0
		return nil
	}
	return tc.writeState()
}

// writeState is the error a Write gets for the connection's state: closed
// by us, closed by gnet (the peer closed or the connection failed), or nil.
func (tc *Conn) writeState() error {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	switch {
	case tc.closed:
		return tc.opError("write", net.ErrClosed)
	case !tc.gone:
		return nil
	case tc.goneErr == nil || errors.Is(tc.goneErr, io.EOF):
		// gnet closes the socket when the peer closes its side.
		return tc.opError("write", os.NewSyscallError("write", syscall.EPIPE))
	default:
		return tc.opError("write", tc.goneErr)
	}
}

// Healthy reports, without blocking, whether the connection is open, its
// peer has not closed it, and no received data waits to be read: what the
// pool checks before it hands out an idle connection.
func (tc *Conn) Healthy() bool {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.closed || tc.gone || tc.in != nil && len(tc.in.B) != tc.off {
		return false
	}
	return tc.moved == nil || tc.movedH.Healthy()
}

// Engine reports what drives the connection: Engine, or pool.TCPNetpoll once
// it has left the event loop because its unread data passed tcpMoveAt.
func (tc *Conn) Engine() pool.TCPEngine {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.moved != nil {
		return pool.TCPNetpoll
	}
	return Engine
}

// Close closes the connection. Pending and later Reads and Writes return
// errors matching net.ErrClosed, as do later Closes. The last connection to
// close stops the event loops.
func (tc *Conn) Close() error {
	tc.mu.Lock()
	if tc.closed {
		tc.mu.Unlock()
		return tc.opError("close", net.ErrClosed)
	}
	tc.closed = true
	close(tc.done)
	moved := tc.moved
	tc.mu.Unlock()

	if moved != nil {
		// gnet closed its descriptor when the connection moved (and will
		// not move it after closed was set).
		moved.Close()
	} else if err := tc.gc.Close(); err == nil {
		<-tc.goneCh // OnClose has run: the socket is closed
	}
	// A Write still running returns now (it saw done or goneCh); once it
	// has, nothing of ours is queued on the event loop that anyone waits
	// for, and the engine may stop.
	tc.wmu.Lock()
	if tc.wtimer != nil {
		tc.wtimer.Stop()
	}
	tc.wmu.Unlock()

	tc.mu.Lock()
	if tc.in != nil {
		tcpInPool.Put(tc.in)
		tc.in = nil
	}
	tc.mu.Unlock()
	tc.rd.Set(time.Time{})
	tc.wd.Set(time.Time{})
	releaseTCPEngine()
	return nil
}

// SetDeadline sets the read and write deadlines.
func (tc *Conn) SetDeadline(t time.Time) error {
	return tc.setDeadlines(t, true, true)
}

// SetReadDeadline sets the deadline for waiting Reads.
func (tc *Conn) SetReadDeadline(t time.Time) error {
	return tc.setDeadlines(t, true, false)
}

// SetWriteDeadline sets the deadline for waiting Writes.
func (tc *Conn) SetWriteDeadline(t time.Time) error {
	return tc.setDeadlines(t, false, true)
}

// setDeadlines sets ours, which Read and Write look at, and, once the
// connection has moved off the event loop, the socket's; under mu, so that
// a move in between gives the socket the latest.
func (tc *Conn) setDeadlines(t time.Time, read, write bool) error {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.closed {
		return tc.opError("set", net.ErrClosed)
	}
	if read {
		tc.rd.Set(t)
		tc.rdT = t
	}
	if write {
		tc.wd.Set(t)
		tc.wdT = t
	}
	if tc.moved == nil {
		return nil
	}
	switch {
	case read && write:
		return tc.moved.SetDeadline(t)
	case read:
		return tc.moved.SetReadDeadline(t)
	default:
		return tc.moved.SetWriteDeadline(t)
	}
}

func (tc *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: tc.laddr, Addr: tc.raddr, Err: err}
}

// onTraffic runs on the event loop: it moves what arrived into our buffer
// and wakes a waiting reader. It returns gnet.Close when that leaves more
// than tcpMoveAt unread and the connection moves off the event loop
// (moveOff), or would leave more than tcpMaxInbound unread, which closes
// the connection (what arrived last is then dropped).
func (tc *Conn) onTraffic(c gnet.Conn) gnet.Action {
	data, _ := c.Next(-1) // everything; gnet's own buffer stays empty
	if len(data) == 0 {   // woken (writeDone), or nothing new
		tc.mu.Lock()
		unread := 0
		if tc.in != nil {
			unread = len(tc.in.B) - tc.off
		}
		tc.mu.Unlock()
		if unread > tcpMoveAt && tc.moveOff(c) {
			return gnet.Close
		}
		return gnet.None
	}
	tc.mu.Lock()
	if tc.in != nil && len(tc.in.B)-tc.off+len(data) > tcpMaxInbound {
		// Not appended: the connection closes, and the buffer does not
		// grow past the bound.
		tc.over = true
		tc.mu.Unlock()
		return gnet.Close
	}
	unread := 0
	if !tc.closed {
		if tc.in == nil {
			tc.in = tcpInPool.Get()
		} else if tc.off > 0 && tc.off >= len(tc.in.B)-tc.off {
			// More read than unread: move the unread to the front.
			tc.in.B = tc.in.B[:copy(tc.in.B, tc.in.B[tc.off:])]
			tc.off = 0
		}
		if need := len(tc.in.B) + len(data); need > cap(tc.in.B) {
			// Doubling, where append grows a large slice by a quarter: a
			// buffer filling towards tcpMaxInbound leaves less garbage.
			b := make([]byte, len(tc.in.B), max(2*cap(tc.in.B), need))
			copy(b, tc.in.B)
			tc.in.B = b
		}
		tc.in.B = append(tc.in.B, data...)
		tc.avail.Store(true)
		unread = len(tc.in.B) - tc.off
	}
	tc.mu.Unlock()
	tc.signal()
	if unread > tcpMoveAt && tc.moveOff(c) {
		return gnet.Close
	}
	return gnet.None
}

// moveOff takes the connection off the event loop, on a duplicate of
// gnet's descriptor driven by the netpoller, and reports whether it did;
// OnTraffic then returns gnet.Close, and gnet removes its descriptor from
// its poller and closes it (close(2), no shutdown: the socket stays open
// on the duplicate), and calls OnClose, which knows. It runs on the event
// loop, the only goroutine that reads the socket until then: everything
// gnet read is in tc.in, and the rest waits in the kernel.
//
// gnet's close writes what its outbound buffer holds with one
// non-blocking writev and drops what the kernel does not take, so the move
// happens only when gnet holds nothing of ours: no Write under way (wmu,
// tried, never waited for on the loop, where a Write waits for us), no
// probe of the outbound buffer in flight, and the buffer empty. Otherwise
// a later OnTraffic tries again, or the end of the next Write has the loop
// try (writeDone).
func (tc *Conn) moveOff(c gnet.Conn) bool {
	if tc.noMove || tc.noMoves {
		return false
	}
	if !tc.wmu.TryLock() {
		tc.movePending.Store(true) // the Write tries again when it ends
		return false
	}
	defer tc.wmu.Unlock()
	if tc.probing || c.OutboundBuffered() > 0 {
		// What gnet holds goes out when the socket is writable; the next
		// Write waits for it, and tries again when it ends.
		tc.movePending.Store(true)
		return false
	}
	nc, err := tcpDupConn(c)
	if err != nil {
		tc.noMove = true // tcpMaxInbound bounds it instead
		return false
	}
	tc.mu.Lock()
	if tc.closed || tc.gone {
		// Close has called, or will call, gnet's close, and waits for
		// OnClose.
		tc.mu.Unlock()
		nc.Close()
		return false
	}
	if !tc.rdT.IsZero() {
		_ = nc.SetReadDeadline(tc.rdT)
	}
	if !tc.wdT.IsZero() {
		_ = nc.SetWriteDeadline(tc.wdT)
	}
	tc.moved, tc.movedH, tc.queued = nc, nc.(pool.HealthChecker), 0
	tc.movePending.Store(false)
	tc.mu.Unlock()
	tc.fdmu.Lock()
	tc.fdDone = true // gnet closes fd
	tc.fdmu.Unlock()
	tc.signal() // a Read parked for want of data reads the socket once tc.in is drained
	return true
}

// tcpDupConn is a netpoll connection (pool.NewTCPConn) on a duplicate of
// c's descriptor (net.FileConn duplicates the one it is given, which is
// closed here).
func tcpDupConn(c gnet.Conn) (pool.Conn, error) {
	fd, err := c.Dup()
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "tcp")
	fc, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	tcp, ok := fc.(*net.TCPConn)
	if !ok {
		fc.Close()
		return nil, errors.New("rdmapool: tcp (gnet): the duplicate descriptor is not a TCP socket")
	}
	return pool.NewTCPConn(tcp)
}

// onClose runs on the event loop when gnet has closed the connection.
func (tc *Conn) onClose(err error, flushed bool) {
	tc.fdmu.Lock()
	tc.fdDone = true
	tc.fdmu.Unlock()
	tc.mu.Lock()
	if tc.gone || tc.moved != nil { // moved: gnet let it go (moveOff)
		tc.mu.Unlock()
		return
	}
	tc.gone, tc.goneErr, tc.goneFlushed = true, err, flushed
	if tc.over {
		tc.goneErr = ErrInboundLimit
	}
	tc.avail.Store(true)
	tc.mu.Unlock()
	close(tc.goneCh)
	tc.signal()
}

func (tc *Conn) signal() {
	select {
	case tc.rdy <- struct{}{}:
	default:
	}
}

// tcpHandler is the gnet event handler of every Conn; a connection's
// gnet context is its *Conn.
type tcpHandler struct{ gnet.BuiltinEventEngine }

func (tcpHandler) OnOpen(c gnet.Conn) ([]byte, gnet.Action) {
	if tc, ok := c.Context().(*Conn); ok {
		tc.opened = true
	}
	return nil, gnet.None
}

func (tcpHandler) OnTraffic(c gnet.Conn) gnet.Action {
	tc, ok := c.Context().(*Conn)
	if !ok {
		return gnet.Close
	}
	return tc.onTraffic(c)
}

func (tcpHandler) OnClose(c gnet.Conn, err error) gnet.Action {
	if tc, ok := c.Context().(*Conn); ok {
		tc.onClose(err, c.OutboundBuffered() == 0)
	}
	return gnet.None
}

// tcpEngine is the process's one gnet client. One for all connections, not
// one each: gnet multiplexes any number of connections on an event loop,
// and a client per connection would cost a goroutine, an epoll instance and
// an eventfd per connection (and NewClient resets gnet's global logger each
// time). It starts with the first dial and stops when the last Conn
// is closed, so an idle process runs no event loop. The stop runs in Close,
// never on an event loop, which Client.Stop waits for.
var tcpEngine = singleton.Shared[*gnet.Client]{Stop: func(c *gnet.Client) { _ = c.Stop() }}

// tcpEventLoops is how many event loops the client runs: one per P, up to
// 4. A loop is a goroutine that does all the I/O of its connections, and
// gnet spreads connections over loops by their count. More than 4 would
// only help a process whose TCP fallback is its hot path.
func tcpEventLoops() int { return min(runtime.GOMAXPROCS(0), 4) }

// acquireTCPEngine holds the gnet client, starting it if none runs; each
// connection open or being dialled holds it once.
func acquireTCPEngine() (*gnet.Client, error) {
	return tcpEngine.Acquire(func() (*gnet.Client, error) {
		cli, err := gnet.NewClient(&tcpHandler{},
			gnet.WithNumEventLoop(tcpEventLoops()),
			gnet.WithTCPNoDelay(gnet.TCPNoDelay),
			gnet.WithLogger(newTCPLogger()))
		if err != nil {
			return nil, err
		}
		if err := cli.Start(); err != nil {
			return nil, err
		}
		return cli, nil
	})
}

func releaseTCPEngine() { tcpEngine.Release() }

// tcpLogger drops gnet's debug and info messages (a line on stdout each
// time the client starts) and passes on the rest.
type tcpLogger struct{ logging.Logger }

// newTCPLogger wraps gnet's default logger, which NewClient replaces with
// the one it is given: on a restart it is already ours.
func newTCPLogger() logging.Logger {
	l := logging.GetDefaultLogger()
	if _, ok := l.(tcpLogger); ok {
		return l
	}
	return tcpLogger{l}
}

func (l tcpLogger) Debugf(string, ...any) {}
func (l tcpLogger) Infof(string, ...any)  {}
