//go:build unix

package qp_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/internal/unsafeptr"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/qp"
)

// valkeyPeer is a raw peer of a real valkey-server: it holds a receive
// buffer of its own, advertises windows of it with RegisterXferMemory
// and collects what the server writes there.
type valkeyPeer struct {
	*rawPeer
	rx     []byte // registered for remote writes
	rxMR   verbs.Ptr[verbs.MR]
	srvOff uint64 // bytes written into the server's receive buffer
	got    []byte // bytes the server wrote since the last window
	writes []int  // sizes of those writes
}

// arm advertises rx[:length] as the window the server writes its replies
// into (RegisterXferMemory: addr, length, rkey); what it wrote before is
// dropped.
func (v *valkeyPeer) arm(length uint32) {
	v.t.Helper()
	b := cmdBytes(3)
	binary.BigEndian.PutUint64(b[16:], uint64(unsafeptr.Addr(v.rx)))
	binary.BigEndian.PutUint32(b[24:], length)
	binary.BigEndian.PutUint32(b[28:], v.rxMR.Get().RKey)
	v.got, v.writes = v.got[:0], v.writes[:0]
	v.postWait(verbs.WRSend, b, 0)
}

// send writes one command into the server's receive buffer.
func (v *valkeyPeer) send(args ...string) {
	v.t.Helper()
	var b bytes.Buffer
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	if uint64(b.Len())+v.srvOff > uint64(v.length) || b.Len() > len(v.buf)-1024 {
		v.t.Fatalf("command of %d bytes does not fit", b.Len())
	}
	addr := v.addr
	v.addr += v.srvOff
	v.postWait(verbs.WRRDMAWriteWithImm, b.Bytes(), uint32(b.Len()))
	v.addr = addr
	v.srvOff += uint64(b.Len())
}

// postWait posts as rawPeer.post does and waits for its completion (the
// send space is reused), taking what arrives meanwhile.
func (v *valkeyPeer) postWait(opcode uint32, msg []byte, imm uint32) {
	v.t.Helper()
	v.post(opcode, msg, imm)
	deadline := time.Now().Add(20 * time.Second)
	for {
		switch op, ok := v.step(); {
		case ok && (op == verbs.WCSend || op == verbs.WCRDMAWrite):
			return
		case !ok && time.Now().After(deadline):
			v.t.Fatal("raw peer: no completion of a post")
		case !ok:
			time.Sleep(time.Millisecond)
		}
	}
}

// step takes one completion, if there is one: a write of the server's is
// added to got, a control message (its keepalive) dropped.
func (v *valkeyPeer) step() (opcode uint32, ok bool) {
	v.t.Helper()
	if verbs.PollCQ(v.ops, v.cq, 1, v.wc) != 1 {
		return 0, false
	}
	wc := *v.wc.Get()
	if wc.Status != 0 {
		v.t.Fatalf("completion status %d (%s), opcode %d", wc.Status, v.tb.WCStatusStr(wc.Status), wc.Opcode)
	}
	switch wc.Opcode {
	case verbs.WCRecvRDMAWithImm:
		var b [4]byte
		binary.NativeEndian.PutUint32(b[:], wc.ImmData)
		n := int(binary.BigEndian.Uint32(b[:]))
		off := len(v.got)
		if off+n > len(v.rx) {
			v.t.Fatalf("the server wrote %d bytes at offset %d, past our %d", n, off, len(v.rx))
		}
		v.got = append(v.got, v.rx[off:off+n]...)
		v.writes = append(v.writes, n)
		v.postRecv(int(wc.WRID))
	case verbs.WCRecv:
		v.postRecv(int(wc.WRID))
	}
	return wc.Opcode, true
}

// collect takes completions until the server has written want bytes
// into the window since it was armed, or has written nothing for quiet;
// it returns how many it has.
func (v *valkeyPeer) collect(want int, quiet time.Duration) int {
	v.t.Helper()
	last := time.Now()
	for len(v.got) < want && time.Since(last) < quiet {
		op, ok := v.step()
		switch {
		case !ok:
			time.Sleep(time.Millisecond)
		case op == verbs.WCRecvRDMAWithImm:
			last = time.Now()
		}
	}
	return len(v.got)
}

// TestValkeyRDMARegisterXferMemory answers, against a real valkey-server
// with RDMA (a local build, RDMAPOOL_VALKEY_DIR; see
// internal/testutil.RequireValkeyBuild), what it does with a second
// RegisterXferMemory: it takes addr, length and key anew each time, starts
// writing at the new window's first byte, and bounds the length by
// nothing: a 4 KiB window stops a 100 KB reply at 4096 bytes until the
// next RegisterXferMemory; one of 32 MiB (twice the largest receive
// buffer valkey itself allows, VALKEY_RDMA_MAX_RX_SIZE) takes the rest and
// then a 17 MiB reply without another; one of 4 KiB again stops at 4096.
func TestValkeyRDMARegisterXferMemory(t *testing.T) {
	b := testutil.RequireValkeyBuild(t)
	tb := rdmatest.Require(t)
	nd := testutil.StartValkeyRDMA(t, b, rdmatest.Addr(t).String())
	const size = 32 << 20
	v := &valkeyPeer{rawPeer: dialRaw(t, tb, netip.MustParseAddrPort(nd.RDMAAddr))}
	defer v.close()
	var err error
	v.rx, err = unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(v.rx)
	v.rxMR, err = tb.RegMR(v.pd, unsafeptr.Addr(v.rx), size, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.DeregMR(v.rxMR)
	t.Logf("server's receive buffer: %d bytes", v.length)
	quiet := 3 * time.Second // under emulation, a reply in flight pauses for less

	v.arm(4096)
	v.send("SETRANGE", "big", "99999", "x")
	if v.collect(9, quiet); string(v.got) != ":100000\r\n" {
		t.Fatalf("SETRANGE: %q", v.got)
	}
	want := append([]byte("$100000\r\n"), make([]byte, 99999)...)
	want = append(want, "x\r\n"...)
	v.send("GET", "big")
	if n := v.collect(len(want)+9, quiet); n != 4096 {
		t.Fatalf("with a 4096-byte window (9 used), the server wrote %d bytes in all, want 4096: writes %v", n, v.writes)
	}
	first := append([]byte(nil), v.got[9:]...)
	t.Logf("4 KiB window: the reply stops after %d of its %d bytes (writes %v)", len(first), len(want), v.writes)

	v.arm(size)
	rest := len(want) - len(first)
	if n := v.collect(rest, quiet); n != rest {
		t.Fatalf("after a RegisterXferMemory of %d bytes, %d of the reply's last %d bytes came: writes %v", size, n, rest, v.writes)
	}
	if got := append(first, v.got...); !bytes.Equal(got, want) {
		t.Fatalf("the reply across the two windows differs from GET's (%d bytes)", len(got))
	}
	t.Logf("32 MiB window: the rest, %d bytes, from the window's start (writes %v)", rest, v.writes)

	const huge = 17 << 20 // more than valkey's VALKEY_RDMA_MAX_RX_SIZE, 16 MiB
	v.send("SETRANGE", "huge", strconv.Itoa(huge-1), "y")
	hdr := ":" + strconv.Itoa(huge) + "\r\n"
	v.collect(rest+len(hdr), quiet)
	if string(v.got[rest:]) != hdr {
		t.Fatalf("SETRANGE huge: %q", v.got[rest:])
	}
	v.send("GET", "huge")
	start := len(v.got)
	bulk := "$" + strconv.Itoa(huge) + "\r\n"
	need := start + len(bulk) + huge + 2
	if n := v.collect(need, 2*quiet); n != need {
		t.Fatalf("GET of %d bytes in the 32 MiB window: %d of %d bytes came", huge, n-start, need-start)
	}
	if g := v.got[start:]; string(g[:len(bulk)]) != bulk || string(g[len(g)-3:]) != "y\r\n" {
		t.Fatalf("GET huge: starts %q, ends %q", g[:len(bulk)], g[len(g)-3:])
	}
	biggest := 0
	for _, w := range v.writes {
		biggest = max(biggest, w)
	}
	t.Logf("the same window then took a reply of %d bytes: %d bytes since the RegisterXferMemory, no other; largest single write %d", need-start, len(v.got), biggest)

	v.arm(4096)
	v.send("GET", "big")
	if n := v.collect(len(want), quiet); n != 4096 {
		t.Fatalf("back to a 4096-byte window: the server wrote %d bytes, want 4096: writes %v", n, v.writes)
	}
	if !bytes.Equal(v.got, want[:4096]) {
		t.Fatalf("the first 4096 bytes of GET big differ")
	}
	t.Logf("4 KiB window again: the reply stops at 4096 bytes (writes %v)", v.writes)
}

// TestValkeyRDMAStalledServer: valkey-server accepts with an RNR retry
// count of 0, and while it runs a slow command (a Lua loop, sent over TCP)
// it handles no completions, so it posts again none of the receives our
// messages take. Our client, writing meanwhile more messages than the
// server has receives posted, must neither fail nor lose a request.
func TestValkeyRDMAStalledServer(t *testing.T) {
	b := testutil.RequireValkeyBuild(t)
	rdmatest.Require(t)
	nd := testutil.StartValkeyRDMA(t, b, rdmatest.Addr(t).String())
	tc, err := net.Dial("tcp", nd.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer tc.Close()
	tr := bufio.NewReader(tc)
	do := func(cmd string) string {
		t.Helper()
		if _, err := io.WriteString(tc, cmd+"\r\n"); err != nil {
			t.Fatal(err)
		}
		line, err := tr.ReadString('\n')
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		return line
	}
	// The script must not be cut short: past busy-reply-threshold valkey
	// handles events again, and answers other commands -BUSY.
	if r := do("CONFIG SET busy-reply-threshold 600000"); r != "+OK\r\n" {
		t.Fatalf("CONFIG SET: %q", r)
	}
	script := func(n int) string {
		return fmt.Sprintf("EVAL \"local i = 0 while i < %d do i = i + 1 end return i\" 0", n)
	}
	// A loop of about 2 s on this machine (emulated or not), far more than
	// the client takes to use the server's receives.
	const probe = 1000000
	start := time.Now()
	if r := do(script(probe)); r != fmt.Sprintf(":%d\r\n", probe) {
		t.Fatalf("EVAL: %q", r)
	}
	loops := int(float64(probe) * float64(2*time.Second) / float64(max(time.Since(start), time.Millisecond)))
	loops = max(loops, probe)

	c, err := qp.Dial(ctxT(t), nd.RDMAAddr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r := bufio.NewReaderSize(c, 64<<10)
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err != nil || line != "+PONG\r\n" {
		t.Fatalf("PING: %q, %v", line, err)
	}
	before, counted := rnrNAKs()
	if _, err := io.WriteString(tc, script(loops)+"\r\n"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the script has started

	const n = 3000 // valkey posts 1024 receives
	written := make(chan error, 1)
	go func() {
		for i := range n {
			if _, err := c.Write([]byte("PING\r\n")); err != nil {
				written <- fmt.Errorf("write %d of %d into a stalled server: %w", i, n, err)
				return
			}
		}
		written <- nil
	}()
	for i := range n {
		line, err := r.ReadString('\n')
		if err != nil || line != "+PONG\r\n" {
			t.Fatalf("reply %d of %d: %q, %v (writer: %v)", i, n, line, err, errOrRunning(written))
		}
	}
	if err := <-written; err != nil {
		t.Fatal(err)
	}
	if line, err := tr.ReadString('\n'); err != nil || line != fmt.Sprintf(":%d\r\n", loops) {
		t.Fatalf("EVAL of %d loops: %q, %v", loops, line, err)
	}
	if after, _ := rnrNAKs(); counted && after-before < 1 {
		t.Fatalf("no RNR NAK while valkey-server ran a script of %d loops: it did not stall our writes", loops)
	} else if counted {
		t.Logf("%d RNR NAKs while valkey-server ran a script of %d loops", after-before, loops)
	}
}

// errOrRunning is the error a goroutine sent on ch, if it has.
func errOrRunning(ch <-chan error) any {
	select {
	case err := <-ch:
		return err
	default:
		return "still running"
	}
}
