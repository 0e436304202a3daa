package server

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Pub/sub: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE, their UNSUBSCRIBEs, PUBLISH,
// SPUBLISH and PUBSUB, as valkey 8.0's pubsub.c.
//
// The subscriptions live in a hub, the Server's (a Cluster's nodes share
// their Cluster's, as valkey's nodes pass PUBLISH over the cluster bus).
// A publisher runs on its own goroutine or event loop and must never wait
// for a subscriber, so it does not touch the subscriber's c.out: it appends
// the message to the subscriber's mailbox, under the mailbox's lock, and
// kicks the subscriber's server side, which writes the mailbox out:
//   - a goroutine's connection (netpoll, RDMA) is kicked by a read
//     deadline in the past: its Read returns, serve flushes, reads again;
//   - an event-loop connection is kicked by gnet's Wake (OnTraffic with no
//     data), and hands the mailbox to gnet only while gnet holds little
//     of its output, so what a slow client leaves unread stays in the
//     mailbox, where the publisher counts it.
//
// Once a connection has a mailbox, all its output goes through it (flush
// appends c.out to it), and a subscribe's reply is appended straight to it
// under the hub's lock, with the subscription: a message published after
// the subscription always comes after its reply.
//
// The limit. The publisher counts what the mailbox holds (and what serve
// is writing): beyond Options.PubsubLimit's hard limit, or beyond its soft
// one for its time, it drops the mailbox and closes the connection, as
// valkey's client-output-buffer-limit pubsub does.
//
// Lock order: hub.mu, then a mailbox's mu. Loop engine's mu (wake, close)
// after both.

// hub holds the subscriptions of a Server or a Cluster.
type hub struct {
	mu       sync.RWMutex
	channels map[string]map[*conn]struct{}
	patterns map[string]map[*conn]struct{}
	shard    map[string]map[*conn]struct{}
}

func newHub() *hub {
	return &hub{
		channels: map[string]map[*conn]struct{}{},
		patterns: map[string]map[*conn]struct{}{},
		shard:    map[string]map[*conn]struct{}{},
	}
}

// subs are a connection's subscriptions, in the order it made them (valkey
// keeps them in a dict, and an UNSUBSCRIBE without arguments answers in
// the dict's order; ours is the order of subscription). Only the
// connection's goroutine or loop touches them, under hub.mu.
type subs struct {
	channels, patterns, shard []string
}

func (s *subs) count() int { return len(s.channels) + len(s.patterns) }

// subscribed: valkey's CLIENT_PUBSUB, the RESP2 subscribed state.
func (s *subs) subscribed() bool { return s.count()+len(s.shard) > 0 }

// mailbox is the output of a connection that has subscribed: see the top
// of the file. Its fields are under mu.
type mailbox struct {
	mu  sync.Mutex
	buf []byte // output not yet handed to the network
	// inval: invalidations (tracking.go) posted while the connection runs
	// a command (busy), which it moves to buf after the command's reply
	// (endTracked): a read's reply must come before the invalidation of
	// what it read, or the client caches a stale value after it.
	inval   []byte
	busy    bool
	writing int // bytes serve is writing now (netpoll), counted too
	proto   int // the connection's, for the publishers (setProto)
	// subscribed: the connection has a subscription, and so is in
	// valkey's pubsub class, which the limit applies to (a client that
	// only tracks keys is a normal one, with none).
	subscribed bool
	kicked     bool // a kick is on its way: no need for another
	dead       bool // closed at the limit: drop whatever comes
	softSince  time.Time
}

// OutputLimit bounds the output a pub/sub client leaves unread, as valkey's
// client-output-buffer-limit pubsub: beyond Hard bytes, or beyond Soft
// bytes for SoftSeconds, the connection is closed. Zero fields take
// valkey's defaults (32 MiB, 8 MiB, 60 s); a negative Hard or Soft turns
// that limit off.
type OutputLimit struct {
	Hard, Soft  int
	SoftSeconds int
}

func (l OutputLimit) withDefaults() OutputLimit {
	if l.Hard == 0 {
		l.Hard = 32 << 20
	}
	if l.Soft == 0 {
		l.Soft = 8 << 20
	}
	if l.SoftSeconds == 0 {
		l.SoftSeconds = 60
	}
	return l
}

// kindSub is one of the three kinds of subscription, with the words of
// its replies.
type kindSub struct {
	sub, unsub, msg string
	hubMap          func(h *hub) map[string]map[*conn]struct{}
	mine            func(s *subs) *[]string
	count           func(s *subs) int
}

var (
	kindChannel = &kindSub{"subscribe", "unsubscribe", "message",
		func(h *hub) map[string]map[*conn]struct{} { return h.channels },
		func(s *subs) *[]string { return &s.channels }, (*subs).count}
	kindPattern = &kindSub{"psubscribe", "punsubscribe", "pmessage",
		func(h *hub) map[string]map[*conn]struct{} { return h.patterns },
		func(s *subs) *[]string { return &s.patterns }, (*subs).count}
	kindShard = &kindSub{"ssubscribe", "sunsubscribe", "smessage",
		func(h *hub) map[string]map[*conn]struct{} { return h.shard },
		func(s *subs) *[]string { return &s.shard }, func(s *subs) int { return len(s.shard) }}
)

// appendPushLen starts a push: > in RESP3, an array in RESP2.
func appendPushLen(b []byte, proto, n int) []byte {
	if proto == 3 {
		b = append(b, '>')
	} else {
		b = append(b, '*')
	}
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

func appendBulk(b []byte, s string) []byte {
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, '\r', '\n')
	b = append(b, s...)
	return append(b, '\r', '\n')
}

func appendInt(b []byte, n int) []byte {
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(n), 10)
	return append(b, '\r', '\n')
}

// appendSubReply is a (un)subscribe reply: [word, name, count]; a nil
// name when name is absent (UNSUBSCRIBE with nothing subscribed).
func appendSubReply(b []byte, proto int, word string, name *string, count int) []byte {
	b = appendPushLen(b, proto, 3)
	b = appendBulk(b, word)
	switch {
	case name != nil:
		b = appendBulk(b, *name)
	case proto == 3:
		b = append(b, "_\r\n"...)
	default:
		b = append(b, "$-1\r\n"...)
	}
	return appendInt(b, count)
}

// setProto sets the connection's protocol (HELLO, RESET), which its
// mailbox keeps a copy of for the publishers on other goroutines.
func (c *conn) setProto(proto int) {
	c.proto = proto
	if c.mb != nil {
		c.mb.mu.Lock()
		c.mb.proto = proto
		c.mb.mu.Unlock()
	}
}

// ensureMailbox gives c a mailbox, before its first subscription: from
// then on its output goes through it. The pending replies go first.
func (c *conn) ensureMailbox() *mailbox {
	if c.mb == nil {
		c.mb = &mailbox{proto: c.proto}
	}
	c.mb.mu.Lock()
	c.mb.buf = append(c.mb.buf, c.out...)
	c.mb.mu.Unlock()
	c.out = c.out[:0]
	return c.mb
}

// subscribeRun and unsubscribeRun are the rows' run functions: SUBSCRIBE,
// PSUBSCRIBE, SSUBSCRIBE name [name ...], and UNSUBSCRIBE, PUNSUBSCRIBE,
// SUNSUBSCRIBE [name ...].
func subscribeRun(k *kindSub) func(*conn, [][]byte) {
	return func(c *conn, args [][]byte) {
		if k == kindShard && c.tx.running {
			// valkey's deny_blocking, which EXEC sets: SUBSCRIBE and
			// PSUBSCRIBE let it pass, for compatibility, SSUBSCRIBE not.
			c.addError("ERR SSUBSCRIBE isn't allowed for a DENY BLOCKING client")
			return
		}
		c.subscribe(k, args[1:])
	}
}

func unsubscribeRun(k *kindSub) func(*conn, [][]byte) {
	return func(c *conn, args [][]byte) { c.unsubscribe(k, args[1:]) }
}

func (c *conn) subscribe(k *kindSub, names [][]byte) {
	mb := c.ensureMailbox()
	h := c.srv.hub
	for _, n := range names {
		name := string(n)
		h.mu.Lock()
		mine := k.mine(&c.subs)
		if !slices.Contains(*mine, name) {
			*mine = append(*mine, name)
			m := k.hubMap(h)
			set := m[name]
			if set == nil {
				set = map[*conn]struct{}{}
				m[name] = set
			}
			set[c] = struct{}{}
		}
		mb.mu.Lock()
		mb.buf = appendSubReply(mb.buf, c.proto, k.sub, &name, k.count(&c.subs))
		mb.subscribed = true
		mb.mu.Unlock()
		h.mu.Unlock()
	}
}

func (c *conn) unsubscribe(k *kindSub, names [][]byte) {
	h := c.srv.hub
	mine := k.mine(&c.subs)
	if len(names) == 0 {
		if len(*mine) == 0 {
			c.out = appendSubReply(c.out, c.proto, k.unsub, nil, k.count(&c.subs))
			return
		}
		for _, name := range slices.Clone(*mine) {
			c.unsubscribeOne(h, k, name)
		}
		return
	}
	for _, n := range names {
		c.unsubscribeOne(h, k, string(n))
	}
}

// unsubscribeOne drops one subscription and replies. The reply may go to
// c.out: a message delivered before it is in the mailbox, ahead of it.
func (c *conn) unsubscribeOne(h *hub, k *kindSub, name string) {
	h.mu.Lock()
	mine := k.mine(&c.subs)
	if i := slices.Index(*mine, name); i >= 0 {
		*mine = slices.Delete(*mine, i, i+1)
		m := k.hubMap(h)
		delete(m[name], c)
		if len(m[name]) == 0 {
			delete(m, name)
		}
	}
	h.mu.Unlock()
	c.syncSubscribed()
	c.out = appendSubReply(c.out, c.proto, k.unsub, &name, k.count(&c.subs))
}

// syncSubscribed copies whether c has a subscription to its mailbox.
func (c *conn) syncSubscribed() {
	if c.mb != nil {
		c.mb.mu.Lock()
		c.mb.subscribed = c.subs.subscribed()
		c.mb.mu.Unlock()
	}
}

// endPubsub drops a closed connection's subscriptions and mailbox.
func (c *conn) endPubsub() {
	if c.mb == nil {
		return
	}
	c.dropSubs()
	c.mb.mu.Lock()
	c.mb.dead, c.mb.buf, c.mb.inval = true, nil, nil
	c.mb.mu.Unlock()
}

// dropSubs drops every subscription without a reply (RESET, a close).
func (c *conn) dropSubs() {
	h := c.srv.hub
	h.mu.Lock()
	for _, k := range []*kindSub{kindChannel, kindPattern, kindShard} {
		m := k.hubMap(h)
		for _, name := range *k.mine(&c.subs) {
			delete(m[name], c)
			if len(m[name]) == 0 {
				delete(m, name)
			}
		}
		*k.mine(&c.subs) = nil
	}
	h.mu.Unlock()
	c.syncSubscribed()
}

// PUBLISH channel message, SPUBLISH shardchannel message
func cmdPublish(c *conn, args [][]byte) {
	shard := args[0][0]|0x20 == 's'
	ch, msg := string(args[1]), args[2]
	h := c.srv.hub
	n := 0
	h.mu.RLock()
	if shard {
		for sub := range h.shard[ch] {
			sub.deliver(c, kindShard, "", ch, msg)
			n++
		}
	} else {
		for sub := range h.channels[ch] {
			sub.deliver(c, kindChannel, "", ch, msg)
			n++
		}
		for pat, set := range h.patterns {
			if !globMatch(pat, ch) {
				continue
			}
			for sub := range set {
				sub.deliver(c, kindPattern, pat, ch, msg)
				n++
			}
		}
	}
	h.mu.RUnlock()
	c.addInt(int64(n))
}

// deliver appends a message of publisher's to c's mailbox and kicks c, or
// closes c at the limit. Any goroutine; the caller holds the hub's lock
// for reading. A message to the publisher itself waits in its selfPush
// until the reply of its command (of all of EXEC's, of the script's) is
// out, as valkey's pending_push_messages.
func (c *conn) deliver(publisher *conn, k *kindSub, pattern, ch string, msg []byte) {
	mb := c.mb
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if mb.dead {
		return
	}
	if c == publisher {
		c.selfPush = appendMessage(c.selfPush, mb.proto, k, pattern, ch, msg)
		return
	}
	mb.buf = appendMessage(mb.buf, mb.proto, k, pattern, ch, msg)
	c.afterPost(mb)
}

// appendMessage is a message's push: [message, channel, payload], or
// [pmessage, pattern, channel, payload].
func appendMessage(b []byte, proto int, k *kindSub, pattern, ch string, msg []byte) []byte {
	if k == kindPattern {
		b = appendPushLen(b, proto, 4)
		b = appendBulk(b, k.msg)
		b = appendBulk(b, pattern)
	} else {
		b = appendPushLen(b, proto, 3)
		b = appendBulk(b, k.msg)
	}
	b = appendBulk(b, ch)
	b = append(b, '$')
	b = strconv.AppendInt(b, int64(len(msg)), 10)
	b = append(b, '\r', '\n')
	b = append(b, msg...)
	return append(b, '\r', '\n')
}

// flushSelfPush moves the messages c published to itself after its
// command's reply, even a reply CLIENT REPLY drops (exec).
func (c *conn) flushSelfPush() {
	if len(c.selfPush) > 0 {
		c.out = append(c.out, c.selfPush...)
		c.selfPush = c.selfPush[:0]
	}
}

// afterPost closes c if its mailbox is over the limit, else kicks it;
// mb.mu held.
func (c *conn) afterPost(mb *mailbox) {
	if c.overLimit(mb) {
		mb.dead, mb.buf, mb.inval = true, nil, nil
		c.srv.outputLimitClosed.Add(1)
		c.closeAsync()
		return
	}
	if !mb.kicked {
		mb.kicked = true
		c.kick()
	}
}

// overLimit applies Options.PubsubLimit to what mb holds; mb.mu held.
func (c *conn) overLimit(mb *mailbox) bool {
	if !mb.subscribed {
		return false
	}
	lim := c.srv.opts.PubsubLimit
	n := len(mb.buf) + len(mb.inval) + mb.writing
	if lim.Hard > 0 && n >= lim.Hard {
		return true
	}
	if lim.Soft <= 0 || n < lim.Soft {
		mb.softSince = time.Time{}
		return false
	}
	now := time.Now()
	if mb.softSince.IsZero() {
		mb.softSince = now
		return false
	}
	return now.Sub(mb.softSince) >= time.Duration(lim.SoftSeconds)*time.Second
}

// kick has c's server side write its mailbox; see the top of the file.
// mb.mu held.
func (c *conn) kick() {
	if c.gc != nil {
		c.srv.loop.wake(c.gc)
		return
	}
	// Read returns a timeout at once; serve flushes and clears it.
	c.nc.SetReadDeadline(time.Unix(1, 0))
}

// closeAsync closes c from another goroutine without waiting: an RDMA
// connection's Close waits for its teardown.
func (c *conn) closeAsync() {
	if c.gc != nil {
		c.srv.loop.close(c.gc)
		return
	}
	go c.nc.Close()
}

// wasKicked reports whether err is a kick's timeout (kick), and readies
// the connection to read again. A qp.Conn's deadline error is a net.Error
// too.
func (c *conn) wasKicked(err error) bool {
	var ne net.Error
	if c.mb == nil || !errors.As(err, &ne) || !ne.Timeout() {
		return false
	}
	c.mb.mu.Lock()
	defer c.mb.mu.Unlock()
	c.mb.kicked = false
	c.nc.SetReadDeadline(time.Time{})
	return true
}

// handOff is flush's part for a connection with a mailbox: c.out joins the
// mailbox, and what the network may take now is taken from it. On the event
// loops, nothing is handed to gnet while it holds mailboxHold of output:
// the rest waits in the mailbox, where the limit sees it, and a timer looks
// again.
func (c *conn) handOff() []byte {
	mb := c.mb
	mb.mu.Lock()
	defer mb.mu.Unlock()
	if mb.dead {
		c.out = c.out[:0]
		return nil
	}
	mb.buf = append(mb.buf, c.out...)
	c.out = c.out[:0]
	mb.buf = append(mb.buf, mb.inval...)
	mb.inval = mb.inval[:0]
	mb.kicked = false
	if c.gc != nil && c.gc.OutboundBuffered() > mailboxHold && len(mb.buf) > 0 {
		c.pause()
		return nil
	}
	b := mb.buf
	mb.buf = nil
	mb.writing = len(b)
	return b
}

// written: the bytes handOff gave are out.
func (c *conn) written() {
	c.mb.mu.Lock()
	c.mb.writing = 0
	c.mb.mu.Unlock()
}

// mailboxHold: see handOff.
const mailboxHold = 256 << 10

// PUBSUB CHANNELS [pattern], SHARDCHANNELS [pattern]
func cmdPubsubChannels(c *conn, args [][]byte) {
	h := c.srv.hub
	m := h.channels
	if eqFold(args[1], "shardchannels") {
		m = h.shard
	}
	var found []string
	h.mu.RLock()
	for ch := range m {
		if len(args) < 3 || globMatch(string(args[2]), ch) {
			found = append(found, ch)
		}
	}
	h.mu.RUnlock()
	c.addArray(len(found))
	for _, ch := range found {
		c.addBulkString(ch)
	}
}

// PUBSUB NUMSUB [channel ...], SHARDNUMSUB [shardchannel ...]: a flat
// array of names and counts, in both protocols, as valkey.
func cmdPubsubNumsub(c *conn, args [][]byte) {
	h := c.srv.hub
	m := h.channels
	if eqFold(args[1], "shardnumsub") {
		m = h.shard
	}
	c.addArray(2 * (len(args) - 2))
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, ch := range args[2:] {
		c.addBulk(ch)
		c.addInt(int64(len(m[string(ch)])))
	}
}

// PUBSUB NUMPAT: the patterns subscribed to, by anyone.
func cmdPubsubNumpat(c *conn, _ [][]byte) {
	h := c.srv.hub
	h.mu.RLock()
	n := len(h.patterns)
	h.mu.RUnlock()
	c.addInt(int64(n))
}

var pubsubHelp = []string{
	"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CHANNELS [<pattern>]",
	"    Return the currently active channels matching a <pattern> (default: '*').",
	"NUMPAT",
	"    Return number of subscriptions to patterns.",
	"NUMSUB [<channel> ...]",
	"    Return the number of subscribers for the specified channels, excluding",
	"    pattern subscriptions(default: no channels).",
	"SHARDCHANNELS [<pattern>]",
	"    Return the currently active shard level channels matching a <pattern> (default: '*').",
	"SHARDNUMSUB [<shardchannel> ...]",
	"    Return the number of subscribers for the specified shard level channel(s)",
	"HELP",
	"    Print this help.",
}

func cmdPubsubHelp(c *conn, _ [][]byte) { c.addHelp(pubsubHelp) }

// allowedSubscribed reports whether a RESP2 connection in the subscribed
// state may run cmd (valkey's processCommand).
func allowedSubscribed(cmd *command) bool {
	switch cmd.name {
	case "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe", "ping", "quit", "reset":
		return true
	}
	return false
}

// isUnsubscribe: an (P|S)UNSUBSCRIBE, which valkey refuses (NOSUB) from a
// connection with no subscription, in either protocol.
func isUnsubscribe(cmd *command) bool {
	switch cmd.name {
	case "unsubscribe", "punsubscribe", "sunsubscribe":
		return true
	}
	return false
}

// PING in the RESP2 subscribed state: ["pong", arg or ""].
func (c *conn) pingSubscribed(args [][]byte) {
	c.addArray(2)
	c.addBulkString("pong")
	if len(args) > 1 {
		c.addBulk(args[1])
	} else {
		c.addBulkString("")
	}
}
