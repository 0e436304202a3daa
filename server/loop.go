package server

import (
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/panjf2000/gnet/v2/pkg/logging"
)

// The event-loop engine (TCPGnet): a TCP connection accepted by Serve is
// handed to gnet (Client.EnrollContext duplicates its descriptor into an
// event loop and closes the Go one), and its requests are served on that
// loop, in OnTraffic, with no goroutine of its own. Each wake-up of a
// connection reads what the socket holds into the loop's buffer; OnTraffic
// copies it into the connection's reader, runs every complete request,
// appends the replies and writes them with one write. The reader and the
// output take a buffer from bufPool for the call and give it back when no
// partial request is left, so an idle connection holds no buffer.

// loopState is what the event loop keeps of a connection beside conn's
// fields. Only the connection's loop touches it, but for opened, which
// Serve's goroutine reads after the enrolment.
type loopState struct {
	in        sliceReader // the bytes of the current OnTraffic call
	opened    atomic.Bool // OnOpen ran: OnClose will run too
	busy      bool        // inside OnTraffic
	closed    bool        // OnClose ran
	wakeArmed bool        // a timer will wake the connection (pause)
	// After the last reply (QUIT, a protocol error): the input is read and
	// dropped until the client closes, lingerBytes of it at most, until
	// lingerEnd (see linger). shut: the write side is shut down.
	lingering bool
	shut      bool
	lingered  int
	lingerEnd time.Time
}

// sliceReader reads from a slice; no allocation per OnTraffic.
type sliceReader struct{ b []byte }

func (r *sliceReader) Read(p []byte) (int, error) {
	n := copy(p, r.b)
	r.b = r.b[n:]
	return n, nil
}

const (
	// maxPending: once this much output waits in gnet's buffer for a
	// client that does not read, its requests wait too (as the kernel's
	// window holds back a goroutine's write), until a timer finds it
	// below; the input meanwhile fills the reader, up to MaxQueryBuffer.
	maxPending = 4 << 20
	pauseCheck = time.Millisecond
)

// loopEngine is a Server's gnet client, started by the first connection
// served on it and stopped by Close.
type loopEngine struct {
	mu  sync.Mutex
	cli *gnet.Client
	err error // the client could not start: connections get goroutines
}

// client returns the started gnet client, or nil if it cannot start.
func (e *loopEngine) client(s *Server) *gnet.Client {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cli == nil && e.err == nil {
		cli, err := gnet.NewClient(&loopHandler{srv: s},
			gnet.WithNumEventLoop(runtime.GOMAXPROCS(0)),
			gnet.WithLogger(quietLogger{gnetLogger}))
		if err == nil {
			err = cli.Start()
		}
		if err != nil {
			e.err = err
			return nil
		}
		e.cli = cli
	}
	return e.cli
}

// stop stops the client, closing every connection on it; OnClose runs for
// each before it returns.
func (e *loopEngine) stop() {
	e.mu.Lock()
	cli := e.cli
	e.cli, e.err = nil, ErrServerClosed
	e.mu.Unlock()
	if cli != nil {
		_ = cli.Stop()
	}
}

// wake has gc's event loop call OnTraffic for it, unless the client has
// stopped: gnet's Wake writes to the loop's eventfd, which a stopped client
// has closed (and the descriptor may be another file's by then).
func (e *loopEngine) wake(gc gnet.Conn) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cli != nil {
		_ = gc.Wake(nil)
	}
}

// close closes gc from any goroutine, unless the client has stopped (and
// closed it already): as wake.
func (e *loopEngine) close(gc gnet.Conn) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cli != nil {
		_ = gc.Close()
	}
}

// loopable reports whether nc can go to the event loops: a TCP or Unix
// socket's descriptor (not an RDMA connection, nor a wrapper).
func loopable(nc net.Conn) bool {
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
		_, ok := nc.(syscall.Conn)
		return ok
	}
	return false
}

// enroll hands c, accepted as nc and counted in s.conns and s.wg, to
// cli's event loops; from then on OnClose ends it.
func (s *Server) enroll(cli *gnet.Client, c *conn, nc net.Conn) {
	// EnrollContext closes nc, whatever happens.
	if _, err := cli.EnrollContext(nc, c); err != nil || !c.ls.opened.Load() {
		// Not registered with a loop (out of descriptors, say): OnClose
		// will not run.
		s.forget(c)
	}
}

// forget removes a connection that has ended from the server.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// loopHandler is the Server's gnet event handler; a connection's gnet
// context is its *conn.
type loopHandler struct {
	gnet.BuiltinEventEngine
	srv *Server
}

func (h *loopHandler) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	c, ok := gc.Context().(*conn)
	if !ok {
		return nil, gnet.Close
	}
	c.gc = gc
	c.ls.opened.Store(true)
	return nil, gnet.None
}

func (h *loopHandler) OnTraffic(gc gnet.Conn) gnet.Action {
	c, ok := gc.Context().(*conn)
	if !ok {
		return gnet.Close
	}
	data, _ := gc.Next(-1) // all of it: gnet buffers nothing for us
	if c.ls.lingering {
		return c.lingerLoop(len(data))
	}
	return c.traffic(data)
}

func (h *loopHandler) OnClose(gc gnet.Conn, _ error) gnet.Action {
	c, ok := gc.Context().(*conn)
	if !ok || c.ls.closed {
		return gnet.None
	}
	c.ls.closed = true
	if !c.ls.busy {
		c.releaseAll()
	}
	h.srv.forget(c)
	return gnet.None
}

// traffic serves the bytes that arrived (none when a timer woke the
// connection), on its event loop.
func (c *conn) traffic(data []byte) gnet.Action {
	if len(data) == 0 {
		c.ls.wakeArmed = false
	}
	c.ls.busy = true
	c.ls.in.b = data
	if c.out == nil {
		c.out = getBuf()[:0]
	}
	full := false
	for {
		if len(c.ls.in.b) > 0 {
			if err := c.rd.fill(&c.ls.in); err != nil {
				// The query buffer limit: close without a reply, as valkey.
				full = true
				break
			}
		}
		c.runBuffered()
		if c.quit || len(c.ls.in.b) == 0 {
			break
		}
	}
	if !c.ls.closed && c.flush() != nil {
		c.quit = true
	}
	c.ls.busy = false
	c.ls.in.b = nil
	if c.rd.dropped > 0 {
		c.srv.dropped.Add(c.rd.dropped)
		c.rd.dropped = 0
	}
	if c.ls.closed {
		c.releaseAll()
		return gnet.None
	}
	if full {
		return gnet.Close // without a reply, as valkey
	}
	c.release()
	if c.quit {
		c.ls.lingering, c.ls.lingerEnd = true, time.Now().Add(lingerTime)
		gc, e := c.gc, &c.srv.loop
		time.AfterFunc(lingerTime, func() { e.wake(gc) })
		return c.lingerLoop(0)
	}
	return gnet.None
}

// lingerLoop is linger on the event loops, for each OnTraffic once the
// last reply is written: it drops the n bytes that arrived, shuts the
// write side down once gnet has written all it holds, and closes once the
// client has sent too much or lingerTime has passed. The client's close
// ends it sooner (OnClose).
func (c *conn) lingerLoop(n int) gnet.Action {
	c.ls.wakeArmed = false
	c.ls.lingered += n
	if c.ls.lingered > lingerBytes || !time.Now().Before(c.ls.lingerEnd) {
		return gnet.Close
	}
	if !c.ls.shut {
		if c.gc.OutboundBuffered() > 0 {
			c.pause() // look again once gnet has written more
			return gnet.None
		}
		c.ls.shut = true
		if err := shutdownWrite(c.gc.Fd()); err != nil {
			return gnet.Close
		}
	}
	return gnet.None
}

// runBuffered runs the complete requests in the reader, unless output
// is pending beyond maxPending: then it arms a timer to come back.
func (c *conn) runBuffered() {
	for !c.quit {
		if c.blk != nil {
			// Blocked (blocking.go): the input waits in the reader.
			if !c.blockDone() {
				return
			}
			c.unblocked()
		}
		if c.gc.OutboundBuffered() > maxPending {
			c.pause()
			return
		}
		args, err := c.rd.next()
		if err != nil {
			c.addError(err.Error())
			c.quit = true
			return
		}
		if args == nil {
			return
		}
		c.exec(args)
		if len(c.out) >= flushAt && c.flush() != nil {
			c.quit = true
		}
	}
}

// pause arms a timer that wakes the connection (an OnTraffic without
// data) to look at its output again.
func (c *conn) pause() {
	if c.ls.wakeArmed {
		return
	}
	c.ls.wakeArmed = true
	gc, e := c.gc, &c.srv.loop
	time.AfterFunc(pauseCheck, func() { e.wake(gc) })
}

// release gives the buffers back at the end of an OnTraffic call, unless
// a partial request holds the reader's.
func (c *conn) release() {
	if c.out != nil && len(c.out) == 0 {
		c.srv.dropped.Add(putBuf(c.out))
		c.out = nil
	}
	c.rd.release()
	if c.rd.dropped > 0 {
		c.srv.dropped.Add(c.rd.dropped)
		c.rd.dropped = 0
	}
}

// releaseAll gives every buffer back, and drops the watches, once the
// connection has closed.
func (c *conn) releaseAll() {
	c.endBlock()
	c.endTx()
	c.endPubsub()
	c.endTracking()
	if c.out != nil {
		c.srv.dropped.Add(putBuf(c.out))
		c.out = nil
	}
	rd := c.rd
	if rd.buf != nil {
		c.srv.dropped.Add(putBuf(rd.buf))
	}
	c.srv.dropped.Add(int64(cap(rd.big)))
	*rd = reader{}
}

// gnetLogger is gnet's own default logger, as it was before any client
// replaced it (gnet's logger is global, and NewClient sets it).
var gnetLogger = logging.GetDefaultLogger()

// quietLogger drops gnet's debug and info messages (a line each time a
// client starts) and passes on the rest.
type quietLogger struct{ logging.Logger }

func (quietLogger) Debugf(string, ...any) {}
func (quietLogger) Infof(string, ...any)  {}
