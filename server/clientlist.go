package server

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clientView is what CLIENT LIST shows of a connection's state that only
// its own goroutine may read: the connection publishes a copy (publishView)
// after each command that may change it (the connection, pub/sub and
// transaction categories), so that another client reads it without a race.
type clientView struct {
	name, libName, libVer string
	db, resp              int
	sub, psub, ssub       int
	multi                 bool
	watch                 int
	tracking, bcast       bool
	redir                 int64
}

// view is c's state now; only c's goroutine calls it.
func (c *conn) view() clientView {
	return clientView{name: c.name, libName: c.libName, libVer: c.libVer, db: c.dbIndex, resp: c.proto,
		sub: len(c.subs.channels), psub: len(c.subs.patterns), ssub: len(c.subs.shard),
		multi: c.tx.multi, watch: len(c.tx.watching),
		tracking: c.trk.on, bcast: c.trk.on && c.trk.bcast, redir: getRedir(&c.trk)}
}

// publishView stores c's view for other clients' CLIENT LIST, allocating
// only when it changed.
func (c *conn) publishView() {
	v := c.view()
	if old := c.pub.Load(); old == nil || *old != v {
		p := new(clientView) // v itself stays on the stack
		*p = v
		c.pub.Store(p)
	}
}

// noteCommand records what CLIENT LIST shows of the command c is about to
// run (valkey sets lastcmd before running it); when is recorded once per
// batch (flushWith).
func (c *conn) noteCommand(cmd *command) {
	c.lastCmd.Store(cmd)
}

// clientLine is the line of CLIENT LIST and CLIENT INFO for o, in valkey
// 8.0's fields and order. v is o's view: its own, live, when o is the
// caller, else the one it published. Memory and buffer figures are not
// kept per connection here: they read 0 (valkey's own figures of its
// allocator would mean nothing for this server), and events is r.
func (o *conn) clientLine(v clientView, now time.Time) string {
	var b strings.Builder
	b.Grow(384)
	b.WriteString("id=")
	b.WriteString(strconv.FormatInt(o.id, 10))
	b.WriteString(" addr=")
	b.WriteString(o.remoteAddr().String())
	b.WriteString(" laddr=")
	b.WriteString(o.localAddr().String())
	b.WriteString(" fd=")
	b.WriteString(strconv.Itoa(o.fd()))
	b.WriteString(" name=")
	b.WriteString(v.name)
	b.WriteString(" age=")
	b.WriteString(strconv.FormatInt(int64(now.Sub(o.created)/time.Second), 10))
	b.WriteString(" idle=")
	idle := int64(0)
	if at := o.lastAt.Load(); at != 0 {
		idle = (now.UnixMilli() - at) / 1000
	} else {
		idle = int64(now.Sub(o.created) / time.Second)
	}
	b.WriteString(strconv.FormatInt(max(idle, 0), 10))
	b.WriteString(" flags=")
	b.WriteString(o.flags(v))
	b.WriteString(" db=")
	b.WriteString(strconv.Itoa(v.db))
	b.WriteString(" sub=")
	b.WriteString(strconv.Itoa(v.sub))
	b.WriteString(" psub=")
	b.WriteString(strconv.Itoa(v.psub))
	b.WriteString(" ssub=")
	b.WriteString(strconv.Itoa(v.ssub))
	b.WriteString(" multi=")
	if v.multi {
		b.WriteString(strconv.FormatInt(int64(o.queued.Load()), 10))
	} else {
		b.WriteString("-1")
	}
	b.WriteString(" watch=")
	if o.tx.unwatched.Load() { // a watched key changed: valkey unwatched them all
		v.watch = 0
	}
	b.WriteString(strconv.Itoa(v.watch))
	b.WriteString(" qbuf=0 qbuf-free=0 argv-mem=0 multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=0 tot-mem=0 events=r cmd=")
	if cmd := o.lastCmd.Load(); cmd != nil {
		b.WriteString(cmd.name)
	} else {
		b.WriteString("NULL")
	}
	b.WriteString(" user=default redir=")
	b.WriteString(strconv.FormatInt(v.redir, 10))
	b.WriteString(" resp=")
	b.WriteString(strconv.Itoa(v.resp))
	b.WriteString(" lib-name=")
	b.WriteString(v.libName)
	b.WriteString(" lib-ver=")
	b.WriteString(v.libVer)
	b.WriteString(" tot-net-in=0 tot-net-out=0 tot-cmds=")
	b.WriteString(strconv.FormatInt(o.totCmds.Load(), 10))
	return b.String()
}

// flags is valkey's flags field, in its order: P pub/sub, x MULTI, b
// blocked, t tracking, B broadcast tracking, d dirty CAS; N for none.
func (o *conn) flags(v clientView) string {
	var f []byte
	if v.sub+v.psub+v.ssub > 0 {
		f = append(f, 'P')
	}
	if v.multi {
		f = append(f, 'x')
	}
	if o.blocking.Load() != nil {
		f = append(f, 'b')
	}
	if v.tracking {
		f = append(f, 't')
	}
	if v.bcast {
		f = append(f, 'B')
	}
	if o.tx.dirtyCAS.Load() {
		f = append(f, 'd')
	}
	if len(f) == 0 {
		return "N"
	}
	return string(f)
}

// fd is the connection's file descriptor (a handle on Windows), -1 when
// it has none.
func (o *conn) fd() int {
	if o.gc != nil {
		return o.gc.Fd()
	}
	sc, ok := o.nc.(syscall.Conn)
	if !ok {
		return -1
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	if rc.Control(func(h uintptr) { fd = int(h) }) != nil {
		return -1
	}
	return fd
}

// lineOf is o's line as c sees it.
func (c *conn) lineOf(o *conn, now time.Time) string {
	if o == c {
		return o.clientLine(c.view(), now)
	}
	v := o.pub.Load()
	if v == nil {
		v = &clientView{resp: 2, redir: -1}
	}
	return o.clientLine(*v, now)
}

// CLIENT LIST [TYPE normal|master|replica|pubsub] [ID id ...], as
// valkey 8.0's: one filter, TYPE's with exactly one argument.
func cmdClientList(c *conn, args [][]byte) {
	typ := ""
	var ids map[int64]bool
	switch {
	case len(args) == 4 && eqFold(args[2], "type"):
		switch t := strings.ToLower(string(args[3])); t {
		case "normal", "pubsub", "master", "replica", "slave":
			typ = t
		default:
			c.addError("ERR Unknown client type '" + string(args[3]) + "'")
			return
		}
	case len(args) >= 4 && eqFold(args[2], "id"):
		ids = map[int64]bool{}
		for _, a := range args[3:] {
			n, ok := parseInt(a)
			if !ok {
				c.addError("ERR Invalid client ID")
				return
			}
			ids[n] = true
		}
	case len(args) != 2:
		c.addError(msgSyntax)
		return
	}
	c.srv.mu.Lock()
	list := make([]*conn, 0, len(c.srv.conns))
	for o := range c.srv.conns {
		list = append(list, o)
	}
	c.srv.mu.Unlock()
	if len(list) == 0 || !hasConn(list, c) {
		list = append(list, c)
	}
	sortConns(list)
	now := time.Now()
	var b strings.Builder
	for _, o := range list {
		switch {
		case ids != nil && !ids[o.id]:
			continue
		case typ != "" && typ != o.clientType():
			continue
		}
		b.WriteString(c.lineOf(o, now))
		b.WriteByte('\n')
	}
	c.addVerbatim(b.String())
}

func hasConn(list []*conn, c *conn) bool {
	for _, o := range list {
		if o == c {
			return true
		}
	}
	return false
}

// sortConns orders list by id, as valkey's list of clients is.
func sortConns(list []*conn) {
	slices.SortFunc(list, func(a, b *conn) int { return cmp.Compare(a.id, b.id) })
}

// beginMuted and endMuted frame a command whose reply CLIENT REPLY drops
// (valkey's reply_off and reply_skip): what it appended to c.out from
// mark on is cut.
func (c *conn) beginMuted() {
	c.mute = c.replyOff || c.replySkipNext
	c.replySkipNext = false
}

func (c *conn) endMuted(mark int) {
	if c.mute || c.replyOff { // OFF mutes its own reply too
		c.out = c.out[:min(mark, len(c.out))]
	}
	c.mute = false
}

// CLIENT REPLY ON|OFF|SKIP, as valkey's: OFF and SKIP have no reply, SKIP
// drops the next command's (unless OFF), ON replies OK.
func cmdClientReply(c *conn, args [][]byte) {
	switch {
	case eqFold(args[2], "on"):
		c.replyOff, c.replySkipNext, c.mute = false, false, false
		c.addOK()
	case eqFold(args[2], "off"):
		c.replyOff, c.replySkipNext = true, false
	case eqFold(args[2], "skip"):
		c.replySkipNext = !c.replyOff
	default:
		c.addError(msgSyntax)
	}
}
