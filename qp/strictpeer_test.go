//go:build unix

package qp_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed54442f1a/rdmapool/internal/unsafeptr"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
)

// The strict peer is valkey-server's side of the Valkey-over-RDMA protocol
// (src/rdma.c of valkey 9.1.0, read, not copied), written on the raw verbs
// binding, with valkey's rules turned into test failures: where valkey
// would crash, assert, stall, close the connection or silently corrupt a
// reply because of something the client did, the strict peer reports the
// rule by name (t.Errorf) and closes the connection, as valkey would.
//
// The rules are checked by strictState, plain Go over the sequence of
// completions of one connection, so that a test without a device can feed
// it a client's mistakes (strict_test.go, TestStrictRules*). strictPeer
// runs the verbs around it: a listener, and per connection what
// valkey-server makes (rdmaCreateResource, rdmaSetupIoBuf).
//
// Rules valkey relies on that no check here can see, and why:
//   - a plain RDMA_WRITE (no immediate) into the server's buffer makes no
//     completion at the server: valkey's offset does not move, and it
//     reads the next write's bytes from the wrong place. The strict peer
//     sees that only as requests that are not RESP.
//   - a re-arm of a buffer the server filled but the client has not read
//     yet looks, from the server, like a re-arm after the read (valkey
//     then overwrites the unread bytes); the tests catch it by comparing
//     every reply.
//   - a write when the server has no receive posted. valkey accepts with
//     rnr_retry_count 0, which rdma_cm hands to the client's side of the
//     connection (inference, from the CM's REP): the client's write then
//     fails at the first RNR NAK instead of being retried. The strict
//     peer accepts with valkey's values, so a client that counts on
//     retries fails its own test with a completion error.

// strictViolation is a rule valkey-server relies on, broken by the client.
type strictViolation struct {
	Rule   string // one of the rule* constants
	Detail string // what the client did, and what valkey does then
}

func (v *strictViolation) Error() string {
	return fmt.Sprintf("strict peer: the client broke the rule %q: %s", v.Rule, v.Detail)
}

// The rules, each as the sentence a failure names.
const (
	ruleCmdSize    = "a control message is a SEND of exactly 32 bytes"
	ruleOpcode     = "a control message's opcode is 0 to 3"
	ruleFeature    = "SetClientFeature sets no feature the server did not offer"
	ruleLenRange   = "a RegisterXferMemory length is 1 byte to 16 MiB"
	ruleSameLen    = "every RegisterXferMemory has the length of the client's first"
	ruleRearmFull  = "a RegisterXferMemory after the first comes only once the server has filled the buffer"
	ruleImm        = "data comes by RDMA_WRITE_WITH_IMM whose immediate is its byte count"
	ruleOverrun    = "a write stays within the server's advertised receive buffer"
	ruleCtlSlots   = "the client lets the server's control messages complete as fast as it asks for them"
	ruleRemoteBuf  = "the client's advertised buffer takes the server's writes"
	ruleRecvPosted = "the client keeps a receive posted for every message the server sends"
	ruleCleanClose = "the client ends a connection with rdma_disconnect"
	ruleRESP       = "requests are RESP"
)

const (
	strictCmdSize  = 32
	strictWQE      = 1024     // VALKEY_RDMA_MAX_WQE: receives posted, send queue, control-send slots
	strictMinRx    = 64 << 10 // VALKEY_RDMA_MIN_RX_SIZE
	strictMaxRx    = 16 << 20 // VALKEY_RDMA_MAX_RX_SIZE
	strictDefRx    = 1 << 20  // VALKEY_RDMA_DEFAULT_RX_SIZE
	strictSignalEv = strictWQE / 2

	// A GetServerFeature bit the client may ask about: "I take a
	// RegisterXferMemory of another length". The strict peer offers it
	// never, as valkey-server offers no feature.
	strictFeatureNewLength = 1 << 48
)

// strictState is one connection's protocol state as valkey-server keeps it
// (struct RdmaContext's tx and rx), and the rules a client must keep for
// it. It does no I/O: the peer hands it each completion and asks it what
// to do.
type strictState struct {
	// The client's receive buffer, from its RegisterXferMemory: where
	// the server writes its replies (valkey's tx_addr, tx_length,
	// tx_key, tx.offset).
	arms    int    // RegisterXferMemory messages taken
	first   uint32 // the first one's length: every later one must have it
	txAddr  uint64
	txLen   uint32
	txKey   uint32
	txOff   uint32 // bytes written since the last RegisterXferMemory
	offered uint64 // features offered in answers to GetServerFeature: none

	// The server's receive buffer (valkey's rx): advertised at
	// ESTABLISHED, re-armed once it has been read whole.
	rxLen, rxOff, rxPos uint32
}

func newStrictState(rxLen uint32) *strictState { return &strictState{rxLen: rxLen} }

// control applies a control message, a SEND of byteLen bytes whose slot
// holds b (32 bytes), and returns the answer to send, if any. An error is
// a broken rule; valkey closes the connection then (connRdmaHandleRecv
// returns C_ERR) or worse.
func (s *strictState) control(byteLen uint32, b []byte) (answer []byte, err error) {
	if byteLen != strictCmdSize {
		return nil, &strictViolation{ruleCmdSize, fmt.Sprintf("a SEND of %d bytes (valkey: \"recv corrupted cmd\", the connection closes)", byteLen)}
	}
	switch op := binary.BigEndian.Uint16(b); op {
	case 0: // GetServerFeature
		// valkey answers with the same opcode, the select echoed and no
		// features, whatever the request's features field holds
		// (connRdmaGetFeature reads only the select).
		a := cmdBytes(0)
		copy(a[2:4], b[2:4])
		return a, nil
	case 1: // SetClientFeature
		if f := binary.BigEndian.Uint64(b[24:]); f&^s.offered != 0 {
			// valkey's connRdmaSetFeature returns an error for any bit,
			// which its caller drops: the client would go on believing
			// in a feature the server does not have.
			return nil, &strictViolation{ruleFeature, fmt.Sprintf("SetClientFeature with features %#x, after GetServerFeature answers that offered %#x", f, s.offered)}
		}
		return nil, nil
	case 2: // Keepalive: valkey takes it as nothing.
		return nil, nil
	case 3: // RegisterXferMemory
		return nil, s.register(binary.BigEndian.Uint64(b[16:]), binary.BigEndian.Uint32(b[24:]), binary.BigEndian.Uint32(b[28:]))
	default:
		return nil, &strictViolation{ruleOpcode, fmt.Sprintf("opcode %d (valkey: \"unknown cmd\", the connection closes)", op)}
	}
}

// register applies a RegisterXferMemory of the client's.
func (s *strictState) register(addr uint64, length, key uint32) error {
	if length == 0 || length > strictMaxRx {
		// valkey bounds it by nothing: 0 gives it a staging buffer of
		// nothing, and every reply waits forever (connRdmaWrite writes
		// 0 bytes); a larger one has it pin a staging buffer of that
		// size per connection (an mmap that fails panics the server),
		// more than the largest receive buffer it makes itself.
		return &strictViolation{ruleLenRange, fmt.Sprintf("RegisterXferMemory of %d bytes, want 1 to %d", length, strictMaxRx)}
	}
	if s.arms > 0 && length != s.first {
		// rdmaAdjustSendbuf, on a length other than the last, frees the
		// staging buffer that rdmaMemoryAlloc mmap'd (with guard pages)
		// with free(): valkey-server 8.1.0 through 9.1.0 die of SIGSEGV
		// in __libc_free. Only a server that offered a length change in
		// its GetServerFeature answer may be sent one, and valkey offers
		// none.
		return &strictViolation{ruleSameLen, fmt.Sprintf("RegisterXferMemory of %d bytes after a first of %d, with no length change negotiated: valkey-server 8.1.0 to 9.1.0 crash here (rdmaAdjustSendbuf frees its mmap'd staging buffer with free(): SIGSEGV in __libc_free)", length, s.first)}
	}
	if s.arms > 0 && s.txOff != s.txLen {
		// valkey restarts its writes at the start of the buffer on any
		// RegisterXferMemory. A client that re-arms before the server
		// filled the buffer cannot know that no write is in flight to
		// the old offsets: such a write lands past where the client,
		// counting from 0 again, looks for it, and a later one
		// overwrites bytes it has not read. valkey-server and libvalkey
		// re-arm only a buffer read whole, which the server filled.
		return &strictViolation{ruleRearmFull, fmt.Sprintf("RegisterXferMemory when the server had written %d of the buffer's %d bytes (valkey would start writing at its start again, over bytes in flight)", s.txOff, s.txLen)}
	}
	if s.arms == 0 {
		s.first = length
	}
	s.arms++
	s.txAddr, s.txLen, s.txKey, s.txOff = addr, length, key, 0
	return nil
}

// written applies the completion of one of the client's writes into the
// server's receive buffer: whether it carried immediate data, the
// immediate (host order) and the completion's byte_len.
func (s *strictState) written(withImm bool, imm, byteLen uint32) error {
	if !withImm {
		return &strictViolation{ruleImm, "a receive completion of an RDMA write without immediate data (valkey takes its byte count from the immediate)"}
	}
	if uint64(s.rxOff)+uint64(imm) > uint64(s.rxLen) {
		// valkey: assert(byte_len + rx.offset <= rx.length) in
		// connRdmaHandleRecvImm: the whole server aborts.
		return &strictViolation{ruleOverrun, fmt.Sprintf("a write of %d bytes at offset %d of the server's %d-byte buffer (valkey asserts in connRdmaHandleRecvImm and aborts)", imm, s.rxOff, s.rxLen)}
	}
	if imm != byteLen {
		// valkey reads imm bytes where the write put byte_len.
		return &strictViolation{ruleImm, fmt.Sprintf("an immediate of %d for a write of %d bytes", imm, byteLen)}
	}
	s.rxOff += imm
	return nil
}

// take returns the range of the server's receive buffer written and not
// yet read, and marks it read (the server copies it out, as valkey's read
// handler does). rearm reports that the buffer has been read whole: the
// server re-arms it (same address, length and key) and starts over.
func (s *strictState) take() (lo, hi uint32, rearm bool) {
	lo, hi = s.rxPos, s.rxOff
	s.rxPos = s.rxOff
	if s.rxPos == s.rxLen {
		s.rxPos, s.rxOff = 0, 0
		return lo, hi, true
	}
	return lo, hi, false
}

// room is how many bytes the server may write into the client's buffer
// now: none before its RegisterXferMemory, and none once full until the
// next.
func (s *strictState) room() uint32 {
	if s.arms == 0 {
		return 0
	}
	return s.txLen - s.txOff
}

// sent records a write of n bytes into the client's buffer.
func (s *strictState) sent(n uint32) { s.txOff += n }

// strictMemCmd encodes a RegisterXferMemory.
func strictMemCmd(addr uint64, length, key uint32) []byte {
	b := cmdBytes(3)
	binary.BigEndian.PutUint64(b[16:], addr)
	binary.BigEndian.PutUint32(b[24:], length)
	binary.BigEndian.PutUint32(b[28:], key)
	return b
}

// strictFeatureCmd encodes a GetServerFeature (op 0) or SetClientFeature
// (op 1).
func strictFeatureCmd(op, sel uint16, features uint64) []byte {
	b := cmdBytes(op)
	binary.BigEndian.PutUint16(b[2:], sel)
	binary.BigEndian.PutUint64(b[24:], features)
	return b
}

// netOrder turns a 32-bit immediate between host and network order (the
// verbs structs hold it in network order).
func netOrder(x uint32) uint32 {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], x)
	return binary.BigEndian.Uint32(b[:])
}

// Requests.

// errRESP is a request that is not RESP.
type errRESP string

func (e errRESP) Error() string { return string(e) }

// parseRESP parses the request at the start of b, as valkey's
// processMultibulkBuffer and processInlineBuffer do: an array of bulk
// strings, or an inline command (a line of words). n is the bytes it
// takes, 0 while b holds only part of it; args is nil for an empty
// request, which valkey skips.
func parseRESP(b []byte) (args [][]byte, n int, err error) {
	const maxInline = 64 << 10 // PROTO_INLINE_MAX_SIZE
	if len(b) == 0 {
		return nil, 0, nil
	}
	line := func(from int) (string, int, error) {
		i := bytes.Index(b[from:], []byte("\r\n"))
		if i < 0 {
			if len(b)-from > maxInline {
				return "", 0, errRESP("a line longer than 64 KiB without CRLF")
			}
			return "", 0, nil
		}
		return string(b[from : from+i]), from + i + 2, nil
	}
	if b[0] != '*' {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(b) > maxInline {
				return nil, 0, errRESP("an inline request longer than 64 KiB")
			}
			return nil, 0, nil
		}
		for _, w := range bytes.Fields(b[:i]) {
			args = append(args, w)
		}
		return args, i + 1, nil
	}
	hdr, pos, err := line(0)
	if err != nil || pos == 0 {
		return nil, 0, err
	}
	count, err := strconv.Atoi(hdr[1:])
	if err != nil || count > 1<<20 {
		return nil, 0, errRESP(fmt.Sprintf("invalid multibulk length %q", hdr))
	}
	for range count {
		if pos >= len(b) {
			return nil, 0, nil
		}
		if b[pos] != '$' {
			return nil, 0, errRESP(fmt.Sprintf("expected '$', got %q", b[pos]))
		}
		h, next, err := line(pos)
		if err != nil || next == 0 {
			return nil, 0, err
		}
		size, err := strconv.Atoi(h[1:])
		if err != nil || size < 0 || size > 512<<20 {
			return nil, 0, errRESP(fmt.Sprintf("invalid bulk length %q", h))
		}
		if len(b) < next+size+2 {
			return nil, 0, nil
		}
		if b[next+size] != '\r' || b[next+size+1] != '\n' {
			return nil, 0, errRESP("a bulk string not followed by CRLF")
		}
		args = append(args, b[next:next+size])
		pos = next + size + 2
	}
	return args, pos, nil
}

// exec runs one request against the keyspace and appends the reply to out.
func strictExec(store map[string][]byte, args [][]byte, out []byte) []byte {
	if len(args) == 0 {
		return out
	}
	name := string(bytes.ToUpper(args[0]))
	arity := func(n int) bool { return len(args) == n }
	wrongArgs := func() []byte {
		return fmt.Appendf(out, "-ERR wrong number of arguments for '%s' command\r\n", bytes.ToLower(args[0]))
	}
	bulk := func(v []byte) []byte {
		out = strconv.AppendInt(append(out, '$'), int64(len(v)), 10)
		out = append(append(append(out, "\r\n"...), v...), "\r\n"...)
		return out
	}
	integer := func(n int64) []byte {
		return append(strconv.AppendInt(append(out, ':'), n, 10), "\r\n"...)
	}
	switch name {
	case "PING":
		switch len(args) {
		case 1:
			return append(out, "+PONG\r\n"...)
		case 2:
			return bulk(args[1])
		}
		return wrongArgs()
	case "ECHO":
		if !arity(2) {
			return wrongArgs()
		}
		return bulk(args[1])
	case "SET":
		if !arity(3) {
			return append(out, "-ERR syntax error (the strict peer takes SET key value)\r\n"...)
		}
		store[string(args[1])] = bytes.Clone(args[2])
		return append(out, "+OK\r\n"...)
	case "GET":
		if !arity(2) {
			return wrongArgs()
		}
		v, ok := store[string(args[1])]
		if !ok {
			return append(out, "$-1\r\n"...)
		}
		return bulk(v)
	case "INCR":
		if !arity(2) {
			return wrongArgs()
		}
		var n int64
		if v, ok := store[string(args[1])]; ok {
			var err error
			if n, err = strconv.ParseInt(string(v), 10, 64); err != nil {
				return append(out, "-ERR value is not an integer or out of range\r\n"...)
			}
		}
		n++
		store[string(args[1])] = strconv.AppendInt(nil, n, 10)
		return integer(n)
	case "DEL":
		if len(args) < 2 {
			return wrongArgs()
		}
		var n int64
		for _, k := range args[1:] {
			if _, ok := store[string(k)]; ok {
				delete(store, string(k))
				n++
			}
		}
		return integer(n)
	}
	// HELLO too: the strict peer speaks RESP2 only, as a server before
	// HELLO existed, which clients such as go-redis fall back from.
	return fmt.Appendf(out, "-ERR unknown command '%s'\r\n", args[0])
}

// The peer.

// strictOptions configure a strict peer.
type strictOptions struct {
	// RxSize is the server's receive buffer, valkey's rdma-rx-size:
	// 64 KiB to 16 MiB; 0 means 1 MiB, valkey's default.
	RxSize int
	// Keepalive is the time between the server's keepalives; 0 means
	// 3 s, valkey's VALKEY_RDMA_KEEPALIVE_MS.
	Keepalive time.Duration
	// Report takes each broken rule; nil means the test's Errorf.
	Report func(*strictViolation)
	// Stalled, while true, stops the peer's handling of completions, as
	// a valkey-server busy with a slow command does: the receives the
	// client's messages take are not posted again meanwhile.
	Stalled *atomic.Bool
}

// strictStats count what a strict peer saw, over its connections.
type strictStats struct {
	Accepted     int    // connections accepted
	Closed       int    // connections the client closed (DISCONNECTED)
	Keepalives   int    // keepalives sent
	Arms         int    // the clients' RegisterXferMemory messages
	FirstLen     uint32 // the last connection's first RegisterXferMemory length
	FeatureAsks  int    // GetServerFeature requests
	FeatureBits  uint64 // the features field of the last one
	Requests     int    // requests served
	ServerRearms int    // re-arms of the server's own receive buffer
	Violations   int
}

// strictPeer listens on the test address and serves each connection as
// valkey-server 9.1.0 does, from one goroutine (valkey's event loop).
type strictPeer struct {
	t     *testing.T
	tb    *verbs.Table
	opts  strictOptions
	ch    verbs.Ptr[verbs.EventChannel]
	id    verbs.Ptr[verbs.CMID]
	addr  netip.AddrPort
	evOut verbs.Ptr[verbs.CQEventOut]
	conns map[uintptr]*strictConn // by the id's address
	store map[string][]byte       // one keyspace for every connection
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once

	mu    sync.Mutex
	stats strictStats
}

// startStrictPeer starts a strict peer on the test address (any free
// port); it closes when the test ends.
func startStrictPeer(t *testing.T, opts strictOptions) *strictPeer {
	t.Helper()
	rdmatest.Require(t)
	tb := verbs.Bound()
	if opts.RxSize == 0 {
		opts.RxSize = strictDefRx
	}
	if opts.RxSize < strictMinRx || opts.RxSize > strictMaxRx {
		t.Fatalf("strict peer: RxSize %d is outside valkey's rdma-rx-size range [%d, %d]", opts.RxSize, strictMinRx, strictMaxRx)
	}
	if opts.Keepalive == 0 {
		opts.Keepalive = 3 * time.Second
	}
	p := &strictPeer{t: t, tb: tb, opts: opts, conns: map[uintptr]*strictConn{}, store: map[string][]byte{},
		stop: make(chan struct{}), done: make(chan struct{})}
	fail := func(err error) {
		t.Helper()
		p.release()
		t.Fatalf("strict peer: %v", err)
	}
	var err error
	if p.ch, err = tb.CreateEventChannel(); err != nil {
		t.Fatalf("strict peer: %v", err)
	}
	// Non-blocking: an empty channel makes TakeCMEvent fail with EAGAIN
	// rather than hold the librdmacm thread.
	if err = unix.SetNonblock(verbs.EventChannelFD(p.ch), true); err != nil {
		fail(err)
	}
	if p.evOut, err = verbs.Alloc[verbs.CQEventOut](tb, 1); err != nil {
		fail(err)
	}
	if p.id, err = tb.CreateID(p.ch, 0, verbs.PSTCP); err != nil {
		fail(err)
	}
	sa, err := tb.Sockaddr(netip.AddrPortFrom(rdmatest.Addr(t), 0))
	if err != nil {
		fail(err)
	}
	err = tb.BindAddr(p.id, sa)
	verbs.Release(tb, sa)
	if err == nil {
		err = tb.Listen(p.id, 16)
	}
	if err != nil {
		fail(err)
	}
	p.addr, _ = verbs.CMIDAddrs(p.id)
	go p.loop()
	t.Cleanup(p.close)
	return p
}

// close stops the peer: it disconnects and frees its connections and its
// listener.
func (p *strictPeer) close() {
	p.once.Do(func() { close(p.stop) })
	<-p.done
}

// release frees the listener's resources.
func (p *strictPeer) release() {
	if !p.id.IsNil() {
		p.tb.DestroyID(p.id)
		p.id = verbs.Ptr[verbs.CMID]{}
	}
	if !p.evOut.IsNil() {
		verbs.Release(p.tb, p.evOut)
		p.evOut = verbs.Ptr[verbs.CQEventOut]{}
	}
	if !p.ch.IsNil() {
		p.tb.DestroyEventChannel(p.ch)
		p.ch = verbs.Ptr[verbs.EventChannel]{}
	}
}

// snapshot returns the counts so far.
func (p *strictPeer) snapshot() strictStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

func (p *strictPeer) count(f func(s *strictStats)) {
	p.mu.Lock()
	f(&p.stats)
	p.mu.Unlock()
}

// waitFor waits until the counts satisfy ok; a generous timeout fails the
// test rather than hang it.
func (p *strictPeer) waitFor(t *testing.T, what string, ok func(strictStats) bool) strictStats {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		s := p.snapshot()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("strict peer: still waiting for %s: %+v", what, s)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// fail reports a failure of the strict peer itself, not a rule.
func (p *strictPeer) fail(format string, args ...any) {
	p.t.Errorf("strict peer: "+format, args...)
}

// loop is the peer's event loop: rdma_cm events, each connection's
// completions, its requests and replies and its keepalive timer, then a
// wait on every file descriptor until something happens.
func (p *strictPeer) loop() {
	defer close(p.done)
	defer p.release()
	for {
		select {
		case <-p.stop:
			for k, c := range p.conns {
				if !c.dead {
					p.tb.Disconnect(c.id)
				}
				c.destroy()
				delete(p.conns, k)
			}
			return
		default:
		}
		busy := p.cmEvents()
		for _, c := range p.conns {
			if p.opts.Stalled != nil && p.opts.Stalled.Load() {
				break
			}
			if c.run() {
				busy = true
			}
		}
		if !busy {
			p.wait()
		}
	}
}

// wait sleeps until the event channel or a completion channel has
// something, the next keepalive is due, or 20 ms pass (to see stop).
func (p *strictPeer) wait() {
	fds := []unix.PollFd{{Fd: int32(verbs.EventChannelFD(p.ch)), Events: unix.POLLIN}}
	timeout := 20 * time.Millisecond
	now := time.Now()
	for _, c := range p.conns {
		fds = append(fds, unix.PollFd{Fd: int32(verbs.CompChannelFD(c.comp)), Events: unix.POLLIN})
		if c.established && !c.dead {
			timeout = min(timeout, max(c.nextKeepalive.Sub(now), 0))
		}
	}
	if _, err := unix.Poll(fds, int(timeout/time.Millisecond)); err != nil && err != unix.EINTR {
		p.fail("poll: %v", err)
	}
}

// cmEvents takes the rdma_cm events waiting; it reports whether there
// were any.
func (p *strictPeer) cmEvents() bool {
	got := false
	for {
		ev, err := p.tb.TakeCMEvent(p.ch)
		if errors.Is(err, syscall.EAGAIN) {
			return got
		}
		if err != nil {
			p.fail("%v", err)
			return got
		}
		got = true
		if ev.Event == verbs.EventConnectRequest {
			p.accept(ev.ID)
			continue
		}
		c := p.conns[ev.ID.Addr()]
		if c == nil {
			if ev.ID == p.id {
				p.fail("listener event %s", p.tb.EventStr(ev.Event))
			}
			continue
		}
		switch ev.Event {
		case verbs.EventEstablished:
			// valkey sends its RegisterXferMemory at ESTABLISHED,
			// unprompted (rdmaHandleEstablished), and starts its
			// keepalive timer.
			c.established = true
			c.nextKeepalive = time.Now().Add(p.opts.Keepalive)
			c.sendCtl(strictMemCmd(uint64(unsafeptr.Addr(c.rx)), c.st.rxLen, c.rxMR.Get().RKey))
		case verbs.EventDisconnected, verbs.EventTimewaitExit, verbs.EventAddrChange, verbs.EventDeviceRemoval,
			verbs.EventConnectError, verbs.EventRejected, verbs.EventUnreachable:
			// What came before the disconnect is handled before the
			// connection goes, so that a rule broken just before the
			// close is still seen.
			c.closing = true
			c.run()
			if !c.dead && ev.Event == verbs.EventDisconnected {
				p.count(func(s *strictStats) { s.Closed++ })
			}
			c.destroy()
			delete(p.conns, ev.ID.Addr())
		}
	}
}

// accept makes a connection's resources and accepts it, as valkey's
// rdmaHandleConnect does.
func (p *strictPeer) accept(id verbs.Ptr[verbs.CMID]) {
	c, err := p.newConn(id)
	if err != nil {
		p.fail("setting up a connection: %v", err)
		p.tb.Reject(id)
		p.tb.DestroyID(id)
		return
	}
	param, pp, err := verbs.New[verbs.ConnParam](p.tb)
	if err == nil {
		// valkey's values; it leaves rnr_retry_count at 0.
		*param = verbs.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 5}
		err = p.tb.Accept(id, pp)
		verbs.Release(p.tb, pp)
	}
	if err != nil {
		p.fail("accept: %v", err)
		c.destroy()
		return
	}
	p.conns[id.Addr()] = c
	p.count(func(s *strictStats) { s.Accepted++ })
}

// strictConn is one connection of the strict peer.
type strictConn struct {
	p      *strictPeer
	id     verbs.Ptr[verbs.CMID]
	pd     verbs.Ptr[verbs.PD]
	comp   verbs.Ptr[verbs.CompChannel]
	cq     verbs.Ptr[verbs.CQ]
	ops    *verbs.ContextOps
	hasQP  bool
	cmd    []byte // 2 × 1024 slots of 32 bytes: receives, then sends
	cmdMR  verbs.Ptr[verbs.MR]
	rx     []byte // the server's receive buffer
	rxMR   verbs.Ptr[verbs.MR]
	tx     []byte // staging for writes into the client's buffer, of its length
	txMR   verbs.Ptr[verbs.MR]
	sendWR verbs.Ptr[verbs.SendWR]
	recvWR verbs.Ptr[verbs.RecvWR]
	sge    verbs.Ptr[verbs.SGE]
	badWR  verbs.Ptr[verbs.BadWR]
	wcs    verbs.Ptr[verbs.WC]

	st            *strictState
	established   bool
	dead          bool // a rule broken: disconnected, the rest ignored
	closing       bool // the client disconnected
	nextKeepalive time.Time
	ctlBusy       [strictWQE]bool // control-send slots in flight
	sqPosted      uint64          // send work requests posted
	sqDone        uint64          // ... and known complete
	writes        uint64          // RDMA writes posted
	query         []byte          // request bytes copied out, not yet parsed
	out           []byte          // reply bytes not yet written
}

const (
	strictWCs     = 64
	strictRecvTag = 1 << 63
	strictNoSlot  = 0xffff
)

func (p *strictPeer) newConn(id verbs.Ptr[verbs.CMID]) (_ *strictConn, err error) {
	tb := p.tb
	c := &strictConn{p: p, id: id, st: newStrictState(uint32(p.opts.RxSize))}
	defer func() {
		if err != nil {
			c.free() // the caller rejects the id and destroys it
		}
	}()
	ctx := verbs.IDContext(id)
	if c.pd, err = tb.AllocPD(ctx); err != nil {
		return nil, err
	}
	if c.comp, err = tb.CreateCompChannel(ctx); err != nil {
		return nil, err
	}
	if err = unix.SetNonblock(verbs.CompChannelFD(c.comp), true); err != nil {
		return nil, err
	}
	if c.cq, err = tb.CreateCQ(ctx, 2*strictWQE, 0, c.comp, 0); err != nil {
		return nil, err
	}
	c.ops = verbs.CQOps(c.cq)
	if e := verbs.ReqNotifyCQ(c.ops, c.cq, false); e != 0 {
		return nil, e
	}
	attr, ap, err := verbs.New[verbs.QPInitAttr](tb)
	if err != nil {
		return nil, err
	}
	*attr = verbs.QPInitAttr{SendCQ: c.cq, RecvCQ: c.cq, QPType: verbs.QPTypeRC,
		Cap: verbs.QPCap{MaxSendWR: strictWQE, MaxRecvWR: strictWQE, MaxSendSGE: 1, MaxRecvSGE: 1}}
	err = tb.CreateQP(id, c.pd, ap)
	verbs.Release(tb, ap)
	if err != nil {
		return nil, err
	}
	c.hasQP = true
	if c.cmd, c.cmdMR, err = c.register(2*strictWQE*strictCmdSize, verbs.AccessLocalWrite); err != nil {
		return nil, err
	}
	if c.rx, c.rxMR, err = c.register(p.opts.RxSize, verbs.AccessLocalWrite|verbs.AccessRemoteWrite|verbs.AccessRemoteRead); err != nil {
		return nil, err
	}
	if c.sendWR, err = verbs.Alloc[verbs.SendWR](tb, 1); err != nil {
		return nil, err
	}
	if c.recvWR, err = verbs.Alloc[verbs.RecvWR](tb, 1); err != nil {
		return nil, err
	}
	if c.sge, err = verbs.Alloc[verbs.SGE](tb, 1); err != nil {
		return nil, err
	}
	if c.badWR, err = verbs.Alloc[verbs.BadWR](tb, 1); err != nil {
		return nil, err
	}
	if c.wcs, err = verbs.Alloc[verbs.WC](tb, strictWCs); err != nil {
		return nil, err
	}
	// Every receive is posted before the accept, as valkey does.
	for i := range strictWQE {
		if err := c.postRecv(i); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// register maps and registers n bytes.
func (c *strictConn) register(n, access int) ([]byte, verbs.Ptr[verbs.MR], error) {
	b, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, verbs.Ptr[verbs.MR]{}, err
	}
	mr, err := c.p.tb.RegMR(c.pd, unsafeptr.Addr(b), uintptr(n), access)
	if err != nil {
		unix.Munmap(b)
		return nil, mr, err
	}
	return b, mr, nil
}

// destroy frees the connection's resources and its id.
func (c *strictConn) destroy() {
	id := c.id
	c.free()
	if !id.IsNil() {
		c.p.tb.DestroyID(id)
	}
}

// free frees the connection's resources but its id: the QP before the CQ.
func (c *strictConn) free() {
	tb := c.p.tb
	if c.hasQP {
		tb.DestroyQP(c.id)
		c.hasQP = false
	}
	if !c.cq.IsNil() {
		tb.DestroyCQ(c.cq)
	}
	if !c.comp.IsNil() {
		tb.DestroyCompChannel(c.comp)
	}
	for _, m := range []struct {
		b  []byte
		mr verbs.Ptr[verbs.MR]
	}{{c.cmd, c.cmdMR}, {c.rx, c.rxMR}, {c.tx, c.txMR}} {
		if !m.mr.IsNil() {
			tb.DeregMR(m.mr)
		}
		if m.b != nil {
			unix.Munmap(m.b)
		}
	}
	verbs.Release(tb, c.wcs)
	verbs.Release(tb, c.badWR)
	verbs.Release(tb, c.sge)
	verbs.Release(tb, c.recvWR)
	verbs.Release(tb, c.sendWR)
	if !c.pd.IsNil() {
		tb.DeallocPD(c.pd)
	}
	*c = strictConn{p: c.p, dead: true}
}

// violate reports a broken rule and closes the connection, as valkey does
// (or would, had it not crashed).
func (c *strictConn) violate(err error) {
	v, ok := err.(*strictViolation)
	if !ok {
		c.p.fail("%v", err)
		return
	}
	if c.dead {
		return
	}
	c.p.count(func(s *strictStats) { s.Violations++ })
	if r := c.p.opts.Report; r != nil {
		r(v)
	} else {
		c.p.t.Errorf("%v", v)
	}
	c.dead = true
	c.p.tb.Disconnect(c.id)
}

func (c *strictConn) postRecv(slot int) error {
	*c.sge.Get() = verbs.SGE{Addr: uint64(unsafeptr.Addr(c.cmd)) + uint64(slot*strictCmdSize), Length: strictCmdSize, LKey: c.cmdMR.Get().LKey}
	*c.recvWR.Get() = verbs.RecvWR{WRID: strictRecvTag | uint64(slot), SGList: c.sge, NumSGE: 1}
	if e := verbs.PostRecv(c.ops, verbs.IDQP(c.id), c.recvWR, c.badWR); e != 0 {
		return fmt.Errorf("post_recv: %w", e)
	}
	return nil
}

// post posts one send work request: a SEND from control slot slot, or
// (slot strictNoSlot) an RDMA_WRITE_WITH_IMM of n staged bytes at off.
func (c *strictConn) post(slot int, off, n uint32, signaled bool) {
	wr := c.sendWR.Get()
	if slot != strictNoSlot {
		*c.sge.Get() = verbs.SGE{Addr: uint64(unsafeptr.Addr(c.cmd)) + uint64(slot*strictCmdSize), Length: strictCmdSize, LKey: c.cmdMR.Get().LKey}
		*wr = verbs.SendWR{Opcode: verbs.WRSend}
	} else {
		*c.sge.Get() = verbs.SGE{Addr: uint64(unsafeptr.Addr(c.tx)) + uint64(off), Length: n, LKey: c.txMR.Get().LKey}
		*wr = verbs.SendWR{Opcode: verbs.WRRDMAWriteWithImm, ImmData: netOrder(n),
			RemoteAddr: c.st.txAddr + uint64(off), RKey: c.st.txKey}
	}
	wr.WRID = uint64(slot)<<48 | c.sqPosted
	wr.SGList, wr.NumSGE = c.sge, 1
	if signaled {
		wr.SendFlags = verbs.SendSignaled
	}
	if e := verbs.PostSend(c.ops, verbs.IDQP(c.id), c.sendWR, c.badWR); e != 0 {
		c.p.fail("post_send: %v", e)
		c.dead = true
		c.p.tb.Disconnect(c.id)
		return
	}
	c.sqPosted++
}

// sendCtl sends a control message from a free slot, as valkey's
// rdmaSendCommand does (which asserts that there is one).
func (c *strictConn) sendCtl(msg []byte) {
	if c.dead || c.closing {
		return
	}
	slot := -1
	for i, busy := range c.ctlBusy {
		if !busy {
			slot = i
			break
		}
	}
	if slot < 0 || c.sqPosted-c.sqDone >= strictWQE {
		c.violate(&strictViolation{ruleCtlSlots, fmt.Sprintf("%d of the server's control messages and %d of its send work requests are in flight (valkey asserts in rdmaSendCommand, or its post_send fails and the connection closes)", strictWQE, c.sqPosted-c.sqDone)})
		return
	}
	c.ctlBusy[slot] = true
	copy(c.cmd[(strictWQE+slot)*strictCmdSize:], msg)
	c.post(strictWQE+slot, 0, 0, true)
}

// run handles what the connection has to do now; it reports whether it
// did anything.
func (c *strictConn) run() (busy bool) {
	tb := c.p.tb
	if c.cq.IsNil() {
		return false
	}
	// Take the channel's events and re-arm the CQ before polling it: a
	// completion after the poll then wakes the next wait.
	for {
		if _, e := tb.GetCQEventInto(c.comp, c.p.evOut); e != 0 {
			break
		}
		tb.AckCQEvents(c.cq, 1)
		verbs.ReqNotifyCQ(c.ops, c.cq, false)
	}
	for {
		n := verbs.PollCQ(c.ops, c.cq, strictWCs, c.wcs)
		if n < 0 {
			c.p.fail("poll_cq: %d", n)
			c.dead = true
			return busy
		}
		if n == 0 {
			break
		}
		busy = true
		for _, wc := range c.wcs.Slice(n) {
			c.handle(wc)
		}
	}
	if c.dead || c.closing {
		return busy
	}
	if c.serve() {
		busy = true
	}
	if c.flush() {
		busy = true
	}
	if c.established && !time.Now().Before(c.nextKeepalive) {
		c.sendCtl(cmdBytes(2))
		c.p.count(func(s *strictStats) { s.Keepalives++ })
		c.nextKeepalive = time.Now().Add(c.p.opts.Keepalive)
	}
	return busy
}

// IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_ACCESS_ERR, IBV_WC_REM_OP_ERR.
const (
	strictWCRemInvReq = 9
	strictWCRemAccess = 10
	strictWCRemOp     = 11
)

// handle handles one completion, as valkey's connRdmaHandleCq does, with
// the rules checked.
func (c *strictConn) handle(wc verbs.WC) {
	if wc.WRID&strictRecvTag == 0 {
		// Sends complete in order: everything up to this one is done.
		c.sqDone = max(c.sqDone, wc.WRID&(1<<48-1)+1)
		if slot := int(wc.WRID >> 48); slot != strictNoSlot {
			c.ctlBusy[slot-strictWQE] = false
		}
	}
	if c.dead {
		return
	}
	if wc.Status != verbs.WCSuccess {
		// A flush is the QP going down with a disconnect, which the
		// rdma_cm event that follows handles; once the client has
		// disconnected, what failed is nobody's fault.
		if wc.Status == verbs.WCWRFlushErr || c.closing {
			return
		}
		what := fmt.Sprintf("%s (status %d)", c.p.tb.WCStatusStr(wc.Status), wc.Status)
		switch {
		case wc.WRID&strictRecvTag != 0:
			// The opcode of a failed completion is undefined: the
			// wr_id says it was a receive. Hardware says
			// IBV_WC_LOC_LEN_ERR for a SEND longer than the slot;
			// soft-RoCE, "local QP operation error".
			c.violate(&strictViolation{ruleCmdSize, "a receive failed: " + what + ", as a SEND longer than the 32-byte slot makes it"})
		case wc.Status == verbs.WCRNRRetryExcErr:
			c.violate(&strictViolation{ruleRecvPosted, "a send of the server's found no receive posted: " + what})
		case wc.Status == strictWCRemAccess || wc.Status == strictWCRemInvReq || wc.Status == strictWCRemOp:
			c.violate(&strictViolation{ruleRemoteBuf, fmt.Sprintf("a write of the server's into the client's advertised buffer (addr %#x, length %d, rkey %#x) failed: %s", c.st.txAddr, c.st.txLen, c.st.txKey, what)})
		case wc.Status == verbs.WCRetryExcErr:
			c.violate(&strictViolation{ruleCleanClose, "the client stopped answering without a disconnect: " + what})
		default:
			c.violate(&strictViolation{ruleRemoteBuf, "a send of the server's failed: " + what})
		}
		return
	}
	if wc.WRID&strictRecvTag == 0 {
		return
	}
	slot := int(wc.WRID &^ strictRecvTag)
	switch wc.Opcode {
	case verbs.WCRecv:
		b := c.cmd[slot*strictCmdSize : (slot+1)*strictCmdSize]
		answer, err := c.st.control(wc.ByteLen, b)
		if err != nil {
			c.violate(err)
			return
		}
		switch binary.BigEndian.Uint16(b) {
		case 0:
			c.p.count(func(s *strictStats) { s.FeatureAsks++; s.FeatureBits = binary.BigEndian.Uint64(b[24:]) })
		case 3:
			c.p.count(func(s *strictStats) { s.Arms++; s.FirstLen = c.st.first })
			if c.tx == nil {
				// valkey's staging buffer, of the client's length
				// (rdmaAdjustSendbuf); the length never changes
				// without a broken rule.
				var err error
				if c.tx, c.txMR, err = c.register(int(c.st.txLen), verbs.AccessLocalWrite); err != nil {
					c.p.fail("staging buffer of %d bytes: %v", c.st.txLen, err)
					c.dead = true
					c.p.tb.Disconnect(c.id)
					return
				}
			}
		}
		if answer != nil {
			c.sendCtl(answer)
		}
	case verbs.WCRecvRDMAWithImm:
		if err := c.st.written(wc.WCFlags&verbs.WCWithImm != 0, netOrder(wc.ImmData), wc.ByteLen); err != nil {
			c.violate(err)
			return
		}
	default:
		c.p.fail("unexpected receive completion opcode %d", wc.Opcode)
		return
	}
	if err := c.postRecv(slot); err != nil {
		c.p.fail("%v", err)
	}
}

// serve copies out what the client wrote, re-arms the receive buffer once
// it has been read whole, and runs the complete requests.
func (c *strictConn) serve() bool {
	lo, hi, rearm := c.st.take()
	if lo == hi && !rearm {
		return false
	}
	c.query = append(c.query, c.rx[lo:hi]...)
	if rearm {
		// Same address, length and key: valkey's connRdmaRegisterRx.
		c.sendCtl(strictMemCmd(uint64(unsafeptr.Addr(c.rx)), c.st.rxLen, c.rxMR.Get().RKey))
		c.p.count(func(s *strictStats) { s.ServerRearms++ })
	}
	pos, served := 0, 0
	for {
		args, n, err := parseRESP(c.query[pos:])
		if err != nil {
			c.violate(&strictViolation{ruleRESP, fmt.Sprintf("%v, at byte %d of %q (valkey replies with a protocol error and closes the connection)", err, pos, clip(c.query[pos:], 64))})
			return true
		}
		if n == 0 {
			break
		}
		pos += n
		if args != nil {
			c.out = strictExec(c.p.store, args, c.out)
			served++
		}
	}
	c.query = c.query[:copy(c.query, c.query[pos:])]
	c.p.count(func(s *strictStats) { s.Requests += served })
	return true
}

func clip(b []byte, n int) []byte { return b[:min(len(b), n)] }

// flush writes pending replies into the client's buffer, as much as it
// has room for: each an RDMA_WRITE_WITH_IMM at tx_addr+offset whose
// immediate is its byte count, every 512th signaled, as valkey's
// connRdmaSend does. Once the buffer is full it waits for the client's
// next RegisterXferMemory.
func (c *strictConn) flush() bool {
	busy := false
	for len(c.out) > 0 && c.st.room() > 0 && c.tx != nil {
		// Keep send-queue room for control messages; a signaled write
		// among those in flight frees it.
		if c.sqPosted-c.sqDone >= strictWQE-64 {
			break
		}
		n := min(c.st.room(), uint32(len(c.out)))
		off := c.st.txOff
		copy(c.tx[off:], c.out[:n])
		c.writes++
		c.post(strictNoSlot, off, n, c.writes%strictSignalEv == 0)
		if c.dead {
			return true
		}
		c.st.sent(n)
		c.out = c.out[n:]
		busy = true
	}
	if len(c.out) == 0 {
		c.out = nil
	}
	return busy
}
