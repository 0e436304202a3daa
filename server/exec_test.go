package server

import (
	"net"
	"sort"
	"testing"
)

// discardConn is a net.Conn that accepts every write.
type discardConn struct{ net.Conn }

func (discardConn) Write(p []byte) (int, error) { return len(p), nil }
func (discardConn) LocalAddr() net.Addr         { return &net.TCPAddr{} }
func (discardConn) RemoteAddr() net.Addr        { return &net.TCPAddr{} }

// FuzzExec runs commands with arbitrary arguments against one keyspace:
// no command may panic, and each request gets exactly one reply.
func FuzzExec(f *testing.F) {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		f.Add(n, "k", "1", "-1", "withscores", uint8(i))
	}
	f.Add("set", "k", "v", "ex", "10", uint8(4))
	f.Add("zadd", "k", "nx", "1", "m", uint8(4))
	f.Add("xadd", "s", "maxlen", "~", "1", uint8(4))
	srv := New(nil)
	c := newConn(srv, discardConn{})
	f.Fuzz(func(t *testing.T, name, a1, a2, a3, a4 string, n uint8) {
		all := [][]byte{[]byte(name), []byte(a1), []byte(a2), []byte(a3), []byte(a4)}
		args := all[:1+int(n)%len(all)]
		c.out = c.out[:0]
		c.quit = false
		c.exec(args)
		if c.blk != nil {
			// A blocking command that found nothing replies when it is
			// woken (blocking.go): drop the block, as a close would.
			c.endBlock()
			return
		}
		if c.mb != nil {
			// A (P|S)SUBSCRIBE replies once per channel, through the
			// mailbox (pubsub.go): start the next request afresh.
			c.dropSubs()
			c.mb = nil
			return
		}
		if len(c.out) == 0 || !oneReply(c.out) {
			t.Errorf("%q: reply %q is not one RESP reply", args, c.out)
		}
	})
}

// oneReply reports whether b holds exactly one complete reply.
func oneReply(b []byte) bool {
	n, ok := replyLen(b)
	return ok && n == len(b)
}

// replyLen returns the length of the reply at the start of b.
func replyLen(b []byte) (int, bool) {
	i := 0
	for i+1 < len(b) && !(b[i] == '\r' && b[i+1] == '\n') {
		i++
	}
	if i+1 >= len(b) || i == 0 {
		return 0, false
	}
	end := i + 2
	head := b[1:i]
	switch b[0] {
	case '+', '-', ':', '_', ',':
		return end, true
	case '$', '=':
		n, ok := parseInt(head)
		if !ok {
			return 0, false
		}
		if n < 0 {
			return end, true
		}
		return end + int(n) + 2, end+int(n)+2 <= len(b)
	case '*', '~', '%':
		n, ok := parseInt(head)
		if !ok {
			return 0, false
		}
		if b[0] == '%' {
			n *= 2
		}
		for range n {
			m, ok := replyLen(b[end:])
			if !ok {
				return 0, false
			}
			end += m
		}
		return end, true
	}
	return 0, false
}
