package server

import (
	"io"
	"math"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// conn is one client connection, served by one goroutine (serve), or by
// gnet's event loops (loop.go), where nc is nil and gc set.
type conn struct {
	srv *Server
	db  *keyspace // the database SELECT picked, dbIndex
	nc  net.Conn
	gc  gnet.Conn
	rd  *reader
	out []byte // replies not yet written
	ls  loopState

	id       int64
	created  time.Time // for CLIENT KILL MAXAGE
	proto    int       // 2 or 3, set by HELLO
	authed   bool      // false until AUTH when a password is set; see authenticate
	quit     bool      // close after writing the replies (QUIT, a protocol error)
	name     string
	libName  string
	libVer   string
	commands uint64 // executed since the last flush, for Stats
	asking   bool   // ASKING: the next command may use a slot being imported
	dbIndex  int
	tx       txState    // MULTI, WATCH (multi.go)
	subs     subs       // pub/sub subscriptions (pubsub.go)
	mb       *mailbox   // set by the first subscription: all output goes through it
	selfPush []byte     // messages it published to itself, for after the reply (pubsub.go)
	trk      trackState // CLIENT TRACKING (tracking.go)
	keyBuf   [][]byte   // scratch for a request's keys

	// Blocking commands (blocking.go). blk: the block c is in, which its
	// own goroutine or loop reads; blocking publishes it to CLIENT
	// UNBLOCK. ready: the keys its command made ready for blocked
	// clients, served when it ends. served and rerun: on the stand-in
	// conn that runs a woken client's command again.
	blk      *blocker
	blocking atomic.Pointer[blocker]
	ready    []readyKey
	served   *blocker
	rerun    bool

	// CLIENT LIST (clientlist.go): what other clients may read of c.
	pub     atomic.Pointer[clientView]
	lastCmd atomic.Pointer[command]
	lastAt  atomic.Int64 // Unix ms of the last batch of commands (flushWith)
	totCmds atomic.Int64
	queued  atomic.Int32 // commands queued after MULTI

	// CLIENT REPLY (clientlist.go): replyOff, OFF; replySkipNext, SKIP
	// was the last command; mute, this command's reply is dropped.
	replyOff, replySkipNext, mute bool

	lower [32]byte // a command's name in lower case, for the table lookup
}

const (
	// flushAt: replies are written once this much has accumulated, even if
	// more requests are buffered.
	flushAt = 64 << 10
	// bigBulk: a bulk reply at least this long is written straight from
	// the stored value rather than copied into the output buffer.
	bigBulk = 64 << 10
	// keepOut: an output buffer grown beyond this is dropped after a write.
	keepOut = 1 << 20
)

func newConn(s *Server, nc net.Conn) *conn {
	c := &conn{
		srv:     s,
		db:      s.ks,
		nc:      nc,
		rd:      newReader(s.opts.MaxQueryBuffer, s.opts.MaxBulkLen),
		out:     make([]byte, 0, 16<<10),
		id:      s.nextID.Add(1),
		created: time.Now(),
		proto:   2,
	}
	if s.opts.Password == "" {
		c.authed = true
	} else {
		c.rd.setAuthed(false)
	}
	return c
}

// authenticate marks the client as authenticated, which lifts the
// reader's limits on requests from the next one on.
func (c *conn) authenticate() {
	c.authed = true
	c.rd.setAuthed(true)
}

// serve runs the connection until the client leaves, an error, or Close.
func (c *conn) serve() {
	for !c.quit {
		if c.blk != nil {
			if !c.waitBlocked() { // blocking.go
				return
			}
			continue
		}
		args, err := c.rd.next()
		if err != nil {
			c.addError(err.Error())
			c.quit = true
			break
		}
		if args == nil {
			// No complete request is buffered: write the replies of this
			// batch, then wait for more input.
			if c.flush() != nil {
				return
			}
			err := c.rd.fill(c.nc)
			if c.rd.dropped > 0 {
				c.srv.dropped.Add(c.rd.dropped)
				c.rd.dropped = 0
			}
			if err != nil && c.wasKicked(err) {
				continue // a message to write (pubsub.go)
			}
			if err != nil {
				return
			}
			continue
		}
		c.exec(args)
		if len(c.out) >= flushAt && c.flush() != nil {
			return
		}
	}
	if c.flush() == nil {
		c.linger()
	}
}

const (
	// lingerTime and lingerBytes bound how long, and how much of the
	// client's input, a connection reads and drops after its last reply.
	lingerTime  = time.Second
	lingerBytes = 4 << 20
)

// linger lets the client read the last replies (QUIT's, a protocol
// error's) before the connection closes: it shuts down the write side,
// so the client reads them and then EOF, and reads and drops what the
// client still sends until it closes, for lingerTime and lingerBytes at
// most. A socket closed with input unread sends a reset instead of FIN,
// and a client that gets the reset before it has read the replies loses
// them (ECONNRESET). An RDMA connection has no half close: it closes
// at once.
func (c *conn) linger() {
	cw, ok := c.nc.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	c.nc.SetReadDeadline(time.Now().Add(lingerTime))
	io.CopyN(io.Discard, c.nc, lingerBytes)
}

// flush writes the buffered replies.
func (c *conn) flush() error { return c.flushWith(nil) }

// flushWith writes the buffered replies and then, without copying it in,
// more: the bytes of a large bulk reply. One write (writev) on TCP.
func (c *conn) flushWith(more []byte) error {
	if c.commands > 0 {
		c.srv.commands.Add(c.commands)
		c.commands = 0
		// CLIENT LIST's idle: the clock read once per batch of requests,
		// not per command.
		c.lastAt.Store(time.Now().UnixMilli())
	}
	if c.srv.trk.pendingBcast.Load() {
		// Broadcasts go after this connection's replies (tracking.go).
		if c.mb != nil {
			c.ensureMailbox()
		}
		c.srv.trk.broadcast()
	}
	if c.mb != nil {
		return c.flushMailbox()
	}
	if len(c.out) == 0 && len(more) == 0 {
		return nil
	}
	var err error
	switch {
	case c.gc != nil && len(more) > 0:
		// gnet copies only what the socket does not take at once.
		_, err = c.gc.Writev([][]byte{c.out, more})
	case c.gc != nil:
		_, err = c.gc.Write(c.out)
	case len(more) > 0:
		bufs := net.Buffers{c.out, more}
		_, err = bufs.WriteTo(c.nc)
	default:
		_, err = c.nc.Write(c.out)
	}
	if cap(c.out) > keepOut {
		c.srv.dropped.Add(int64(cap(c.out)))
		c.out = make([]byte, 0, 16<<10)
	}
	c.out = c.out[:0]
	return err
}

// flushMailbox is flush for a connection with a mailbox (pubsub.go).
func (c *conn) flushMailbox() error {
	b := c.handOff()
	if len(b) == 0 {
		return nil
	}
	var err error
	if c.gc != nil {
		_, err = c.gc.Write(b)
	} else {
		_, err = c.nc.Write(b)
	}
	c.written()
	return err
}

// exec runs one request: it finds the command (and subcommand) in the
// table, checks its arity, whether the client must authenticate first and
// whether it may be queued in a transaction, as valkey's processCommand,
// and runs it, or queues it after MULTI.
func (c *conn) exec(args [][]byte) {
	defer c.flushSelfPush() // pubsub.go: after the reply, last
	c.commands++
	if c.replyOff || c.replySkipNext {
		c.beginMuted() // clientlist.go
		defer c.endMuted(len(c.out))
	}
	if c.trk.on {
		c.beginTracked() // tracking.go
		defer c.endTracked()
	}
	cmd, msg := c.resolve(args)
	c.noteCommand(cmd)
	switch {
	case msg != "":
	case !c.authed && cmd.flags&fNoAuth == 0:
		msg = "NOAUTH Authentication required."
	case c.proto == 2 && c.subs.subscribed() && !allowedSubscribed(cmd):
		msg = "ERR Can't execute '" + cmd.name + "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
	case !c.subs.subscribed() && isUnsubscribe(cmd):
		msg = "NOSUB '" + cmd.name + "' command executed not in subscribed mode"
	case c.tx.multi && cmd.flags&fNoMulti != 0:
		msg = msgNoMulti
	default:
		msg = c.checkBusy(cmd) // script.go
	}
	switch {
	case msg != "":
		c.reject(cmd, msg) // multi.go
	case c.tx.multi && !runsInMulti(cmd):
		c.enqueue(cmd, args)
	default:
		if c.trk.on && cmd.flags&fReadonly != 0 {
			c.remember(cmd, args) // tracking.go
		}
		c.runRouted(cmd, args) // cluster.go: cmd.run, on a cluster's node if the key's slot is its
		c.totCmds.Add(1)
	}
	if c.tx.multi {
		c.queued.Store(int32(len(c.tx.queue)))
	}
	if cmd != nil && cmd.acl&(cConnection|cPubsub|cTransaction) != 0 {
		c.publishView()
	}
	if len(c.trk.held) > 0 && !c.tx.multi {
		c.publishHeld() // tracking.go
	}
	if c.trk.on || len(c.trk.pending) > 0 {
		c.afterCommand(cmd)
	}
	if len(c.ready) > 0 {
		c.serveReady() // blocking.go
	}
}

// resolve finds the command args name, a container's subcommand by its
// second argument, and checks the arity; else it returns valkey's error
// (and the command, when the arity is wrong).
func (c *conn) resolve(args [][]byte) (*command, string) {
	cmd := c.lookup(args[0])
	if cmd == nil {
		return nil, unknownCommand(args)
	}
	if cmd.subs != nil && len(args) >= 2 {
		sub := cmd.subs[string(c.lowerName(args[1]))]
		if sub == nil {
			return nil, "ERR unknown subcommand '" + string(args[1][:min(len(args[1]), 128)]) + "'. Try " + strings.ToUpper(cmd.name) + " HELP."
		}
		cmd = sub
	}
	if cmd.arity > 0 && len(args) != cmd.arity || cmd.arity < 0 && len(args) < -cmd.arity {
		return cmd, "ERR wrong number of arguments for '" + cmd.name + "' command"
	}
	return cmd, ""
}

// lookup finds a top-level command by name, case-insensitively, without
// allocating.
func (c *conn) lookup(name []byte) *command {
	return commands[string(c.lowerName(name))]
}

// lowerName returns name in lower case, in c's scratch buffer (nil if it
// is longer than any command's).
func (c *conn) lowerName(name []byte) []byte {
	if len(name) > len(c.lower) {
		return nil
	}
	b := c.lower[:len(name)]
	for i, ch := range name {
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		b[i] = ch
	}
	return b
}

// remoteAddr and localAddr are the connection's addresses.
func (c *conn) remoteAddr() net.Addr {
	if c.gc != nil {
		return c.gc.RemoteAddr()
	}
	return c.nc.RemoteAddr()
}

func (c *conn) localAddr() net.Addr {
	if c.gc != nil {
		return c.gc.LocalAddr()
	}
	return c.nc.LocalAddr()
}

// unknownCommand is valkey's reply to an unknown command, with its first
// arguments (128 bytes at most) quoted.
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	b.Write(args[0][:min(len(args[0]), 128)])
	b.WriteString("', with args beginning with: ")
	n := 0
	for _, a := range args[1:] {
		if n >= 128 {
			break
		}
		a = a[:min(len(a), 128-n)]
		b.WriteByte('\'')
		b.Write(a)
		b.WriteString("' ")
		n += len(a) + 3
	}
	return b.String()
}

// The reply writers append RESP to c.out. Those named add... only append
// and may be called with a shard's lock held; bulk may write to the network
// and must not be.

func (c *conn) addSimple(s string) {
	c.out = append(c.out, '+')
	c.out = append(c.out, s...)
	c.out = append(c.out, '\r', '\n')
}

func (c *conn) addOK() { c.out = append(c.out, "+OK\r\n"...) }

// addError appends an error reply; msg starts with its code ("ERR ...",
// "WRONGTYPE ..."). CR and LF in msg become spaces, as in valkey.
func (c *conn) addError(msg string) {
	c.out = append(c.out, '-')
	for i := 0; i < len(msg); i++ {
		ch := msg[i]
		if ch == '\r' || ch == '\n' {
			ch = ' '
		}
		c.out = append(c.out, ch)
	}
	c.out = append(c.out, '\r', '\n')
}

func (c *conn) addInt(n int64) {
	c.out = append(c.out, ':')
	c.out = strconv.AppendInt(c.out, n, 10)
	c.out = append(c.out, '\r', '\n')
}

func (c *conn) addLen(prefix byte, n int) {
	c.out = append(c.out, prefix)
	c.out = strconv.AppendInt(c.out, int64(n), 10)
	c.out = append(c.out, '\r', '\n')
}

func (c *conn) addBulk(b []byte) {
	c.addLen('$', len(b))
	c.out = append(c.out, b...)
	c.out = append(c.out, '\r', '\n')
}

func (c *conn) addBulkString(s string) {
	c.addLen('$', len(s))
	c.out = append(c.out, s...)
	c.out = append(c.out, '\r', '\n')
}

// bulk replies with b. A large b is written to the connection directly, so
// b must not change afterwards: it is a stored string (immutable) or the
// caller's own.
func (c *conn) bulk(b []byte) {
	// EXEC holds shard locks: no write. A mailbox's output is copied.
	if len(b) < bigBulk || c.tx.running || c.mb != nil || c.mute {
		c.addBulk(b)
		return
	}
	c.addLen('$', len(b))
	if err := c.flushWith(b); err != nil {
		c.quit = true // the connection is broken: stop serving it
	}
	c.out = append(c.out, '\r', '\n')
}

// addNull is the null reply: $-1 in RESP2, _ in RESP3.
func (c *conn) addNull() {
	if c.proto == 3 {
		c.out = append(c.out, "_\r\n"...)
	} else {
		c.out = append(c.out, "$-1\r\n"...)
	}
}

// addNullArray is the null array: *-1 in RESP2, _ in RESP3.
func (c *conn) addNullArray() {
	if c.proto == 3 {
		c.out = append(c.out, "_\r\n"...)
	} else {
		c.out = append(c.out, "*-1\r\n"...)
	}
}

func (c *conn) addArray(n int) { c.addLen('*', n) }

// addMap starts a map of n pairs: %n in RESP3, an array of 2n in RESP2.
func (c *conn) addMap(n int) {
	if c.proto == 3 {
		c.addLen('%', n)
	} else {
		c.addLen('*', 2*n)
	}
}

// addSet starts a set of n members: ~n in RESP3, an array in RESP2.
func (c *conn) addSet(n int) {
	if c.proto == 3 {
		c.addLen('~', n)
	} else {
		c.addLen('*', n)
	}
}

// addDouble is a double in RESP3 and a bulk string in RESP2, formatted as
// valkey does: the shortest representation, inf, -inf, nan.
func (c *conn) addDouble(f float64) {
	var num [32]byte
	b := appendFloat(num[:0], f)
	if c.proto == 3 {
		c.out = append(c.out, ',')
		c.out = append(c.out, b...)
		c.out = append(c.out, '\r', '\n')
	} else {
		c.addBulk(b)
	}
}

// appendFloat formats f as valkey's d2string: inf, -inf, nan; an integral
// value within ±2^62 as an integer; any other the shortest digits that read
// back as f, in plain decimal unless the exponent is far from them, and
// then in exponent form without padding (1e-7, 1.5e+20), as fpconv's
// emit_digits writes them. The digits are Go's shortest; valkey's Grisu2
// gives other ones, which read back as the same double, for about one
// double in 700 (9499374071687.937 for our 9499374071687.938).
func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	case math.IsNaN(f):
		return append(b, "nan"...)
	case f == 0 && math.Signbit(f):
		return append(b, "-0"...)
	case f >= -(1<<62) && f <= 1<<62 && f == math.Trunc(f):
		return strconv.AppendInt(b, int64(f), 10)
	}
	if f < 0 {
		b = append(b, '-')
		f = -f
	}
	// The shortest digits: "d.ddde±x" gives them and the exponent of
	// the first; k is the exponent of the last, as in emit_digits.
	var sci, dbuf [32]byte
	e := strconv.AppendFloat(sci[:0], f, 'e', -1, 64)
	at := len(e) - 1
	for e[at] != 'e' {
		at--
	}
	digits := append(append(dbuf[:0], e[0]), e[min(2, at):at]...)
	first := 0
	for _, d := range e[at+2:] {
		first = first*10 + int(d-'0')
	}
	if e[at+1] == '-' {
		first = -first
	}
	nd := len(digits)
	k := first - (nd - 1)
	exp := max(first, -first)
	switch {
	case k >= 0 && exp < nd+7: // an integer, zeros after the digits
		b = append(b, digits...)
		for range k {
			b = append(b, '0')
		}
		return b
	case k < 0 && (k > -7 || exp < 4): // a plain decimal
		dot := nd + k
		if dot > 0 {
			b = append(b, digits[:dot]...)
			b = append(b, '.')
			return append(b, digits[dot:]...)
		}
		b = append(b, "0."...)
		for range -dot {
			b = append(b, '0')
		}
		return append(b, digits...)
	}
	b = append(b, digits[0])
	if nd > 1 {
		b = append(b, '.')
		b = append(b, digits[1:]...)
	}
	b = append(b, 'e')
	if first < 0 {
		b = append(b, '-')
	} else {
		b = append(b, '+')
	}
	return strconv.AppendInt(b, int64(exp), 10)
}

// addVerbatim is a verbatim text string in RESP3 (=), a bulk string in
// RESP2.
func (c *conn) addVerbatim(s string) {
	if c.proto == 3 {
		c.addLen('=', len(s)+4)
		c.out = append(c.out, "txt:"...)
		c.out = append(c.out, s...)
		c.out = append(c.out, '\r', '\n')
	} else {
		c.addBulkString(s)
	}
}
