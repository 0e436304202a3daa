package benchrun

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// takeSocket takes the socket of c, when an event loop can drive it (a TCP
// connection of the netpoll engine), out of the Go runtime's hands: a
// duplicate of it for the loop, the connection itself discarded. Left in
// the runtime's netpoller too, every reply would also wake the thread
// that waits in the runtime's epoll_wait, for nothing (no goroutine waits
// on the socket): a second wake-up per reply, on the server's core.
func takeSocket(c conn) (int, bool, error) {
	type socketConn interface {
		syscall.Conn
		Discard() error
	}
	sc, ok := c.(socketConn)
	if !ok {
		return -1, false, nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, false, nil // no socket of its own (RDMA, gnet)
	}
	fd, derr := -1, error(nil)
	if err := raw.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, false, err
	}
	if derr != nil {
		return -1, false, os.NewSyscallError("fcntl", derr)
	}
	sc.Discard() // closes the runtime's descriptor: the duplicate keeps the socket open
	// O_NONBLOCK belongs to the socket, not a descriptor: the runtime set it.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, false, os.NewSyscallError("fcntl", err)
	}
	return fd, true, nil
}

// loopsSupported says whether this system has the event loops.
const loopsSupported = true

// eventLoop drives a share of a phase's clients from one goroutine, as
// one of valkey-benchmark's threads does: an edge-triggered epoll set of
// their sockets, read and written without blocking (the Go runtime keeps
// every socket non-blocking), each client's next batch written as soon as
// its last reply is in. A batch is then one write(2) and one read(2) (two
// when the read fills the buffer), and the loop's epoll_wait serves every
// client that became ready meanwhile: no goroutine parks or wakes per
// request.
type eventLoop struct {
	epfd, wakefd int
	clients      []*loopClient
	events       []unix.EpollEvent
}

// loopClient is a client's state in its loop's phase.
type loopClient struct {
	*client
	fd       int
	k, got   int   // the batch's requests and the replies in so far
	wrote    int   // bytes of the batch written
	start    int64 // the batch's write, in ns since epoch
	lat      int64 // from start to the last read that got bytes
	canRead  bool  // an EPOLLIN edge not yet read to EAGAIN
	canWrite bool  // no write has met EAGAIN since the last EPOLLOUT edge
	finished bool
}

func newEventLoop() (*eventLoop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, os.NewSyscallError("eventfd", err)
	}
	l := &eventLoop{epfd: epfd, wakefd: wakefd}
	// The wake-up's data is -1: no client's index.
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: -1}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakefd, &ev); err != nil {
		l.close()
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	return l, nil
}

// add puts c, whose socket is fd, in the loop, which then owns fd (and
// closes it, on failure too).
func (l *eventLoop) add(c *client, fd int) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET, Fd: int32(len(l.clients))}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		unix.Close(fd)
		return os.NewSyscallError("epoll_ctl", err)
	}
	l.clients = append(l.clients, &loopClient{client: c, fd: fd, canWrite: true})
	return nil
}

// again sets c up to send again, after a redirection (a cluster's
// MOVED), the requests of its batch that were redirected, with new random
// keys and the tag of a slot its primary serves now; their latencies count
// from the batch's first write.
func (c *loopClient) again(ph *loopPhase) {
	k := c.k - c.answered
	ph.retag(c.client, k)
	c.fill(k, ph.keyspace)
	c.k, c.got, c.wrote, c.lat, c.answered = k, 0, 0, 0, 0
	c.busy.Store(int64(time.Since(epoch)) + 1)
	c.sending.Store(true)
}

// wake makes the loop's epoll_wait return, to see that its phase stopped.
func (l *eventLoop) wake() {
	var one = [8]byte{1}
	unix.Write(l.wakefd, one[:])
}

// close closes the loop and its clients' sockets.
func (l *eventLoop) close() {
	for _, c := range l.clients {
		unix.Close(c.fd)
	}
	unix.Close(l.epfd)
	unix.Close(l.wakefd)
}

// run drives the loop's clients through the phase: until every client is
// done (no more requests, or past the deadline once its batch is in), the
// phase is stopped, or a client fails, whose error it returns.
func (l *eventLoop) run(ph *loopPhase) error {
	if len(l.events) < len(l.clients)+1 {
		l.events = make([]unix.EpollEvent, len(l.clients)+1)
	}
	active := 0
	for _, c := range l.clients {
		c.finished, c.got, c.wrote = false, 0, 0
		k := ph.claim(true)
		if k == 0 {
			c.finished = true
			continue
		}
		active++
		if err := c.begin(k, ph); err != nil {
			return err
		}
	}
	for active > 0 {
		// Asleep until a socket is ready, as valkey-benchmark's loop: a
		// spin first (epoll_wait with no wait) took the CPU from the
		// server where the two share a core, and lost at -c 1.
		n, err := unix.EpollWait(l.epfd, l.events, -1)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return os.NewSyscallError("epoll_wait", err)
		}
		if ph.stopped.Load() {
			return nil
		}
		for _, ev := range l.events[:n] {
			if ev.Fd < 0 { // a wake-up
				var b [8]byte
				unix.Read(l.wakefd, b[:])
				continue
			}
			c := l.clients[ev.Fd]
			if ev.Events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.canRead = true
			}
			if ev.Events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0 {
				c.canWrite = true
			}
			if c.finished {
				continue
			}
			done, err := c.step(ph)
			for err != nil && ph.follow != nil && !ph.stopped.Load() && ph.follow(c.client, err) {
				c.again(ph)
				done, err = c.step(ph)
			}
			if err != nil {
				return err
			}
			if done {
				c.finished = true
				active--
			}
		}
	}
	return nil
}

// begin starts a batch of k requests: it writes what the socket takes.
func (c *loopClient) begin(k int, ph *loopPhase) error {
	c.prime(k, ph)
	return c.send()
}

// prime sets up a batch of k requests, to be sent.
func (c *loopClient) prime(k int, ph *loopPhase) {
	c.k, c.got, c.wrote, c.lat, c.answered = k, 0, 0, 0, 0
	if ph.retag != nil {
		ph.retag(c.client, k)
	}
	c.fill(k, ph.keyspace)
	c.start = int64(time.Since(epoch))
	c.busy.Store(c.start + 1)
	c.sending.Store(true)
}

// send writes the rest of the batch while the socket takes it.
func (c *loopClient) send() error {
	buf := c.out[:c.k*c.reqLen]
	for c.canWrite && c.wrote < len(buf) {
		n, err := unix.Write(c.fd, buf[c.wrote:min(c.wrote+writeChunk, len(buf))])
		if err == unix.EAGAIN {
			c.canWrite = false
			return nil
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			if se := c.pendingError(); se != nil {
				return se
			}
			return &os.SyscallError{Syscall: "write", Err: err}
		}
		c.wrote += n
		if c.wrote < len(buf) { // a long pipeline: its writing is progress too
			c.busy.Store(int64(time.Since(epoch)) + 1)
		}
	}
	if c.wrote == len(buf) {
		c.sending.Store(false)
	}
	return nil
}

// pendingError is client.pendingError on the loop's socket.
func (c *loopClient) pendingError() *ServerError {
	if c.stopped != nil && c.stopped.Load() {
		return nil
	}
	until := time.Now().Add(pendingWait)
	for {
		n, isErr, err := skipReply(c.in[c.r:c.w])
		switch {
		case err != nil:
			return nil
		case n > 0 && isErr:
			return &ServerError{Msg: errorText(c.in[c.r : c.r+n])}
		case n > 0 || c.w == len(c.in):
			return nil
		}
		left := time.Until(until)
		if left <= 0 {
			return nil
		}
		pfd := []unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, int(left/time.Millisecond)+1); err != nil && err != unix.EINTR {
			return nil
		}
		m, err := unix.Read(c.fd, c.in[c.w:])
		if err == unix.EAGAIN || err == unix.EINTR {
			continue
		}
		if m <= 0 {
			return nil
		}
		c.w += m
	}
}

// step moves c on after an event: the rest of its batch written, the
// replies read and counted, and the next batch begun when they are all in.
// It returns true when c has no more batches in the phase.
func (c *loopClient) step(ph *loopPhase) (bool, error) {
	for {
		if c.sending.Load() {
			if err := c.send(); err != nil {
				return false, err
			}
			if c.sending.Load() { // waiting for EPOLLOUT
				// Meanwhile take the replies that came: a server that
				// stops reading while its replies wait (the embedded
				// one: a goroutine per connection) would otherwise wait
				// for us as we wait for it, with a long pipeline.
				_, err := c.receive(ph.record)
				return false, err
			}
		}
		complete, err := c.receive(ph.record)
		if err != nil || !complete {
			return false, err
		}
		k := ph.claim(false)
		if k == 0 {
			return true, nil
		}
		c.prime(k, ph)
	}
}

// receive parses the replies buffered, reading while the socket has more,
// until the batch's k are in (true) or the socket has no more for now.
func (c *loopClient) receive(record bool) (bool, error) {
	for {
		from, moved := c.got, c.moved
		for c.got < c.k {
			n, isErr, err := skipReply(c.in[c.r:c.w])
			if err != nil {
				return false, err
			}
			if n == 0 {
				break
			}
			if isErr {
				if se := c.errorReply(n); se != nil {
					c.count(c.lat, c.got-from-(c.moved-moved), record)
					return false, c.finish(c.got, se)
				}
			}
			c.r += n
			c.got++
		}
		c.count(c.lat, c.got-from-(c.moved-moved), record)
		if c.got == c.k {
			c.busy.Store(0)
			return true, c.finish(c.k, nil)
		}
		if !c.canRead {
			return false, nil
		}
		c.makeRoom()
		n, err := unix.Read(c.fd, c.in[c.w:])
		switch {
		case err == unix.EAGAIN:
			c.canRead = false
			return false, nil
		case err == unix.EINTR:
			continue
		case err != nil:
			return false, &os.SyscallError{Syscall: "read", Err: err}
		case n == 0:
			return false, fmt.Errorf("server closed the connection: %w", io.EOF)
		}
		if c.w+n < len(c.in) {
			// Less than the room there was: the socket is drained, and
			// the next bytes bring an edge of their own.
			c.canRead = false
		}
		c.w += n
		now := int64(time.Since(epoch))
		c.lat = now - c.start
		c.busy.Store(now + 1)
	}
}
