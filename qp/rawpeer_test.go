//go:build unix

package qp_test

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed54442f1a/rdmapool/internal/unsafeptr"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
	"github.com/seed54442f1a/rdmapool/qp"
)

// rawPeer is a client built on the binding alone, which can send what a
// correct peer never would.
type rawPeer struct {
	t      *testing.T
	tb     *verbs.Table
	ch     verbs.Ptr[verbs.EventChannel]
	id     verbs.Ptr[verbs.CMID]
	pd     verbs.Ptr[verbs.PD]
	cq     verbs.Ptr[verbs.CQ]
	ops    *verbs.ContextOps
	buf    []byte // registered: 8 receive slots of 32 B, then send space
	mr     *verbs.MR
	mrp    verbs.Ptr[verbs.MR]
	sendWR verbs.Ptr[verbs.SendWR]
	recvWR verbs.Ptr[verbs.RecvWR]
	sge    verbs.Ptr[verbs.SGE]
	badWR  verbs.Ptr[verbs.BadWR]
	wc     verbs.Ptr[verbs.WC]
	// early holds completions that arrived while dialRawFirst waited for
	// its first message's: poll returns them first.
	early []verbs.WC
	// The server's receive buffer, from its RegisterXferMemory.
	addr   uint64
	length uint32
	rkey   uint32
}

const rawSlots = 8

func (p *rawPeer) must(err error) {
	p.t.Helper()
	if err != nil {
		p.t.Fatal(err)
	}
}

func (p *rawPeer) event(want uint32) {
	p.t.Helper()
	pfd := []unix.PollFd{{Fd: int32(verbs.EventChannelFD(p.ch)), Events: unix.POLLIN}}
	if n, _ := unix.Poll(pfd, 20000); n != 1 {
		p.t.Fatalf("raw peer: no rdma_cm event, want %s", p.tb.EventStr(want))
	}
	ev, err := p.tb.TakeCMEvent(p.ch)
	p.must(err)
	if typ := ev.Event; typ != want {
		p.t.Fatalf("raw peer: event %s, want %s", p.tb.EventStr(typ), p.tb.EventStr(want))
	}
}

// dialRaw connects a raw peer that speaks first, as libvalkey does (its
// RegisterXferMemory; here a Keepalive, which every peer takes as nothing),
// and returns once it has the server's RegisterXferMemory.
func dialRaw(t *testing.T, tb *verbs.Table, to netip.AddrPort) *rawPeer {
	return dialRawFirst(t, tb, to, cmdBytes(2))
}

// dialRawFirst is dialRaw with first as the peer's first control message,
// sent once ESTABLISHED; nil sends none.
func dialRawFirst(t *testing.T, tb *verbs.Table, to netip.AddrPort, first []byte) *rawPeer {
	p := &rawPeer{t: t, tb: tb}
	var err error
	p.ch, err = tb.CreateEventChannel()
	p.must(err)
	p.id, err = tb.CreateID(p.ch, 0, verbs.PSTCP)
	p.must(err)
	dst, err := tb.Sockaddr(to)
	p.must(err)
	defer verbs.Release(tb, dst)
	p.must(tb.ResolveAddr(p.id, verbs.Ptr[verbs.Sockaddr]{}, dst, 5000))
	p.event(verbs.EventAddrResolved)
	p.must(tb.ResolveRoute(p.id, 5000))
	p.event(verbs.EventRouteResolved)
	ctx := verbs.IDContext(p.id)
	p.pd, err = tb.AllocPD(ctx)
	p.must(err)
	p.cq, err = tb.CreateCQ(ctx, 64, 0, verbs.Ptr[verbs.CompChannel]{}, 0)
	p.must(err)
	p.ops = verbs.CQOps(p.cq)
	attr, ap, err := verbs.New[verbs.QPInitAttr](tb)
	p.must(err)
	attr.SendCQ, attr.RecvCQ, attr.QPType = p.cq, p.cq, verbs.QPTypeRC
	attr.Cap = verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}
	attr.SQSigAll = 1
	p.must(tb.CreateQP(p.id, p.pd, ap))
	verbs.Release(tb, ap)
	p.buf, err = unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	p.must(err)
	p.mrp, err = tb.RegMR(p.pd, unsafeptr.Addr(p.buf), 4096, verbs.AccessLocalWrite)
	p.must(err)
	p.mr = p.mrp.Get()
	p.sendWR, err = verbs.Alloc[verbs.SendWR](tb, 1)
	p.must(err)
	p.recvWR, err = verbs.Alloc[verbs.RecvWR](tb, 1)
	p.must(err)
	p.sge, err = verbs.Alloc[verbs.SGE](tb, 1)
	p.must(err)
	p.badWR, err = verbs.Alloc[verbs.BadWR](tb, 1)
	p.must(err)
	p.wc, err = verbs.Alloc[verbs.WC](tb, 1)
	p.must(err)
	for i := range rawSlots {
		p.postRecv(i)
	}
	param, pp, err := verbs.New[verbs.ConnParam](tb)
	p.must(err)
	*param = verbs.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7}
	p.must(tb.Connect(p.id, pp))
	verbs.Release(tb, pp)
	p.event(verbs.EventEstablished)
	if first != nil {
		p.post(verbs.WRSend, first, 0)
		// valkey-server sends its RegisterXferMemory once ESTABLISHED,
		// without waiting for ours: its receive may complete first.
		var held []verbs.WC
		for {
			wc := p.poll()
			if wc.Status == 0 && wc.Opcode == verbs.WCRecv {
				held = append(held, wc)
				continue
			}
			if wc.Status != 0 || wc.Opcode != verbs.WCSend {
				t.Fatalf("raw peer: first message: status %d opcode %d", wc.Status, wc.Opcode)
			}
			break
		}
		p.early = held
	}
	// The server's RegisterXferMemory, after the answer to a
	// GetServerFeature and any keepalive.
	b := p.recvCmd()
	for op := binary.BigEndian.Uint16(b); op != 3; op = binary.BigEndian.Uint16(b) {
		if op != 0 && op != 2 {
			t.Fatalf("raw peer: message of opcode %d before the server's RegisterXferMemory", op)
		}
		b = p.recvCmd()
	}
	p.addr, p.length, p.rkey = binary.BigEndian.Uint64(b[16:]), binary.BigEndian.Uint32(b[24:]), binary.BigEndian.Uint32(b[28:])
	return p
}

func (p *rawPeer) postRecv(slot int) {
	*p.sge.Get() = verbs.SGE{Addr: uint64(unsafeptr.Addr(p.buf)) + uint64(slot*32), Length: 32, LKey: p.mr.LKey}
	*p.recvWR.Get() = verbs.RecvWR{WRID: uint64(slot), SGList: p.sge, NumSGE: 1}
	if e := verbs.PostRecv(p.ops, verbs.IDQP(p.id), p.recvWR, p.badWR); e != 0 {
		p.t.Fatalf("post_recv: %v", e)
	}
}

// poll waits for one completion.
func (p *rawPeer) poll() verbs.WC {
	p.t.Helper()
	if len(p.early) > 0 {
		wc := p.early[0]
		p.early = p.early[1:]
		return wc
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if verbs.PollCQ(p.ops, p.cq, 1, p.wc) == 1 {
			return *p.wc.Get()
		}
		time.Sleep(time.Millisecond)
	}
	p.t.Fatal("raw peer: no completion")
	return verbs.WC{}
}

// recvCmd waits for a control message and returns its 32 bytes.
func (p *rawPeer) recvCmd() []byte {
	p.t.Helper()
	wc := p.poll()
	if wc.Status != 0 || wc.Opcode != verbs.WCRecv {
		p.t.Fatalf("raw peer: completion status %d opcode %d, want a receive", wc.Status, wc.Opcode)
	}
	b := append([]byte(nil), p.buf[wc.WRID*32:wc.WRID*32+32]...)
	p.postRecv(int(wc.WRID))
	return b
}

// post sends msg (a SEND), or an RDMA_WRITE_WITH_IMM of msg with imm.
func (p *rawPeer) post(opcode uint32, msg []byte, imm uint32) {
	p.t.Helper()
	copy(p.buf[1024:], msg)
	*p.sge.Get() = verbs.SGE{Addr: uint64(unsafeptr.Addr(p.buf)) + 1024, Length: uint32(len(msg)), LKey: p.mr.LKey}
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], imm)
	wr := p.sendWR.Get()
	*wr = verbs.SendWR{WRID: 100, SGList: p.sge, NumSGE: 1, Opcode: opcode, SendFlags: verbs.SendSignaled,
		ImmData: binary.NativeEndian.Uint32(b[:]), RemoteAddr: p.addr, RKey: p.rkey}
	if len(msg) == 0 {
		wr.NumSGE = 0
	}
	if e := verbs.PostSend(p.ops, verbs.IDQP(p.id), p.sendWR, p.badWR); e != 0 {
		p.t.Fatalf("post_send: %v", e)
	}
}

func (p *rawPeer) close() {
	tb := p.tb
	tb.Disconnect(p.id)
	tb.DestroyQP(p.id)
	tb.DestroyCQ(p.cq)
	tb.DeregMR(p.mrp)
	unix.Munmap(p.buf)
	verbs.Release(tb, p.wc)
	verbs.Release(tb, p.badWR)
	verbs.Release(tb, p.sge)
	verbs.Release(tb, p.recvWR)
	verbs.Release(tb, p.sendWR)
	tb.DeallocPD(p.pd)
	tb.DestroyID(p.id)
	tb.DestroyEventChannel(p.ch)
}

func cmdBytes(op uint16) []byte {
	b := make([]byte, 32)
	binary.BigEndian.PutUint16(b, op)
	return b
}

// TestMalformedPeer: a peer that breaks the protocol gets its connection
// closed with a ProtocolError saying what it did; the listener and other
// connections go on.
func TestMalformedPeer(t *testing.T) {
	e := newEnv(t, &qp.Options{RecvBufferSize: 16 << 10})
	tb := verbs.Bound()
	to := netip.MustParseAddrPort(e.l.Addr().String())
	cases := []struct {
		name string
		act  func(p *rawPeer)
		want string
	}{
		{"short control message", func(p *rawPeer) { p.post(verbs.WRSend, make([]byte, 16), 0) }, "control message of 16 bytes, want 32"},
		// The device fails the receive: with IBV_WC_LOC_LEN_ERR, which
		// says why, on hardware; soft-RoCE says "local QP operation
		// error", a CompletionError.
		{"long control message", func(p *rawPeer) { p.post(verbs.WRSend, make([]byte, 64), 0) }, "control message longer than 32 bytes"},
		{"unknown opcode", func(p *rawPeer) { p.post(verbs.WRSend, cmdBytes(0x1234), 0) }, "unknown control opcode 4660"},
		{"overrun", func(p *rawPeer) { p.post(verbs.WRRDMAWriteWithImm, nil, 16<<10+1) }, "immediate byte count overruns the receive buffer"},
		{"oversized RegisterXferMemory", func(p *rawPeer) {
			b := cmdBytes(3)
			binary.BigEndian.PutUint32(b[24:], 1<<30)
			p.post(verbs.WRSend, b, 0)
		}, "RegisterXferMemory of 1073741824 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := dialRaw(t, tb, to)
			defer p.close()
			srv, err := e.l.AcceptConn(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			tc.act(p)
			srv.SetReadDeadline(time.Now().Add(20 * time.Second))
			_, err = srv.Read(make([]byte, 10))
			var pe *qp.ProtocolError
			var ce *qp.CompletionError
			switch {
			case errors.As(err, &pe) && strings.Contains(pe.What, tc.want):
				t.Logf("as expected: %v", err)
			case tc.name == "long control message" && errors.As(err, &ce) && ce.Op == "receive":
				t.Logf("as expected, the device not saying why: %v", err)
			default:
				t.Fatalf("server Read: %v, want a ProtocolError saying %q", err, tc.want)
			}
			// Once closed, the connection says so, whatever ended it.
			srv.Close()
			if _, err := srv.Read(make([]byte, 10)); !errors.Is(err, net.ErrClosed) {
				t.Errorf("Read after Close: %v, want net.ErrClosed", err)
			}
			if err := srv.SetDeadline(time.Now()); !errors.Is(err, net.ErrClosed) {
				t.Errorf("SetDeadline after Close: %v, want net.ErrClosed", err)
			}
			// Everything else goes on.
			cli, srv2 := e.pair()
			go echo(srv2)
			if _, err := cli.Write([]byte("still fine")); err != nil {
				t.Fatal(err)
			}
			got := make([]byte, 10)
			if _, err := io.ReadFull(cli, got); err != nil || string(got) != "still fine" {
				t.Fatalf("a healthy connection after the bad one: %q, %v", got, err)
			}
			cli.Close()
		})
	}
}

// TestFeatureRequest: GetServerFeature is answered as valkey-server answers
// it, the same opcode and the select echoed, with the features we offer on
// select 0 (featRxLength, 1<<48) and none on any other select.
func TestFeatureRequest(t *testing.T) {
	p, srv := acceptRaw(t, newEnv(t, nil))
	defer p.close()
	defer srv.Close()
	for _, c := range []struct {
		sel  uint16
		want uint64
	}{{7, 0}, {0, 1 << 48}} {
		req := cmdBytes(0)
		binary.BigEndian.PutUint16(req[2:], c.sel)
		p.post(verbs.WRSend, req, 0)
		if wc := p.poll(); wc.Status != 0 {
			t.Fatalf("sending the request: status %d", wc.Status)
		}
		b := p.recvCmd()
		if op, sel, f := binary.BigEndian.Uint16(b), binary.BigEndian.Uint16(b[2:]), binary.BigEndian.Uint64(b[24:]); op != 0 || sel != c.sel || f != c.want {
			t.Errorf("answer: opcode %d select %d features %#x, want 0, %d, %#x", op, sel, f, c.sel, c.want)
		}
	}
}

// TestFirstAdvertisement: a server advertises to a client that cannot take
// a change of length (it spoke first with anything but a GetServerFeature
// listing ours, or said nothing) a receive buffer of RecvBufferSize, which
// it keeps; to one of ours, the small one it starts with.
func TestFirstAdvertisement(t *testing.T) {
	const size = 256 << 10
	e := newEnv(t, &qp.Options{RecvBufferSize: size})
	to := netip.MustParseAddrPort(e.l.Addr().String())
	ours := cmdBytes(0)
	binary.BigEndian.PutUint64(ours[24:], 1<<48)
	for _, c := range []struct {
		name  string
		first []byte
		want  uint32
	}{
		{"keepalive", cmdBytes(2), size},
		{"silent", nil, size},
		{"ask-plain", cmdBytes(0), size},
		{"ask-ours", ours, 64 << 10},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := dialRawFirst(t, verbs.Bound(), to, c.first)
			defer p.close()
			srv, err := e.l.AcceptConn(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			if p.length != c.want {
				t.Errorf("advertised %d bytes, want %d", p.length, c.want)
			}
		})
	}
}

// TestCompletionError: a peer advertises a receive buffer with a key that
// is not its own; our write to it completes with an error, and the
// connection fails with a CompletionError carrying ibv_wc_status_str.
func TestCompletionError(t *testing.T) {
	p, srv := acceptRaw(t, newEnv(t, nil))
	defer p.close()
	defer srv.Close()
	bad := cmdBytes(3)
	binary.BigEndian.PutUint64(bad[16:], uint64(unsafeptr.Addr(p.buf)))
	binary.BigEndian.PutUint32(bad[24:], 4096)
	binary.BigEndian.PutUint32(bad[28:], p.mr.RKey^0x5a5a5a) // not a key of the peer's
	p.post(verbs.WRSend, bad, 0)
	srv.SetDeadline(time.Now().Add(30 * time.Second))
	var werr error
	for i := 0; i < 100 && werr == nil; i++ {
		_, werr = srv.Write([]byte("hello"))
		if werr == nil {
			_, werr = srv.Read(make([]byte, 1)) // waits for the completion or the deadline
		}
	}
	var ce *qp.CompletionError
	if !errors.As(werr, &ce) || ce.Text == "" {
		t.Fatalf("after writing with a bad key: %v, want a CompletionError", werr)
	}
	t.Logf("as expected: %v", werr)
}

// acceptRaw connects a raw peer to e's listener and accepts it.
func acceptRaw(t *testing.T, e *env) (*rawPeer, *qp.Conn) {
	t.Helper()
	p := dialRaw(t, verbs.Bound(), netip.MustParseAddrPort(e.l.Addr().String()))
	srv, err := e.l.AcceptConn(ctxT(t))
	if err != nil {
		p.close()
		t.Fatal(err)
	}
	return p, srv
}
