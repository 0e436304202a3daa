package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// reader splits a connection's input into requests. It reads into one
// buffer and parses requests in place: the arguments it returns are slices
// of that buffer, valid until the next call to fill. A request is either a
// multibulk array of bulk strings ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"), as
// clients send, or an inline command ("PING\r\n"), as typed by a person or
// sent by valkey-benchmark's PING_INLINE.
//
// A request that does not fit grows the buffer by doubling, up to
// maxBuffer; so a connection holds at most about twice what its client sent,
// whatever lengths it announces. An argument of bigArg bytes or more that
// is not all in the buffer yet is read into an allocation of its own, of
// its size, as valkey does: the buffer does not grow for it, and a command
// may keep it as the value it stores (take).
type reader struct {
	buf  []byte
	r, w int // buf[r:w]: read from the connection, not yet consumed

	maxBuffer int // the input buffer's limit (Options.MaxQueryBuffer)
	maxBulk   int // the longest argument (Options.MaxBulkLen)

	// The limits in force: maxArgs and maxBulk, or lower ones while the
	// client has not authenticated (see setAuthed). A request over them is
	// checked against the absolute limits only then, to pick the error.
	argsLimit int
	bulkLimit int

	// A multibulk request being parsed: nargs arguments (-1: none started),
	// of which the ones parsed so far are buf[offs[2i]:offs[2i+1]];
	// parsing resumes at pos.
	nargs int
	pos   int
	offs  []int
	// scan is where the search for an inline request's newline resumes.
	scan int

	// args is reused for each request. Beyond its length it may hold
	// slices of an earlier request, into the buffer: fill clears them when
	// it replaces the buffer, lest they keep the old one.
	args [][]byte

	// big is the allocation a big argument is being read into, bigHave
	// bytes of it so far (its CRLF ends it). bigs are the big arguments of
	// the request being parsed, whose offs are (-1-index, length); once it
	// is returned, its own (taken holds them until the next request).
	big     []byte
	bigHave int
	bigs    [][]byte
	taken   [][]byte

	// dropped counts the bytes of buffers given up (grown ones, big
	// arguments no command kept), for the server to hand back; its owner
	// resets it.
	dropped int64
}

const (
	initialBuffer = 16 << 10
	minRead       = 4 << 10
	// keepBuffer: an input buffer grown beyond this for a large request is
	// dropped once empty, so an idle connection holds little.
	keepBuffer = 4 << 20
	// keepArgs: the argument tables (args, offs) grown beyond this many
	// arguments for a large request are dropped likewise.
	keepArgs = 4 << 10
	// bigArg: an argument this long or longer gets an allocation of its
	// own (valkey's PROTO_MBULK_BIG_ARG).
	bigArg = 32 << 10
	// inlineMax bounds an inline request and the header line of a
	// multibulk request or bulk string, as in valkey (PROTO_INLINE_MAX_SIZE).
	inlineMax = 64 << 10
	// maxArgs bounds the number of arguments of one request. Valkey's
	// bound is 2^31-1, which leaves its query buffer limit as the real
	// one; here each argument takes 16 bytes of offsets beside its 6 or
	// more of input, and a million of them is more than any client of a
	// test and benchmark server sends.
	maxArgs = 1 << 20
	// Before it authenticates (when a password is set), a client may send
	// at most unauthArgs arguments in a multibulk request, each at most
	// unauthBulk bytes long, as in valkey: else an unauthenticated client
	// could make the connection buffer MaxQueryBuffer.
	unauthArgs = 10
	unauthBulk = 16 << 10
)

// protocolError is a request that cannot be parsed. The connection replies
// with it and closes, as valkey does.
type protocolError string

func (e protocolError) Error() string { return "ERR Protocol error: " + string(e) }

// errQueryBufferFull: the request does not fit in Options.MaxQueryBuffer;
// the connection closes without a reply, as valkey's does.
var errQueryBufferFull = errors.New("server: query buffer limit reached")

// newReader returns a reader for an authenticated client; see setAuthed.
// Its buffer is taken at the first fill.
func newReader(maxBuffer, maxBulk int) *reader {
	p := &reader{maxBuffer: maxBuffer, maxBulk: maxBulk, nargs: -1}
	p.setAuthed(true)
	return p
}

// bufPool holds the buffers of initialBuffer bytes that readers and
// connections' output take while they have bytes to hold, and give back
// once they have none (release), so that an idle connection on the event
// loops holds no buffer. A pointer to an array: no allocation to Put it.
var bufPool = sync.Pool{New: func() any { return new([initialBuffer]byte) }}

// getBuf returns a buffer of initialBuffer bytes, not necessarily zeroed.
func getBuf() []byte { return bufPool.Get().(*[initialBuffer]byte)[:] }

// putBuf gives b back to bufPool if it is one of its buffers' size, and
// returns the bytes dropped otherwise, for the server to hand back.
func putBuf(b []byte) int64 {
	if cap(b) != initialBuffer {
		return int64(cap(b))
	}
	bufPool.Put((*[initialBuffer]byte)(b[:initialBuffer]))
	return 0
}

// idle reports whether the reader holds no input: no byte of a request,
// no big argument being read.
func (p *reader) idle() bool { return p.r == p.w && p.big == nil && p.nargs < 0 }

// release gives the buffer back when the reader is idle (see idle), with
// the argument tables if they grew for a large request; the next fill
// takes another. It reports whether the reader is idle.
func (p *reader) release() bool {
	if !p.idle() {
		return false
	}
	if p.buf != nil {
		p.dropped += putBuf(p.buf)
		p.buf = nil
		p.r, p.w, p.scan = 0, 0, 0
		clear(p.args[:cap(p.args)])
	}
	if cap(p.args) > keepArgs {
		p.args = nil
	}
	if cap(p.offs) > 2*keepArgs {
		p.offs = nil
	}
	return true
}

// setAuthed sets the limits for a client that has authenticated (or need
// not) or has not. It takes effect from the next request.
func (p *reader) setAuthed(authed bool) {
	if authed {
		p.argsLimit, p.bulkLimit = maxArgs, p.maxBulk
	} else {
		p.argsLimit, p.bulkLimit = unauthArgs, min(unauthBulk, p.maxBulk)
	}
}

// next returns the next complete request in the buffer, or nil if more
// input is needed. Empty requests ("*0\r\n", a blank line) are skipped.
func (p *reader) next() ([][]byte, error) {
	if p.taken != nil {
		for _, b := range p.taken {
			p.dropped += int64(cap(b))
		}
		p.taken = nil
		clear(p.args[:cap(p.args)])
	}
	for p.r < p.w {
		var args [][]byte
		var ok bool
		var err error
		if p.nargs < 0 && p.buf[p.r] != '*' {
			args, ok, err = p.inline()
		} else {
			args, ok, err = p.multibulk()
		}
		if err != nil || !ok {
			return nil, err
		}
		if len(args) > 0 {
			return args, nil
		}
	}
	return nil, nil
}

// multibulk parses "*<n>\r\n" then n times "$<len>\r\n<bytes>\r\n". ok is
// false when the request is not complete yet.
func (p *reader) multibulk() (args [][]byte, ok bool, err error) {
	if p.nargs < 0 {
		n, next, err := p.header(p.r+1, "mbulk count")
		if err != nil || next < 0 {
			return nil, false, err
		}
		if n > int64(p.argsLimit) {
			if n > maxArgs {
				return nil, false, protocolError("invalid multibulk length")
			}
			return nil, false, protocolError("unauthenticated multibulk length")
		}
		p.r, p.pos = next, next
		if n <= 0 {
			return nil, true, nil // an empty request, skipped
		}
		p.nargs = int(n)
		p.offs = p.offs[:0]
	}
	for len(p.offs) < 2*p.nargs {
		if p.big != nil {
			if p.bigHave < len(p.big) {
				return nil, false, nil
			}
			n := len(p.big) - 2
			if p.big[n] != '\r' || p.big[n+1] != '\n' {
				return nil, false, protocolError("bulk string not terminated by CRLF")
			}
			p.offs = append(p.offs, -1-len(p.bigs), n)
			p.bigs = append(p.bigs, p.big[:n:n])
			p.big = nil
			continue
		}
		if p.pos >= p.w {
			return nil, false, nil
		}
		if c := p.buf[p.pos]; c != '$' {
			return nil, false, protocolError(fmt.Sprintf("expected '$', got '%s'", printable(c)))
		}
		n, next, err := p.header(p.pos+1, "bulk count")
		if err != nil || next < 0 {
			return nil, false, err
		}
		if n < 0 || n > int64(p.bulkLimit) {
			if n < 0 || n > int64(p.maxBulk) {
				return nil, false, protocolError("invalid bulk length")
			}
			return nil, false, protocolError("unauthenticated bulk length")
		}
		end := next + int(n)
		if end+2 > p.w {
			if n >= bigArg && next-p.r+int(n)+2+p.bigBytes() <= p.maxBuffer {
				// The bytes of it already read move to its allocation.
				p.big = make([]byte, n+2)
				p.bigHave = copy(p.big, p.buf[next:p.w])
				p.w, p.pos = next, next
				continue
			}
			return nil, false, nil
		}
		if p.buf[end] != '\r' || p.buf[end+1] != '\n' {
			return nil, false, protocolError("bulk string not terminated by CRLF")
		}
		p.offs = append(p.offs, next, end)
		p.pos = end + 2
	}
	args = p.args[:0]
	for i := 0; i < len(p.offs); i += 2 {
		if p.offs[i] < 0 {
			args = append(args, p.bigs[-1-p.offs[i]])
			continue
		}
		args = append(args, p.buf[p.offs[i]:p.offs[i+1]:p.offs[i+1]])
	}
	p.args = args
	p.r, p.nargs = p.pos, -1
	if p.bigs != nil {
		p.taken, p.bigs = p.bigs, nil
	}
	return args, true, nil
}

// bigBytes is the length of the big arguments of the request being
// parsed.
func (p *reader) bigBytes() int {
	n := 0
	for _, b := range p.bigs {
		n += len(b)
	}
	return n
}

// take returns arg, an argument of the last request, for the caller to
// keep: arg itself if it is a big argument (the reader never reuses it),
// else a copy.
func (p *reader) take(arg []byte) []byte {
	for i, b := range p.taken {
		if len(b) == len(arg) && len(b) > 0 && &b[0] == &arg[0] {
			p.taken[i] = nil
			return arg
		}
	}
	return append(make([]byte, 0, len(arg)), arg...)
}

// header parses the number of a header line that starts at from and ends
// in CRLF. next is the index after the line, or -1 if the line is not
// complete yet.
func (p *reader) header(from int, what string) (n int64, next int, err error) {
	i := bytes.IndexByte(p.buf[from:p.w], '\r')
	if i < 0 || from+i+1 >= p.w {
		if p.w-from > inlineMax {
			return 0, -1, protocolError("too big " + what + " string")
		}
		return 0, -1, nil
	}
	n, ok := parseInt(p.buf[from : from+i])
	if !ok || p.buf[from+i+1] != '\n' {
		if what == "bulk count" {
			return 0, -1, protocolError("invalid bulk length")
		}
		return 0, -1, protocolError("invalid multibulk length")
	}
	return n, from + i + 2, nil
}

// inline parses one line of space-separated arguments, with valkey's
// quoting rules ("a b" and 'a b' with escapes, as valkey-cli prints them).
// ok is false when the line is not complete yet.
func (p *reader) inline() (args [][]byte, ok bool, err error) {
	from := max(p.scan, p.r)
	i := bytes.IndexByte(p.buf[from:p.w], '\n')
	if i < 0 {
		if p.w-p.r > inlineMax {
			return nil, false, protocolError("too big inline request")
		}
		p.scan = p.w
		return nil, false, nil
	}
	end := from + i
	line := p.buf[p.r:end]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, ok = splitArgs(line, p.args[:0])
	if !ok {
		return nil, false, protocolError("unbalanced quotes in request")
	}
	p.args = args
	p.r, p.scan = end+1, 0
	return args, true, nil
}

// fill reads more input from src, first making room: it moves unconsumed
// bytes to the front of the buffer, and grows the buffer when a request
// fills it. When nothing is buffered, it drops a buffer and argument tables
// grown for an earlier request.
func (p *reader) fill(src io.Reader) error {
	if p.big != nil && p.bigHave < len(p.big) {
		n, err := readSome(src, p.big[p.bigHave:])
		p.bigHave += n
		return err
	}
	if p.buf == nil {
		p.buf = getBuf()
	}
	if p.r == p.w {
		if len(p.buf) > keepBuffer {
			p.compact() // moves no bytes, only positions
			p.dropped += int64(len(p.buf))
			p.buf = make([]byte, initialBuffer)
			clear(p.args[:cap(p.args)])
		}
		if cap(p.args) > keepArgs {
			p.args = nil
		}
		// offs is empty here: a request being parsed has no argument in
		// the buffer yet.
		if cap(p.offs) > 2*keepArgs {
			p.offs = nil
		}
	}
	if len(p.buf)-p.w < minRead {
		p.compact()
	}
	if len(p.buf)-p.w < minRead && len(p.buf) < p.maxBuffer {
		grown := make([]byte, min(2*len(p.buf), p.maxBuffer))
		copy(grown, p.buf[:p.w])
		p.buf = grown
		clear(p.args[:cap(p.args)])
	}
	if p.w == len(p.buf) {
		return errQueryBufferFull
	}
	n, err := readSome(src, p.buf[p.w:])
	p.w += n
	return err
}

// readSome reads into b: an error only if it read nothing.
func readSome(src io.Reader, b []byte) (int, error) {
	n, err := src.Read(b)
	if n > 0 {
		return n, nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return 0, err
}

// compact moves buf[r:w] to the front of the buffer, with every position
// that points into it.
func (p *reader) compact() {
	if p.r == 0 {
		return
	}
	d := p.r
	copy(p.buf, p.buf[d:p.w])
	p.w -= d
	p.r = 0
	if p.nargs >= 0 {
		p.pos -= d
		for i := 0; i < len(p.offs); i += 2 {
			if p.offs[i] >= 0 { // not a big argument's
				p.offs[i] -= d
				p.offs[i+1] -= d
			}
		}
	}
	if p.scan > 0 {
		p.scan = max(p.scan-d, 0)
	}
}

// parseInt parses a decimal integer as valkey's string2ll does: an optional
// '-', no '+', no leading zeros, no spaces, within int64.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	if len(b) == 1 && b[0] == '0' {
		return 0, true
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
		if len(b) == 0 {
			return 0, false
		}
	}
	if b[0] < '1' || b[0] > '9' {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

// splitArgs splits an inline request line into arguments as valkey's
// sdssplitargs does, appending them to args. Quoted arguments are unescaped
// in place (never longer than the quoted text), so no memory is allocated.
// It reports false on unbalanced quotes.
func splitArgs(line []byte, args [][]byte) ([][]byte, bool) {
	i, w := 0, 0 // read and write positions in line
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			return args, true
		}
		start := w
		var quote byte // '"' or '\'' inside quotes
		closed := false
	token:
		for i < len(line) {
			c := line[i]
			switch {
			case quote == '"' && c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
				c = unhex(line[i+2])<<4 | unhex(line[i+3])
				i += 3
			case quote == '"' && c == '\\' && i+1 < len(line):
				i++
				switch c = line[i]; c {
				case 'n':
					c = '\n'
				case 'r':
					c = '\r'
				case 't':
					c = '\t'
				case 'b':
					c = '\b'
				case 'a':
					c = '\a'
				}
			case quote == '\'' && c == '\\' && i+1 < len(line) && line[i+1] == '\'':
				c = '\''
				i++
			case quote != 0 && c == quote:
				// A closing quote must end the argument.
				if i+1 < len(line) && !isSpace(line[i+1]) {
					return args, false
				}
				i++
				closed = true
				break token
			case quote == 0 && isSpace(c):
				break token
			case quote == 0 && (c == '"' || c == '\''):
				quote = c
				i++
				continue
			}
			line[w] = c
			w++
			i++
		}
		if quote != 0 && !closed {
			return args, false
		}
		args = append(args, line[start:w:w])
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

func printable(c byte) string {
	if c < ' ' || c > '~' {
		return fmt.Sprintf("\\x%02x", c)
	}
	return string(c)
}
