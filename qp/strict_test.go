//go:build unix

package qp_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/qp"
)

// The TestStrictPeer* tests run our client against the strict peer
// (strictpeer_test.go), valkey-server's side of the protocol with valkey's
// rules as test failures, on a real device (in the VM; on the host they
// skip). The TestStrictRules* tests feed the peer's rule checks by hand,
// without a device.

// strictSetup starts a strict peer and checks, once the test and the peer
// are done, that no RDMA object is left behind (the client's clean close
// included).
func strictSetup(t *testing.T, opts strictOptions) *strictPeer {
	t.Helper()
	rdmatest.Require(t)
	before := rdmatest.Resources(t)
	t.Cleanup(func() {
		// The client's reactor may free its CQ just after its last
		// connection closes: wait for the counts rather than sample them.
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			after, more := rdmatest.Resources(t), false
			for _, k := range []string{"pd", "cq", "qp", "mr", "cm_id"} {
				more = more || after[k] > before[k]
			}
			if !more {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		rdmatest.CheckNoLeaks(t, before)
	})
	return startStrictPeer(t, opts)
}

// strictClient is a RESP client over one of our connections.
type strictClient struct {
	t *testing.T
	c *qp.Conn
	r *bufio.Reader
}

func dialStrict(t *testing.T, p *strictPeer, opts *qp.Options) *strictClient {
	t.Helper()
	c, err := qp.Dial(ctxT(t), p.addr.String(), opts)
	if err != nil {
		t.Fatalf("Dial to the strict peer: %v", err)
	}
	// A test that fails before its own Close still closes the
	// connection, before the leak check.
	t.Cleanup(func() { c.Close() })
	// Fail rather than hang (a broken rule closes the connection, which
	// ends a wait anyway).
	c.SetDeadline(time.Now().Add(3 * time.Minute))
	return &strictClient{t: t, c: c, r: bufio.NewReaderSize(c, 64<<10)}
}

// strictRequest encodes a request as an array of bulk strings.
func strictRequest(args ...[]byte) []byte {
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n", len(a))
		b = append(append(b, a...), "\r\n"...)
	}
	return b
}

// do sends one request and returns the reply's type byte and value.
func (sc *strictClient) do(args ...[]byte) (byte, []byte) {
	sc.t.Helper()
	if _, err := sc.c.Write(strictRequest(args...)); err != nil {
		sc.t.Fatalf("writing %s: %v", args[0], err)
	}
	return sc.reply()
}

func (sc *strictClient) doS(args ...string) (byte, []byte) {
	sc.t.Helper()
	b := make([][]byte, len(args))
	for i, a := range args {
		b[i] = []byte(a)
	}
	return sc.do(b...)
}

// reply reads one reply: '+', '-' or ':' and the line, or '$' and the
// bulk string (nil for a null one).
func (sc *strictClient) reply() (byte, []byte) {
	sc.t.Helper()
	line, err := sc.r.ReadSlice('\n')
	if err != nil || len(line) < 3 {
		sc.t.Fatalf("reading a reply: %q, %v", line, err)
	}
	kind, rest := line[0], string(line[1:len(line)-2])
	if kind != '$' {
		return kind, []byte(rest)
	}
	n, err := strconv.Atoi(rest)
	if err != nil {
		sc.t.Fatalf("bulk length %q", rest)
	}
	if n < 0 {
		return kind, nil
	}
	b := make([]byte, n+2)
	if _, err := io.ReadFull(sc.r, b); err != nil {
		sc.t.Fatalf("reading a bulk string of %d bytes: %v", n, err)
	}
	return kind, b[:n]
}

// expect checks a reply.
func (sc *strictClient) expect(what string, kind byte, val []byte, wantKind byte, want string) {
	sc.t.Helper()
	if kind != wantKind || string(val) != want {
		sc.t.Fatalf("%s: reply %c%q, want %c%q", what, kind, clip(val, 80), wantKind, want)
	}
}

// close closes the client and waits until the peer has seen the
// disconnect: n connections closed by the client in all.
func (sc *strictClient) close(p *strictPeer, n int) {
	sc.t.Helper()
	if err := sc.c.Close(); err != nil {
		sc.t.Errorf("Close: %v", err)
	}
	p.waitFor(sc.t, "the client's disconnect", func(s strictStats) bool { return s.Closed >= n })
}

// checkRearmed fails the test unless the client re-armed its receive
// buffer: without a re-arm, the length rule was never put to the test.
func checkRearmed(t *testing.T, s strictStats) {
	t.Helper()
	if s.Arms < 2 {
		t.Errorf("the client sent %d RegisterXferMemory messages, want a re-arm after the first", s.Arms)
	}
}

// setGet stores values of each size and reads each back, byte for byte.
func setGet(t *testing.T, sc *strictClient, sizes []int) {
	t.Helper()
	for i, size := range sizes {
		key := []byte("value:" + strconv.Itoa(size))
		val := randBytes(size, uint64(i+1))
		kind, got := sc.do([]byte("SET"), key, val)
		sc.expect(fmt.Sprintf("SET of %d bytes", size), kind, got, '+', "OK")
		kind, got = sc.do([]byte("GET"), key)
		if kind != '$' || !bytes.Equal(got, val) {
			t.Fatalf("GET of a %d-byte value: reply %c of %d bytes, differs from what was set", size, kind, len(got))
		}
	}
}

// TestStrictPeerDefaultOptions: our client with default options keeps
// valkey's rules while it stores and reads back values of 1 B to 16 MiB
// (16 MiB is valkey's largest receive buffer; every value past 64 KiB
// takes more than one fill of the client's buffer, each followed by a
// re-arm), then closes cleanly.
func TestStrictPeerDefaultOptions(t *testing.T) {
	p := strictSetup(t, strictOptions{})
	sc := dialStrict(t, p, nil)
	kind, got := sc.doS("PING")
	sc.expect("PING", kind, got, '+', "PONG")
	kind, got = sc.doS("ECHO", "strict")
	sc.expect("ECHO", kind, got, '$', "strict")
	sizes := []int{1, 4 << 10, 64 << 10, 1 << 20, 4 << 20, 16 << 20}
	setGet(t, sc, sizes)
	args := [][]byte{[]byte("DEL")}
	for _, size := range sizes {
		args = append(args, []byte("value:"+strconv.Itoa(size)))
	}
	kind, got = sc.do(args...)
	sc.expect("DEL", kind, got, ':', strconv.Itoa(len(sizes)))
	sc.close(p, 1)
	s := p.snapshot()
	checkRearmed(t, s)
	t.Logf("the client advertised %d bytes, in %d RegisterXferMemory messages; it asked for features %d times (%#x); the server re-armed %d times",
		s.FirstLen, s.Arms, s.FeatureAsks, s.FeatureBits, s.ServerRearms)
}

// TestStrictPeerPipeline: 10,000 INCRs written in one go, into a server
// receive buffer of 64 KiB (valkey's smallest rdma-rx-size), so that the
// requests take several fills of it and some straddle two; then every
// reply, in order.
func TestStrictPeerPipeline(t *testing.T) {
	const rx, n = 64 << 10, 10000
	p := strictSetup(t, strictOptions{RxSize: rx})
	sc := dialStrict(t, p, nil)
	one := strictRequest([]byte("INCR"), []byte("counter"))
	reqs := bytes.Repeat(one, n)
	werr := make(chan error, 1)
	go func() {
		_, err := sc.c.Write(reqs) // the replies come while it goes on
		werr <- err
	}()
	for i := 1; i <= n; i++ {
		kind, got := sc.reply()
		if kind != ':' || string(got) != strconv.Itoa(i) {
			t.Fatalf("reply %d of %d: %c%q, want :%d", i, n, kind, got, i)
		}
	}
	if err := <-werr; err != nil {
		t.Fatalf("writing %d INCRs: %v", n, err)
	}
	kind, got := sc.doS("GET", "counter")
	sc.expect("GET counter", kind, got, '$', strconv.Itoa(n))
	sc.close(p, 1)
	s := p.snapshot()
	if s.Requests != n+1 {
		t.Errorf("the peer served %d requests, want %d", s.Requests, n+1)
	}
	if fills := len(reqs) / rx; s.ServerRearms < fills {
		t.Errorf("the server re-armed its buffer %d times for %d bytes of requests, want at least %d", s.ServerRearms, len(reqs), fills)
	}
	t.Logf("%d bytes of requests took %d fills of the server's %d-byte buffer", len(reqs), s.ServerRearms, rx)
}

// TestStrictPeerIdle: a connection left idle for several of the server's
// keepalive intervals at a time goes on working, and the keepalives it
// took in between break nothing.
func TestStrictPeerIdle(t *testing.T) {
	p := strictSetup(t, strictOptions{Keepalive: 100 * time.Millisecond})
	sc := dialStrict(t, p, nil)
	kind, got := sc.doS("PING")
	sc.expect("PING", kind, got, '+', "PONG")
	for round := range 3 {
		// Idle until five more keepalives have gone out, however long
		// that takes under emulation.
		k := p.snapshot().Keepalives
		p.waitFor(t, "five keepalives", func(s strictStats) bool { return s.Keepalives >= k+5 })
		val := randBytes(10<<10, uint64(round))
		key := []byte("idle:" + strconv.Itoa(round))
		kind, got := sc.do([]byte("SET"), key, val)
		sc.expect("SET after idling", kind, got, '+', "OK")
		if kind, got = sc.do([]byte("GET"), key); kind != '$' || !bytes.Equal(got, val) {
			t.Fatalf("round %d: GET after idling: reply %c of %d bytes, differs", round, kind, len(got))
		}
		kind, got = sc.doS("PING")
		sc.expect("PING after idling", kind, got, '+', "PONG")
	}
	sc.close(p, 1)
	t.Logf("%d keepalives sent", p.snapshot().Keepalives)
}

// TestStrictPeerSequential: connections one after another, each closed
// cleanly (the peer sees its disconnect) before the next; the keyspace is
// the server's, so each sees the last one's writes.
func TestStrictPeerSequential(t *testing.T) {
	const conns = 5
	p := strictSetup(t, strictOptions{})
	for i := range conns {
		sc := dialStrict(t, p, nil)
		kind, got := sc.doS("INCR", "connections")
		sc.expect("INCR", kind, got, ':', strconv.Itoa(i+1))
		if i > 0 {
			kind, got = sc.doS("GET", "last")
			sc.expect("GET last", kind, got, '$', strconv.Itoa(i-1))
		}
		kind, got = sc.doS("SET", "last", strconv.Itoa(i))
		sc.expect("SET last", kind, got, '+', "OK")
		setGet(t, sc, []int{1 << 10})
		sc.close(p, i+1)
	}
	if s := p.snapshot(); s.Accepted != conns || s.Closed != conns {
		t.Errorf("the peer accepted %d connections and saw %d closed by the client, want %d and %d", s.Accepted, s.Closed, conns, conns)
	}
}

// TestStrictPeerSmallRecvBuffer: with the smallest receive buffer (4 KiB)
// a 1 MiB value takes 256 fills and re-arms of it.
func TestStrictPeerSmallRecvBuffer(t *testing.T) {
	p := strictSetup(t, strictOptions{})
	sc := dialStrict(t, p, &qp.Options{RecvBufferSize: 4 << 10})
	setGet(t, sc, []int{1, 4 << 10, 64 << 10, 1 << 20})
	sc.close(p, 1)
	s := p.snapshot()
	checkRearmed(t, s)
	t.Logf("the client advertised %d bytes, in %d RegisterXferMemory messages", s.FirstLen, s.Arms)
}

// TestStrictPeerLargeRecvBuffer: with a receive buffer of 16 MiB, valkey's
// largest, values up to 16 MiB.
func TestStrictPeerLargeRecvBuffer(t *testing.T) {
	p := strictSetup(t, strictOptions{})
	sc := dialStrict(t, p, &qp.Options{RecvBufferSize: 16 << 20})
	setGet(t, sc, []int{1, 64 << 10, 1 << 20, 16 << 20})
	sc.close(p, 1)
	s := p.snapshot()
	checkRearmed(t, s)
	t.Logf("the client advertised %d bytes, in %d RegisterXferMemory messages", s.FirstLen, s.Arms)
}

// TestStrictPeerCatchesBrokenRules: the strict peer on the device, fed by
// a raw client that breaks one rule per connection, names each: whatever
// our client does, the peer is shown to see it.
func TestStrictPeerCatchesBrokenRules(t *testing.T) {
	got := make(chan *strictViolation, 16)
	p := strictSetup(t, strictOptions{Keepalive: time.Minute, Report: func(v *strictViolation) { got <- v }})
	tb := verbs.Bound()
	send := func(rp *rawPeer, msg []byte) {
		t.Helper()
		rp.post(verbs.WRSend, msg, 0)
		if wc := rp.poll(); wc.Status != 0 || wc.Opcode != verbs.WCSend {
			t.Fatalf("raw client: send completion status %d opcode %d", wc.Status, wc.Opcode)
		}
	}
	write := func(rp *rawPeer, data string, imm uint32) {
		t.Helper()
		rp.post(verbs.WRRDMAWriteWithImm, []byte(data), imm)
		if wc := rp.poll(); wc.Status != 0 || wc.Opcode != verbs.WCRDMAWrite {
			t.Fatalf("raw client: write completion status %d opcode %d", wc.Status, wc.Opcode)
		}
	}
	// The raw client's own buffer, as it would advertise it: the peer
	// writes nothing in these cases.
	mem := func(rp *rawPeer, length uint32) []byte {
		return strictMemCmd(uint64(rp.mr.Addr), length, rp.mr.RKey)
	}
	cases := []struct {
		name string
		act  func(rp *rawPeer)
		want string
	}{
		{"length change", func(rp *rawPeer) { send(rp, mem(rp, 4096)); send(rp, mem(rp, 8192)) }, ruleSameLen},
		{"re-arm before the server filled the buffer", func(rp *rawPeer) { send(rp, mem(rp, 4096)); send(rp, mem(rp, 4096)) }, ruleRearmFull},
		{"length 0", func(rp *rawPeer) { send(rp, mem(rp, 0)) }, ruleLenRange},
		{"length above 16 MiB", func(rp *rawPeer) { send(rp, mem(rp, 16<<20+1)) }, ruleLenRange},
		{"SetClientFeature of a feature not offered", func(rp *rawPeer) { send(rp, strictFeatureCmd(1, 0, strictFeatureNewLength)) }, ruleFeature},
		{"feature request answered, then an unknown opcode", func(rp *rawPeer) {
			// The request's features field is the client's business:
			// the answer echoes the select and offers nothing, and the
			// first rule reported is the opcode's that follows.
			// The answer may complete before the request's send does.
			rp.post(verbs.WRSend, strictFeatureCmd(0, 7, strictFeatureNewLength), 0)
			var b []byte
			for sent := false; !sent || b == nil; {
				switch wc := rp.poll(); {
				case wc.Status == 0 && wc.Opcode == verbs.WCSend:
					sent = true
				case wc.Status == 0 && wc.Opcode == verbs.WCRecv:
					b = append([]byte(nil), rp.buf[wc.WRID*32:wc.WRID*32+32]...)
					rp.postRecv(int(wc.WRID))
				default:
					t.Fatalf("raw client: completion status %d opcode %d", wc.Status, wc.Opcode)
				}
			}
			if op, sel, f := binary.BigEndian.Uint16(b), binary.BigEndian.Uint16(b[2:]), binary.BigEndian.Uint64(b[24:]); op != 0 || sel != 7 || f != 0 {
				t.Errorf("answer to GetServerFeature: opcode %d select %d features %#x, want 0, 7, 0", op, sel, f)
			}
			send(rp, cmdBytes(9))
		}, ruleOpcode},
		{"short control message", func(rp *rawPeer) { send(rp, make([]byte, 16)) }, ruleCmdSize},
		// Its send fails at the raw client too: not waited for.
		{"long control message", func(rp *rawPeer) { rp.post(verbs.WRSend, make([]byte, 64), 0) }, ruleCmdSize},
		{"overrun", func(rp *rawPeer) { write(rp, "", rp.length+1) }, ruleOverrun},
		{"immediate other than the byte count", func(rp *rawPeer) { write(rp, "PING\r\n", 4) }, ruleImm},
		{"not RESP", func(rp *rawPeer) { write(rp, "*x\r\n", 4) }, ruleRESP},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Silent until ESTABLISHED's RegisterXferMemory has come:
			// dialRaw's first message may complete after it, which
			// dialRaw does not expect of a peer that speaks first.
			rp := dialRawFirst(t, tb, p.addr, nil)
			defer rp.close()
			tc.act(rp)
			select {
			case v := <-got:
				if v.Rule != tc.want {
					t.Fatalf("reported %v; want the rule %q", v, tc.want)
				}
				t.Logf("as expected: %v", v)
			case <-time.After(30 * time.Second):
				t.Fatalf("no rule reported, want %q", tc.want)
			}
		})
	}
	if s := p.snapshot(); s.Violations != len(cases) {
		t.Errorf("%d rules reported for %d cases", s.Violations, len(cases))
	}
}

// Without a device: the rule checks, fed by hand.

// strictErr checks that err is a broken rule, the one named (or none, for
// "").
func strictErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	var v *strictViolation
	switch {
	case want == "" && err != nil:
		t.Fatalf("%s: %v, want no broken rule", what, err)
	case want == "":
	case !errors.As(err, &v):
		t.Fatalf("%s: %v, want the rule %q broken", what, err, want)
	case v.Rule != want:
		t.Fatalf("%s: %v, want the rule %q broken", what, err, want)
	}
}

// TestStrictRulesLengthChange: the bug the strict peer is for. A client
// that re-advertises its grown buffer with a new length is caught at the
// RegisterXferMemory that would crash valkey-server; one that keeps its
// first length (at a new address, even) is not. The GetServerFeature it
// may send first is answered with no features, whatever it asks.
func TestStrictRulesLengthChange(t *testing.T) {
	const addr, key = 0x7f0000001000, 0x1234
	for _, tc := range []struct {
		name    string
		lengths []uint32 // successive RegisterXferMemory lengths, each after a fill
		want    string   // the rule the last one breaks
	}{
		{"growing buffer", []uint32{64 << 10, 256 << 10}, ruleSameLen},
		{"shrinking buffer", []uint32{1 << 20, 1 << 20, 256 << 10}, ruleSameLen},
		{"kept length", []uint32{64 << 10, 64 << 10, 64 << 10}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStrictState(1 << 20)
			ask := strictFeatureCmd(0, 0, strictFeatureNewLength)
			answer, err := s.control(32, ask)
			strictErr(t, "GetServerFeature asking for a length change", err, "")
			if op, f := binary.BigEndian.Uint16(answer), binary.BigEndian.Uint64(answer[24:]); op != 0 || f != 0 {
				t.Fatalf("answer: opcode %d features %#x, want 0 and none", op, f)
			}
			_, err = s.control(32, strictFeatureCmd(1, 0, 0))
			strictErr(t, "SetClientFeature of nothing", err, "")
			for i, l := range tc.lengths {
				if i > 0 {
					s.sent(s.room()) // the server fills the buffer; the client reads it and re-arms
				}
				_, err = s.control(32, strictMemCmd(addr+uint64(i)<<20, l, key+uint32(i)))
				want := ""
				if i == len(tc.lengths)-1 {
					want = tc.want
				}
				strictErr(t, fmt.Sprintf("RegisterXferMemory %d of %d bytes", i+1, l), err, want)
			}
			if err != nil {
				if !strings.Contains(err.Error(), "SIGSEGV") {
					t.Errorf("the failure does not say what valkey does: %v", err)
				}
				t.Logf("as expected: %v", err)
			}
		})
	}
}

// TestStrictRulesControl: each control message a client must not send,
// after a first RegisterXferMemory of 64 KiB.
func TestStrictRulesControl(t *testing.T) {
	for _, tc := range []struct {
		name    string
		byteLen uint32
		msg     []byte
		want    string
	}{
		{"keepalive", 32, cmdBytes(2), ""},
		{"SetClientFeature of nothing", 32, strictFeatureCmd(1, 3, 0), ""},
		{"GetServerFeature", 32, strictFeatureCmd(0, 1, ^uint64(0)), ""},
		{"SetClientFeature of a feature not offered", 32, strictFeatureCmd(1, 0, strictFeatureNewLength), ruleFeature},
		{"short SEND", 16, cmdBytes(2), ruleCmdSize},
		{"empty SEND", 0, cmdBytes(2), ruleCmdSize},
		{"unknown opcode", 32, cmdBytes(4), ruleOpcode},
		{"opcode 0xffff", 32, cmdBytes(0xffff), ruleOpcode},
		{"length 0", 32, strictMemCmd(1, 0, 1), ruleLenRange},
		{"length above 16 MiB", 32, strictMemCmd(1, 16<<20+1, 1), ruleLenRange},
		{"re-arm before a write", 32, strictMemCmd(1, 64<<10, 1), ruleRearmFull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStrictState(1 << 20)
			_, err := s.control(32, strictMemCmd(1, 64<<10, 1))
			strictErr(t, "the first RegisterXferMemory", err, "")
			answer, err := s.control(tc.byteLen, tc.msg)
			strictErr(t, tc.name, err, tc.want)
			if binary.BigEndian.Uint16(tc.msg) == 0 && tc.want == "" {
				if !bytes.Equal(answer, strictFeatureCmd(0, binary.BigEndian.Uint16(tc.msg[2:]), 0)) {
					t.Errorf("answer %x, want the select echoed and no features", answer)
				}
			}
		})
	}
	// The bounds themselves are allowed, as first lengths.
	for _, l := range []uint32{1, 16 << 20} {
		_, err := newStrictState(1<<20).control(32, strictMemCmd(1, l, 1))
		strictErr(t, fmt.Sprintf("a first RegisterXferMemory of %d bytes", l), err, "")
	}
}

// TestStrictRulesRearm: a re-arm is taken only once the server has filled
// the client's buffer; then writing starts at its start again.
func TestStrictRulesRearm(t *testing.T) {
	s := newStrictState(1 << 20)
	if s.room() != 0 {
		t.Fatalf("room %d before the client's RegisterXferMemory, want 0", s.room())
	}
	_, err := s.control(32, strictMemCmd(1, 4096, 1))
	strictErr(t, "first", err, "")
	s.sent(4000)
	if s.room() != 96 {
		t.Fatalf("room %d, want 96", s.room())
	}
	_, err = s.control(32, strictMemCmd(1, 4096, 1))
	strictErr(t, "re-arm with 96 bytes unwritten", err, ruleRearmFull)

	s = newStrictState(1 << 20)
	s.control(32, strictMemCmd(1, 4096, 1))
	s.sent(4096)
	if s.room() != 0 {
		t.Fatalf("room %d in a full buffer, want 0", s.room())
	}
	_, err = s.control(32, strictMemCmd(2, 4096, 2))
	strictErr(t, "re-arm of the filled buffer at a new address", err, "")
	if s.room() != 4096 || s.txAddr != 2 || s.txKey != 2 {
		t.Fatalf("after the re-arm: room %d at %#x key %#x, want 4096 at 0x2 key 0x2", s.room(), s.txAddr, s.txKey)
	}
}

// TestStrictRulesWrites: the client's writes into the server's buffer.
func TestStrictRulesWrites(t *testing.T) {
	s := newStrictState(64 << 10)
	strictErr(t, "a write without immediate data", s.written(false, 10, 10), ruleImm)
	strictErr(t, "an immediate other than the byte count", s.written(true, 10, 9), ruleImm)
	strictErr(t, "a write past the buffer", s.written(true, 64<<10+1, 64<<10+1), ruleOverrun)
	strictErr(t, "a write of 60 KiB", s.written(true, 60<<10, 60<<10), "")
	if lo, hi, rearm := s.take(); lo != 0 || hi != 60<<10 || rearm {
		t.Fatalf("take: [%d, %d) rearm %v, want [0, %d) and no re-arm", lo, hi, rearm, 60<<10)
	}
	strictErr(t, "a write past what is left", s.written(true, 4<<10+1, 4<<10+1), ruleOverrun)
	strictErr(t, "a write of the rest", s.written(true, 4<<10, 4<<10), "")
	if lo, hi, rearm := s.take(); lo != 60<<10 || hi != 64<<10 || !rearm {
		t.Fatalf("take: [%d, %d) rearm %v, want [%d, %d) and a re-arm", lo, hi, rearm, 60<<10, 64<<10)
	}
	strictErr(t, "a write after the server's re-arm", s.written(true, 64<<10, 64<<10), "")
}

// TestStrictRulesRESP: requests parse whole, wait while partial (however
// they are cut), and fail when they are not RESP.
func TestStrictRulesRESP(t *testing.T) {
	req := strictRequest([]byte("SET"), []byte("k"), []byte("a\r\nb"))
	for i := range len(req) {
		if args, n, err := parseRESP(req[:i]); args != nil || n != 0 || err != nil {
			t.Fatalf("the first %d bytes of %q: %q, %d, %v; want to wait for more", i, req, args, n, err)
		}
	}
	args, n, err := parseRESP(append(req, "*1\r\n"...))
	if err != nil || n != len(req) || len(args) != 3 || string(args[2]) != "a\r\nb" {
		t.Fatalf("a whole request: %q, %d, %v", args, n, err)
	}
	if args, n, err := parseRESP([]byte("PING  hello\r\nGET")); err != nil || n != 13 || len(args) != 2 || string(args[1]) != "hello" {
		t.Fatalf("an inline request: %q, %d, %v", args, n, err)
	}
	if args, n, err := parseRESP([]byte("*0\r\n")); err != nil || n != 4 || args != nil {
		t.Fatalf("an empty array: %q, %d, %v", args, n, err)
	}
	for _, bad := range []string{"*x\r\n", "*1\r\n:1\r\n", "*1\r\n$-2\r\n", "*1\r\n$1\r\nab\r\n", "*" + strings.Repeat("1", 70<<10)} {
		if _, _, err := parseRESP([]byte(bad)); err == nil {
			t.Errorf("%q parsed, want an error", clip([]byte(bad), 40))
		}
	}
	store := map[string][]byte{}
	var out []byte
	for _, r := range [][]string{{"INCR", "n"}, {"incr", "n"}, {"GET", "n"}, {"GET", "none"}, {"SET", "n", "x"}, {"INCR", "n"}, {"DEL", "n", "none"}, {"PING"}, {"HELLO", "3"}} {
		a := make([][]byte, len(r))
		for i, s := range r {
			a[i] = []byte(s)
		}
		out = strictExec(store, a, out)
	}
	want := ":1\r\n:2\r\n$1\r\n2\r\n$-1\r\n+OK\r\n-ERR value is not an integer or out of range\r\n:1\r\n+PONG\r\n-ERR unknown command 'HELLO'\r\n"
	if string(out) != want {
		t.Errorf("replies %q, want %q", out, want)
	}
}

// TestStrictPeerStalledServer: a server that stops handling completions for
// a while (valkey-server busy with a slow command) does not post again the
// receives our messages take, and it accepts, as valkey does, with an RNR
// retry count of 0. Our client, writing more small messages meanwhile than
// the server has receives posted, must neither fail nor lose a request.
func TestStrictPeerStalledServer(t *testing.T) {
	var stalled atomic.Bool
	p := strictSetup(t, strictOptions{Stalled: &stalled})
	sc := dialStrict(t, p, nil)
	k, v := sc.doS("PING")
	sc.expect("PING", k, v, '+', "PONG")
	const n = 3000 // the server posts 1024 receives
	msgs := make([][]byte, n)
	for i := range msgs {
		msgs[i] = []byte("PING\r\n")
	}
	stalled.Store(true)
	if err := writeThroughStall(t, sc.c, msgs, func() { stalled.Store(false) }); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		line, err := sc.r.ReadSlice('\n')
		if err != nil || string(line) != "+PONG\r\n" {
			t.Fatalf("reply %d of %d: %q, %v", i, n, line, err)
		}
	}
	sc.close(p, 1)
}
