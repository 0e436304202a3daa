package benchrun

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram bounds, in nanoseconds: 3 significant digits from 1 ns, so
// that RDMA's few-µs latencies keep them (with a lowest value of 1 µs,
// HdrHistogram's unit is 512 ns, 20 % of 2.5 µs); 60 s is the most a
// request may take before it is counted as 60 s.
const (
	histLowest  = 1
	histHighest = 60_000_000_000
	histSigFigs = 3
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(histLowest, histHighest, histSigFigs) }

// conn is what a client needs of its connection: a pool.PooledConn, or any
// net.Conn.
type conn interface {
	io.ReadWriter
	SetDeadline(time.Time) error
	SetReadDeadline(time.Time) error
	SetWriteDeadline(time.Time) error
}

// ServerError is an error reply: the run stops at the first, as
// valkey-benchmark's does.
type ServerError struct {
	Msg string // the error's text, without the leading '-'
}

func (e *ServerError) Error() string { return "error from server: " + e.Msg }

// pendingWait is how long a client whose write failed waits for an error
// reply that says why (the server's "-ERR max number of clients reached"
// before it closes).
const pendingWait = 100 * time.Millisecond

// epoch is the origin of client.busy's times (monotonic).
var epoch = time.Now()

// client sends one test's requests on one connection: pipelines of up to P
// requests written from a reused buffer, replies parsed in place from
// another. Nothing is allocated per request.
type client struct {
	conn conn

	out     []byte // P copies of the request
	shared  bool   // out is shared with the other clients: read only
	reqLen  int    // length of one request
	randOff []int  // offsets of randPlaceholder in one request

	in   []byte // reply buffer; in[r:w] is unparsed
	r, w int

	index int    // the client's place among the run's clients
	node  string // in a cluster run, its primary's address

	// start is the first write of the batch in flight: a request sent
	// again after a redirection is timed from it, as a cluster client
	// following MOVED would see it.
	batchStart time.Time
	// answered is how many of the requests of the batch that ended with
	// an error were answered: counted (done, hist) once, and not sent
	// again.
	answered int
	// follows is whether the client follows a cluster's redirections: a
	// batch that meets one is read to its end, its other replies counted,
	// and ends with the first (redirect), moved being how many there were.
	follows  bool
	redirect *ServerError
	moved    int

	rng  uint64
	hist *hdrhistogram.Histogram
	done atomic.Uint64 // requests completed, read by the progress display
	// busy is, while a batch is in flight, 1 + the time of its last
	// progress (its write, or a read that got bytes) in nanoseconds since
	// epoch; 0 between batches. The watchdog reads it to find a server
	// that stopped replying.
	busy atomic.Int64
	// sending is whether the batch is still being written.
	sending atomic.Bool
	// stopped, when set, says the phase is being stopped: the client's
	// errors are then the stop's doing.
	stopped *atomic.Bool
}

// writeChunk is the most a client writes at once: the watchdog counts the
// writing of a long pipeline as progress a chunk at a time.
const writeChunk = 1 << 20

// initialIn is the size of a client's reply buffer; it grows to hold a
// larger reply.
const initialIn = 64 << 10

func newClient(conn conn, seed uint64) *client {
	return &client{conn: conn, in: make([]byte, initialIn), rng: seed | 1, hist: newHist()}
}

// prepare sets the request the client sends, pipeline copies at a time:
// shared, when not nil, holds them, and is not written to (req has no key
// to randomise, or there is no keyspace); else the client makes its own.
func (c *client) prepare(req []byte, pipeline int, shared []byte) {
	c.reqLen = len(req)
	if shared != nil {
		c.out, c.shared, c.randOff = shared, true, nil
	} else {
		if c.shared {
			c.out, c.shared = nil, false
		}
		c.randOff = placeholders(req)
		c.out = c.out[:0]
		for range pipeline {
			c.out = append(c.out, req...)
		}
	}
	c.hist.Reset()
	c.moved, c.redirect = 0, nil // of a batch a stop cut short
	c.done.Store(0)
	c.busy.Store(0)
}

// next returns the next pseudo-random number (xorshift64*).
func (c *client) next() uint64 {
	c.rng ^= c.rng >> 12
	c.rng ^= c.rng << 25
	c.rng ^= c.rng >> 27
	return c.rng * 2685821657736338717
}

// putNum writes v into b as zero-padded decimal digits.
func putNum(b []byte, v uint64) {
	for i := len(b) - 1; i >= 0; i-- {
		b[i] = byte('0' + v%10)
		v /= 10
	}
}

// batch sends k requests (k ≤ the pipeline) and reads their k replies,
// recording each reply's latency from the write when record is set. With a
// keyspace, each placeholder gets a random number below it. An error reply
// ends it with a *ServerError.
func (c *client) batch(k int, keyspace uint64, record bool) error {
	c.fill(k, keyspace)
	c.batchStart = time.Now()
	return c.transmit(k, record)
}

// resend sends again the k requests of the batch that a cluster
// redirected (MOVED), with new random keys; their latencies count from the
// batch's first write.
func (c *client) resend(k int, keyspace uint64, record bool) error {
	c.fill(k, keyspace)
	return c.transmit(k, record)
}

// transmit writes k requests of the batch begun at c.batchStart and
// reads their replies.
func (c *client) transmit(k int, record bool) error {
	buf := c.out[:k*c.reqLen]
	start := c.batchStart
	since := int64(start.Sub(epoch)) + 1
	c.answered = 0
	c.busy.Store(int64(time.Since(epoch)) + 1)
	c.sending.Store(true)
	if len(buf) >= concurrentSend {
		return c.sendWhileReading(buf, k, start, since, record)
	}
	if err := c.send(buf); err != nil {
		if se := c.pendingError(); se != nil {
			return se
		}
		return err
	}
	return c.receive(k, start, since, record)
}

// concurrentSend is the length of a pipeline from which a client reads its
// replies while it is still writing it, from a goroutine of its own.
// Written whole before the first read, a pipeline longer than the sockets'
// buffers stalls against a server that stops reading while its replies
// wait to be read (the embedded server does, a goroutine per connection).
const concurrentSend = 256 << 10

// send writes buf, a chunk at a time.
func (c *client) send(buf []byte) error {
	for off := 0; off < len(buf); off += writeChunk {
		if off > 0 { // a long pipeline: its writing is progress too
			c.busy.Store(int64(time.Since(epoch)) + 1)
		}
		if _, err := c.conn.Write(buf[off:min(off+writeChunk, len(buf))]); err != nil {
			return err
		}
	}
	c.sending.Store(false)
	return nil
}

// sendWhileReading writes buf from another goroutine while it reads the k
// replies. A failed read ends the write too (its deadline set in the
// past); the read's error, or a server's error reply, is the batch's.
func (c *client) sendWhileReading(buf []byte, k int, start time.Time, since int64, record bool) error {
	werr := make(chan error, 1)
	go func() { werr <- c.send(buf) }()
	if err := c.receive(k, start, since, record); err != nil {
		c.conn.SetWriteDeadline(time.Unix(1, 0))
		<-werr
		return err
	}
	return <-werr // nil: every reply is in, so every request went out
}

// receive reads and counts the replies of a batch of k requests written
// at start.
func (c *client) receive(k int, start time.Time, since int64, record bool) error {
	var lat int64
	for got := 0; ; {
		// The replies a read completed share its latency: one record with
		// their count, not one a reply (a pipeline's replies mostly come
		// in one read).
		from, moved := got, c.moved
		for got < k {
			n, isErr, err := skipReply(c.in[c.r:c.w])
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
			if isErr {
				if se := c.errorReply(n); se != nil {
					c.count(lat, got-from-(c.moved-moved), record)
					return c.finish(got, se)
				}
			}
			c.r += n
			got++
		}
		c.count(lat, got-from-(c.moved-moved), record)
		if got == k {
			c.busy.Store(0)
			return c.finish(k, nil)
		}
		c.makeRoom()
		n, err := c.conn.Read(c.in[c.w:])
		c.w += n
		lat = int64(time.Since(start))
		if n > 0 {
			c.busy.Store(since + lat)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("server closed the connection: %w", err)
			}
			return err
		}
	}
}

// errorReply deals with the error reply of n bytes at c.in[c.r:]: a
// redirection, when the client follows them, is noted (the batch's other
// replies are still read, and the batch ends with it); any other ends the
// batch, and is returned.
func (c *client) errorReply(n int) *ServerError {
	msg := errorText(c.in[c.r : c.r+n])
	if c.follows && redirectedMsg(msg) {
		if c.redirect == nil {
			c.redirect = &ServerError{Msg: msg}
		}
		c.moved++
		return nil
	}
	return &ServerError{Msg: msg}
}

// finish ends the batch after got replies, with se or, when se is nil,
// with the batch's first redirection, if any: the replies that were
// answers are counted done (and c.answered), the redirected are not.
func (c *client) finish(got int, se *ServerError) error {
	if se == nil {
		se = c.redirect
	}
	c.answered = got - c.moved
	c.done.Add(uint64(c.answered))
	c.moved, c.redirect = 0, nil
	if se == nil {
		return nil
	}
	return se
}

// count records n replies of latency lat, when record is set.
func (c *client) count(lat int64, n int, record bool) {
	if record && n > 0 {
		c.hist.RecordValues(min(max(lat, histLowest), histHighest), int64(n))
	}
}

// fill gives each random key of the next k requests a random number below
// keyspace; with no keyspace they keep their placeholder.
func (c *client) fill(k int, keyspace uint64) {
	if keyspace == 0 {
		return
	}
	buf := c.out[:k*c.reqLen]
	for i := range k {
		base := i * c.reqLen
		for _, o := range c.randOff {
			putNum(buf[base+o:base+o+len(randPlaceholder)], c.next()%keyspace)
		}
	}
}

// pendingError reads, for a little while, what the server sent before the
// connection failed, and returns its first reply if that is an error.
func (c *client) pendingError() *ServerError {
	if c.stopped != nil && c.stopped.Load() {
		return nil
	}
	if c.conn.SetReadDeadline(time.Now().Add(pendingWait)) != nil {
		return nil
	}
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
		m, err := c.conn.Read(c.in[c.w:])
		c.w += m
		if m == 0 && err != nil {
			return nil
		}
	}
}

// errorText is the message of an error reply: a simple error's line
// without its '-', or a bulk error's string, cut to 200 bytes.
func errorText(reply []byte) string {
	if len(reply) > 0 && reply[0] == '!' {
		if i := lineEnd(reply); i >= 0 {
			reply = reply[i+2:]
		}
	} else if len(reply) > 0 {
		reply = reply[1:]
	}
	return trimCRLF(reply)
}

func trimCRLF(b []byte) string {
	if len(b) > 200 {
		b = b[:200]
	}
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return string(b)
}
