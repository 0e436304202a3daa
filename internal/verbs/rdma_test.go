//go:build unix

package verbs_test

import (
	"bytes"
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed54442f1a/rdmapool/internal/unsafeptr"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
)

// These tests drive a real RDMA device through the binding alone. They run
// in the soft-RoCE VM (make test-rxe); on a machine without a device they skip.

const eventTimeout = 20 * time.Second // soft-RoCE under emulation is slow

func TestListDevices(t *testing.T) {
	rdmatest.Require(t)
	tb := verbs.Bound()
	devs, list, err := tb.GetDeviceList()
	if err != nil {
		t.Fatal(err)
	}
	defer tb.FreeDeviceList(list)
	if len(devs) == 0 {
		t.Fatal("no devices")
	}
	for _, d := range devs {
		ctx, err := tb.OpenDevice(d)
		if err != nil {
			t.Fatalf("%s: %v", tb.DeviceName(d), err)
		}
		attr, err := tb.QueryDevice(ctx)
		if err != nil {
			t.Fatal(err)
		}
		port, err := tb.QueryPort(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d port(s), max_qp %d, max_cqe %d, max_mr_size %d; port 1 state %d link layer %d gid_tbl_len %d",
			tb.DeviceName(d), attr.PhysPortCnt, attr.MaxQP, attr.MaxCQE, attr.MaxMRSize, port.State, port.LinkLayer, port.GIDTblLen)
		if attr.PhysPortCnt < 1 || attr.MaxQP < 1 || port.GIDTblLen < 1 {
			t.Errorf("implausible attributes: %+v", attr)
		}
		if err := tb.CloseDevice(ctx); err != nil {
			t.Error(err)
		}
	}
}

// side is one end of a connection: its id and the verbs objects on it.
type side struct {
	t       *testing.T
	tb      *verbs.Table
	ch      verbs.Ptr[verbs.EventChannel]
	id      verbs.Ptr[verbs.CMID]
	pd      verbs.Ptr[verbs.PD]
	cc      verbs.Ptr[verbs.CompChannel]
	cq      verbs.Ptr[verbs.CQ]
	ops     *verbs.ContextOps
	buf     []byte // mmap'd, registered
	mr      *verbs.MR
	mrPtr   verbs.Ptr[verbs.MR]
	wcs     verbs.Ptr[verbs.WC] // C array of 16 WCs
	sendWR  verbs.Ptr[verbs.SendWR]
	recvWR  verbs.Ptr[verbs.RecvWR]
	sge     verbs.Ptr[verbs.SGE]
	badWR   verbs.Ptr[verbs.BadWR]
	qp      verbs.Ptr[verbs.QP]
	closers []func()
}

func (s *side) defer_(f func()) { s.closers = append(s.closers, f) }

// close frees in reverse order of creation.
func (s *side) close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		s.closers[i]()
	}
	s.closers = nil
}

func (s *side) must(err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatal(err)
	}
}

// waitEvent waits for the next rdma_cm event on s.ch, requires its type and
// returns the id it is for (for CONNECT_REQUEST: the new id).
func (s *side) waitEvent(want uint32) verbs.Ptr[verbs.CMID] {
	s.t.Helper()
	fd := verbs.EventChannelFD(s.ch)
	pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	deadline := time.Now().Add(eventTimeout)
	for {
		n, err := unix.Poll(pfd, 100)
		if err != nil && err != unix.EINTR {
			s.t.Fatalf("poll: %v", err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no rdma_cm event within %v, waiting for %s", eventTimeout, s.tb.EventStr(want))
		}
	}
	e, err := s.tb.TakeCMEvent(s.ch)
	s.must(err)
	typ, status, id := e.Event, e.Status, e.ID
	if typ != want {
		s.t.Fatalf("rdma_cm event %s (status %d), want %s", s.tb.EventStr(typ), status, s.tb.EventStr(want))
	}
	return id
}

// setup creates PD, completion channel, CQ, QP and a registered buffer on id,
// of size bytes on id.
func (s *side) setup(id verbs.Ptr[verbs.CMID], size int) {
	s.t.Helper()
	tb := s.tb
	ctx := verbs.IDContext(id)
	var err error
	s.pd, err = tb.AllocPD(ctx)
	s.must(err)
	s.defer_(func() { s.must(tb.DeallocPD(s.pd)) })
	s.cc, err = tb.CreateCompChannel(ctx)
	s.must(err)
	s.defer_(func() { s.must(tb.DestroyCompChannel(s.cc)) })
	s.cq, err = tb.CreateCQ(ctx, 64, 0, s.cc, 0)
	s.must(err)
	s.defer_(func() { s.must(tb.DestroyCQ(s.cq)) })
	s.ops = verbs.CQOps(s.cq)

	attr, ap, err := verbs.New[verbs.QPInitAttr](tb)
	s.must(err)
	defer verbs.Release(tb, ap)
	attr.SendCQ, attr.RecvCQ = s.cq, s.cq
	attr.Cap = verbs.QPCap{MaxSendWR: 16, MaxRecvWR: 16, MaxSendSGE: 1, MaxRecvSGE: 1}
	attr.QPType = verbs.QPTypeRC
	attr.SQSigAll = 1
	s.must(tb.CreateQP(id, s.pd, ap))
	s.defer_(func() { tb.DestroyQP(id) })
	s.qp = verbs.IDQP(id)

	s.buf, err = unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	s.must(err)
	s.defer_(func() { unix.Munmap(s.buf) })
	s.mrPtr, err = tb.RegMR(s.pd, unsafeptr.Addr(s.buf), uintptr(size), verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	s.must(err)
	s.defer_(func() { s.must(tb.DeregMR(s.mrPtr)) })
	s.mr = s.mrPtr.Get()

	s.wcs, err = verbs.Alloc[verbs.WC](tb, 16)
	s.must(err)
	s.defer_(func() { verbs.Release(tb, s.wcs) })
	s.sendWR, err = verbs.Alloc[verbs.SendWR](tb, 1)
	s.must(err)
	s.defer_(func() { verbs.Release(tb, s.sendWR) })
	s.recvWR, err = verbs.Alloc[verbs.RecvWR](tb, 1)
	s.must(err)
	s.defer_(func() { verbs.Release(tb, s.recvWR) })
	s.sge, err = verbs.Alloc[verbs.SGE](tb, 1)
	s.must(err)
	s.defer_(func() { verbs.Release(tb, s.sge) })
	s.badWR, err = verbs.Alloc[verbs.BadWR](tb, 1)
	s.must(err)
	s.defer_(func() { verbs.Release(tb, s.badWR) })
}

// postRecv posts one receive WR, with one SGE, for n bytes at off.
func (s *side) postRecv(off, n int) {
	s.t.Helper()
	*s.sge.Get() = verbs.SGE{Addr: uint64(unsafeptr.Addr(s.buf) + uintptr(off)), Length: uint32(n), LKey: s.mr.LKey}
	*s.recvWR.Get() = verbs.RecvWR{WRID: uint64(off), SGList: s.sge, NumSGE: 1}
	if errno := verbs.PostRecv(s.ops, s.qp, s.recvWR, s.badWR); errno != 0 {
		s.t.Fatalf("post_recv: %v", errno)
	}
}

func (s *side) postSend(opcode uint32, off, n int, imm uint32, raddr uint64, rkey uint32) {
	s.t.Helper()
	*s.sge.Get() = verbs.SGE{Addr: uint64(unsafeptr.Addr(s.buf) + uintptr(off)), Length: uint32(n), LKey: s.mr.LKey}
	*s.sendWR.Get() = verbs.SendWR{WRID: 1000 + uint64(off), SGList: s.sge, NumSGE: 1, Opcode: opcode,
		SendFlags: verbs.SendSignaled, ImmData: htonl(imm), RemoteAddr: raddr, RKey: rkey}
	if errno := verbs.PostSend(s.ops, s.qp, s.sendWR, s.badWR); errno != 0 {
		s.t.Fatalf("post_send: %v", errno)
	}
}

// poll busy-polls the CQ until it yields one completion, and checks it.
func (s *side) poll(wantOpcode uint32) verbs.WC {
	s.t.Helper()
	deadline := time.Now().Add(eventTimeout)
	for {
		n := verbs.PollCQ(s.ops, s.cq, 1, s.wcs)
		if n < 0 {
			s.t.Fatalf("poll_cq: %d", n)
		}
		if n == 1 {
			wc := *s.wcs.Get()
			if wc.Status != verbs.WCSuccess {
				s.t.Fatalf("completion error: %s (status %d, opcode %d)", s.tb.WCStatusStr(wc.Status), wc.Status, wc.Opcode)
			}
			if wc.Opcode != wantOpcode {
				s.t.Fatalf("completion opcode %d, want %d", wc.Opcode, wantOpcode)
			}
			return wc
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no completion within %v (want opcode %d)", eventTimeout, wantOpcode)
		}
	}
}

// waitCQEvent waits on the completion channel for the armed CQ to fire,
// and acks the event.
func (s *side) waitCQEvent() {
	s.t.Helper()
	pfd := []unix.PollFd{{Fd: int32(verbs.CompChannelFD(s.cc)), Events: unix.POLLIN}}
	if n, err := unix.Poll(pfd, int(eventTimeout/time.Millisecond)); n != 1 || err != nil {
		s.t.Fatalf("completion channel did not fire within %v: %d, %v", eventTimeout, n, err)
	}
	cq, err := s.tb.GetCQEvent(s.cc)
	s.must(err)
	if cq != s.cq {
		s.t.Fatalf("ibv_get_cq_event returned CQ %#x, want %#x", cq.Addr(), s.cq.Addr())
	}
	s.tb.AckCQEvents(cq, 1)
}

func htonl(v uint32) uint32 {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	return binary.NativeEndian.Uint32(b[:])
}

func ntohl(v uint32) uint32 { return htonl(v) }

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ seed
	}
	return b
}

// TestConnectSendWriteWithImm connects two rdma_cm ids on the device,
// pre-posts receives, moves a SEND and an RDMA_WRITE_WITH_IMM of some KiB
// each way, checks bytes, immediate data and opcodes, exercises the
// completion channel, tears everything down in reverse order and checks the
// kernel holds no RDMA object more than before.
func TestConnectSendWriteWithImm(t *testing.T) {
	rdmatest.Require(t)
	tb := verbs.Bound()
	addr := rdmatest.Addr(t)
	before := rdmatest.Resources(t)
	t.Logf("resources before: %v", before)

	const bufSize = 64 << 10
	const sendLen, writeLen = 4 << 10, 8 << 10
	srv := &side{t: t, tb: tb}
	cli := &side{t: t, tb: tb}
	var child side

	func() {
		defer srv.close()
		defer cli.close()

		// Server: listen on addr, port chosen by the kernel.
		var err error
		srv.ch, err = tb.CreateEventChannel()
		srv.must(err)
		srv.defer_(func() { tb.DestroyEventChannel(srv.ch) })
		srv.id, err = tb.CreateID(srv.ch, 0, verbs.PSTCP)
		srv.must(err)
		srv.defer_(func() { srv.must(tb.DestroyID(srv.id)) })
		sa, err := tb.Sockaddr(netip.AddrPortFrom(addr, 0))
		srv.must(err)
		srv.must(tb.BindAddr(srv.id, sa))
		verbs.Release(tb, sa)
		srv.must(tb.Listen(srv.id, 4))
		local, _ := verbs.CMIDAddrs(srv.id)
		if local.Addr() != addr || local.Port() == 0 {
			t.Fatalf("listener bound to %v, want %v with a port", local, addr)
		}
		t.Logf("listening on %v", local)

		// Client: resolve address and route.
		cli.ch, err = tb.CreateEventChannel()
		cli.must(err)
		cli.defer_(func() { tb.DestroyEventChannel(cli.ch) })
		cli.id, err = tb.CreateID(cli.ch, 0, verbs.PSTCP)
		cli.must(err)
		cli.defer_(func() { cli.must(tb.DestroyID(cli.id)) })
		dst, err := tb.Sockaddr(local)
		cli.must(err)
		cli.must(tb.ResolveAddr(cli.id, verbs.Ptr[verbs.Sockaddr]{}, dst, 5000))
		verbs.Release(tb, dst)
		cli.waitEvent(verbs.EventAddrResolved)
		cli.must(tb.ResolveRoute(cli.id, 5000))
		cli.waitEvent(verbs.EventRouteResolved)
		cli.setup(cli.id, bufSize)
		cli.postRecv(0, writeLen) // for the server's WRITE_WITH_IMM (no data lands in it)
		param, pp, err := verbs.New[verbs.ConnParam](tb)
		cli.must(err)
		defer verbs.Release(tb, pp)
		*param = verbs.ConnParam{ResponderResources: 1, InitiatorDepth: 1, RetryCount: 7, RNRRetryCount: 7}
		cli.must(tb.Connect(cli.id, pp))

		// Server: take the request, set up the new id, pre-post, accept.
		child = side{t: t, tb: tb, ch: srv.ch}
		child.id = srv.waitEvent(verbs.EventConnectRequest)
		defer child.close()
		child.defer_(func() { child.must(tb.DestroyID(child.id)) })
		child.setup(child.id, bufSize)
		child.postRecv(0, sendLen)
		srv.must(tb.Accept(child.id, pp))
		// The client's librdmacm completes the handshake (RTU) while the
		// client reads its event, so the client goes first.
		cli.waitEvent(verbs.EventEstablished)
		srv.waitEvent(verbs.EventEstablished)
		l, r := verbs.CMIDAddrs(cli.id)
		t.Logf("client %v connected to %v", l, r)
		if r != local {
			t.Errorf("client's remote address %v, want %v", r, local)
		}

		// SEND 4 KiB client → server.
		msg := pattern(sendLen, 0x5a)
		copy(cli.buf[16<<10:], msg)
		cli.postSend(verbs.WRSend, 16<<10, sendLen, 0, 0, 0)
		cli.poll(verbs.WCSend)
		wc := child.poll(verbs.WCRecv)
		if wc.ByteLen != sendLen || !bytes.Equal(child.buf[:sendLen], msg) {
			t.Fatalf("SEND: received %d bytes, data equal: %v", wc.ByteLen, bytes.Equal(child.buf[:sendLen], msg))
		}

		// RDMA_WRITE_WITH_IMM 8 KiB server → client's buffer at offset 32 KiB,
		// with imm = byte count as the Valkey protocol does; the client waits
		// on its completion channel.
		if errno := verbs.ReqNotifyCQ(cli.ops, cli.cq, false); errno != 0 {
			t.Fatalf("req_notify_cq: %v", errno)
		}
		data := pattern(writeLen, 0xa5)
		copy(child.buf[8<<10:], data)
		child.postSend(verbs.WRRDMAWriteWithImm, 8<<10, writeLen, writeLen, uint64(unsafeptr.Addr(cli.buf))+32<<10, cli.mr.RKey)
		child.poll(verbs.WCRDMAWrite)
		cli.waitCQEvent()
		wc = cli.poll(verbs.WCRecvRDMAWithImm)
		if ntohl(wc.ImmData) != writeLen || wc.WCFlags&verbs.WCWithImm == 0 {
			t.Errorf("WRITE_WITH_IMM completion: imm %d flags %#x, want imm %d with IBV_WC_WITH_IMM", ntohl(wc.ImmData), wc.WCFlags, writeLen)
		}
		if !bytes.Equal(cli.buf[32<<10:32<<10+writeLen], data) {
			t.Errorf("RDMA_WRITE_WITH_IMM: data differs")
		}

		// The data-path calls allocate nothing (the CQ is empty now).
		if n := testing.AllocsPerRun(200, func() { verbs.PollCQ(cli.ops, cli.cq, 16, cli.wcs) }); n != 0 {
			t.Errorf("poll_cq allocates %v times per call", n)
		}
		if n := testing.AllocsPerRun(200, func() { verbs.ReqNotifyCQ(cli.ops, cli.cq, false) }); n != 0 {
			t.Errorf("req_notify_cq allocates %v times per call", n)
		}

		// Disconnect: the server sees DISCONNECTED and answers with its own
		// rdma_disconnect, which completes the client's.
		cli.must(tb.Disconnect(cli.id))
		srv.waitEvent(verbs.EventDisconnected)
		srv.must(tb.Disconnect(child.id))
		cli.waitEvent(verbs.EventDisconnected)
	}()
	rdmatest.CheckNoLeaks(t, before)
}
