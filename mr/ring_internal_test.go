package mr

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// fakeMem is plain memory standing in for a registered region.
type fakeMem struct {
	buf    []byte
	closed bool
}

func (m *fakeMem) Bytes() []byte { return m.buf }
func (m *fakeMem) Addr() uint64  { return uint64(uintptr(unsafe.Pointer(&m.buf[0]))) }
func (m *fakeMem) LKey() uint32  { return uint32(len(m.buf)) }
func (m *fakeMem) Close() error {
	if m.closed {
		panic("closed twice")
	}
	m.closed = true
	return nil
}

// fakeRing is a SendRing on fake memory that records every region.
type fakeRing struct {
	*SendRing
	mems []*fakeMem
	fail bool // registrations fail
}

func newFakeRing(min, max int) *fakeRing {
	f := &fakeRing{}
	f.SendRing = newSendRing(func(size int) (memory, error) {
		if f.fail {
			return nil, errTest
		}
		m := &fakeMem{buf: make([]byte, size)}
		f.mems = append(f.mems, m)
		return m, nil
	}, min, max)
	return f
}

// Reserve does what the connection does, at once: a Reserve, and if it
// asks for memory, the registration (Prepare, Offer) and the Reserve again;
// the error is that of a registration when the ring has no memory. Regions
// given up are closed after each call.
func (f *fakeRing) Reserve(n int, done uint32) ([]byte, bool, error) {
	defer f.closeDead()
	b, ok := f.SendRing.Reserve(n, done)
	size := f.Wanted()
	if size == 0 {
		return b, ok, nil
	}
	m, err := f.Prepare(size)
	if err != nil {
		f.Refused()
		if !f.HasMemory() {
			return nil, false, err
		}
		return b, ok, nil
	}
	f.Offer(m)
	b, ok = f.SendRing.Reserve(n, done)
	return b, ok, nil
}

// Shrink does what the connection's keepalive does, at once: ShrinkWanted,
// the registration, ShrinkTo.
func (f *fakeRing) Shrink(done uint32) bool {
	defer f.closeDead()
	size := f.ShrinkWanted(done)
	if size == 0 {
		return false
	}
	m, err := f.Prepare(size)
	if err != nil {
		return false
	}
	return f.ShrinkTo(m, done)
}

func (f *fakeRing) closeDead() {
	for _, m := range f.Dead() {
		m.Close()
	}
}

// TestSendRingRegistersNothing: the ring itself neither registers nor
// closes memory: a Reserve that wants more asks for it (Wanted) and hands
// out what there is meanwhile; the offered region goes in place at the next
// Reserve, and the old one comes back (Dead) for the caller to close.
func TestSendRingRegistersNothing(t *testing.T) {
	f := newFakeRing(64<<10, 16<<20)
	f.Arm(0x1000, 1<<20, 7)
	if _, ok := f.SendRing.Reserve(100, 0); ok || f.Wanted() != 64<<10 || len(f.mems) != 0 {
		t.Fatalf("no memory yet: ok %v, wanted %d, %d registrations", ok, f.Wanted(), len(f.mems))
	}
	m, _ := f.Prepare(f.Wanted())
	f.Offer(m)
	b, ok := f.SendRing.Reserve(100, 0)
	if !ok || len(b) != 100 || f.Wanted() != 0 {
		t.Fatalf("with the offered memory: %d bytes, ok %v, wanted %d", len(b), ok, f.Wanted())
	}
	f.Commit(len(b), 0)
	b, ok = f.SendRing.Reserve(1<<20, 1)
	if !ok || len(b) != 64<<10 || f.Wanted() != 1<<20 || len(f.mems) != 1 {
		t.Fatalf("growth asked: %d bytes, ok %v, wanted %d, %d registrations", len(b), ok, f.Wanted(), len(f.mems))
	}
	m, _ = f.Prepare(f.Wanted())
	f.Offer(m)
	if b, ok = f.SendRing.Reserve(1<<20, 1); !ok || len(b) != 1<<20-100 {
		t.Fatalf("with the grown memory: %d bytes, ok %v", len(b), ok)
	}
	if f.mems[0].closed {
		t.Fatal("the ring closed a region itself")
	}
	dead := f.Dead()
	if len(dead) != 1 || dead[0].Len() != 64<<10 || f.Dead() != nil {
		t.Fatalf("given up: %d regions", len(dead))
	}
	dead[0].Close()
	// An offer no longer of use (not bigger) is given up, not used.
	m, _ = f.Prepare(128 << 10)
	f.Offer(m)
	f.Arm(0x2000, 4<<20, 8)
	if _, ok = f.SendRing.Reserve(4<<20, 1); !ok || f.Pinned() != 1<<20+128<<10 || f.Wanted() != 4<<20 {
		t.Fatalf("a smaller offer: ok %v, pinned %d, wanted %d", ok, f.Pinned(), f.Wanted())
	}
	if dead = f.Dead(); len(dead) != 1 || dead[0].Len() != 128<<10 {
		t.Fatalf("a smaller offer: %d regions given up", len(dead))
	}
	dead[0].Close()
	f.Close()
}

type testError struct{}

func (testError) Error() string { return "registration refused" }

var errTest error = testError{}

func (f *fakeRing) open() (n int) {
	for _, m := range f.mems {
		if !m.closed {
			n += len(m.buf)
		}
	}
	return n
}

func TestSendRingSmallWritesStayInBase(t *testing.T) {
	f := newFakeRing(64<<10, 16<<20)
	f.Arm(0x1000, 1<<20, 7)
	var seq uint32
	for i := range 10000 {
		b, ok, err := f.Reserve(100, seq) // each write done before the next
		if err != nil || !ok || len(b) != 100 {
			t.Fatalf("write %d: %d bytes, ok %v, %v", i, len(b), ok, err)
		}
		if f.Available() < 100 {
			f.Arm(0x1000, 1<<20, 7)
		}
		w := f.Commit(100, seq)
		remote, rkey := w.Remote, w.RKey
		if rkey != 7 || remote < 0x1000 || remote+100 > 0x1000+1<<20 {
			t.Fatalf("write %d: remote %#x key %d", i, remote, rkey)
		}
		seq++
	}
	if f.Pinned() != 64<<10 || len(f.mems) != 1 {
		t.Fatalf("pinned %d in %d registrations, want one of 64 KiB", f.Pinned(), len(f.mems))
	}
}

func TestSendRingLargeWriteGrowsToPeer(t *testing.T) {
	f := newFakeRing(64<<10, 16<<20)
	f.Arm(0x1000, 1<<20, 7)
	b, ok, err := f.Reserve(16<<20, 0)
	if err != nil || !ok || len(b) != 1<<20 {
		t.Fatalf("Reserve of 16 MiB against a 1 MiB peer: %d bytes, ok %v, %v", len(b), ok, err)
	}
	if f.Pinned() != 1<<20 || len(f.mems) != 1 {
		t.Fatalf("pinned %d in %d registrations, want one of 1 MiB", f.Pinned(), len(f.mems))
	}
	if !f.Commit(len(b), 0).Signal {
		t.Error("a write that fills the ring is not signalled")
	}
	f.Arm(0x2000, 1<<20, 8) // the peer re-armed; the write may still be in flight
	if _, ok, _ := f.Reserve(1<<20, 0); ok {
		t.Fatal("the bytes of a write in flight were handed out again")
	}
	b, ok, _ = f.Reserve(1<<20, 1)
	if !ok || len(b) != 1<<20 {
		t.Fatalf("after the completion: %d bytes, ok %v", len(b), ok)
	}
}

func TestSendRingGrowKeepsOldUntilDone(t *testing.T) {
	f := newFakeRing(64<<10, 16<<20)
	f.Arm(0x1000, 1<<20, 7)
	// Fill the base ring with writes that do not complete.
	var seq uint32
	for seq == 0 || f.Pinned() == 64<<10 {
		b, ok, err := f.Reserve(8<<10, 0)
		if err != nil || !ok {
			t.Fatalf("write %d: ok %v, %v", seq, ok, err)
		}
		f.Commit(len(b), seq)
		seq++
	}
	if len(f.mems) != 2 || f.mems[0].closed {
		t.Fatalf("after growing: %d registrations, the first closed: %v", len(f.mems), f.mems[0].closed)
	}
	if f.Pinned() != 64<<10+128<<10 {
		t.Fatalf("pinned %d, want the old 64 KiB and the new 128 KiB", f.Pinned())
	}
	// seq-1 is the growing write itself, in the new region; the old
	// region's last is seq-2.
	f.Reserve(0, seq-2)
	if f.mems[0].closed {
		t.Fatal("the old region was closed with its last write in flight")
	}
	f.Reserve(0, seq-1)
	if !f.mems[0].closed || f.Pinned() != 128<<10 {
		t.Fatalf("after its writes completed the old region is closed: %v, pinned %d", f.mems[0].closed, f.Pinned())
	}
}

func TestSendRingShrinkWhenIdle(t *testing.T) {
	f := newFakeRing(64<<10, 16<<20)
	f.Arm(0x1000, 1<<20, 7)
	b, _, _ := f.Reserve(1<<20, 0)
	f.Commit(len(b), 0)
	if f.Shrink(0) {
		t.Fatal("shrunk right after a write")
	}
	if f.Shrink(0) {
		t.Fatal("shrunk with a write in flight")
	}
	if !f.Shrink(1) || f.Pinned() != 64<<10 || f.open() != 64<<10 {
		t.Fatalf("idle and done: pinned %d, open %d, want 64 KiB", f.Pinned(), f.open())
	}
	if f.Shrink(1) {
		t.Fatal("shrunk below the base")
	}
	f.fail = true
	f.Arm(0x2000, 1<<20, 8)
	b, _, _ = f.Reserve(1<<20, 1) // growth fails: the base ring serves
	if len(b) != 64<<10 {
		t.Fatalf("with growth refused: %d bytes, want the base ring's 64 KiB", len(b))
	}
	if err := f.Close(); err != nil || f.open() != 0 {
		t.Fatalf("Close: %v, %d bytes left open", err, f.open())
	}
}

func TestSendRingFirstRegistrationFails(t *testing.T) {
	f := newFakeRing(64<<10, 16<<20)
	f.fail = true
	f.Arm(0x1000, 1<<20, 7)
	if _, ok, err := f.Reserve(10, 0); err == nil || ok {
		t.Fatalf("ok %v, error %v; want the registration's error", ok, err)
	}
}

func TestSendRingSmallPeer(t *testing.T) {
	f := newFakeRing(64<<10, 16<<20)
	f.Arm(0x1000, 4<<10, 7)
	b, ok, _ := f.Reserve(1<<20, 0)
	if !ok || len(b) != 4<<10 || f.Pinned() != 4<<10 {
		t.Fatalf("a 4 KiB peer: %d bytes, pinned %d", len(b), f.Pinned())
	}
}

// TestSendRingRandom drives the ring with random writes, re-arms and
// completions, and checks against a model: no byte is handed out while a
// write that reads it is in flight, a region is closed only once its writes
// have completed, a Reserve that says wait has a signalled write in flight,
// and the remote offsets follow the peer's buffer.
func TestSendRingRandom(t *testing.T) {
	for round := range 20 {
		rng := rand.New(rand.NewPCG(uint64(round), 1))
		peer := []int{4 << 10, 64 << 10, 1 << 20}[round%3]
		f := newFakeRing(16<<10, 16<<20)
		f.Arm(0, uint32(peer), 1)
		type flight struct {
			seq      uint32
			lo, hi   uint64 // local addresses
			signal   bool
			mem      *fakeMem
			remoteHi uint64
		}
		var inflight []flight
		var posted, done uint32
		waits := 0
		for step := range 8000 {
			// Completions: a signalled write completes, and with it
			// every one before.
			if len(inflight) > 0 && rng.IntN(3) == 0 {
				for i := len(inflight) - 1; i >= 0; i-- {
					if inflight[i].signal && rng.IntN(2) == 0 {
						done = inflight[i].seq + 1
						inflight = inflight[i+1:]
						break
					}
				}
			}
			if f.Available() == 0 || rng.IntN(50) == 0 {
				f.Arm(0, uint32(peer), 1)
			}
			switch rng.IntN(300) {
			case 0:
				f.Shrink(done)
			case 1: // idle: a keepalive completes everything, two looks
				posted++
				done, inflight = posted, nil
				f.Shrink(done)
				f.Shrink(done)
			}
			n := rng.IntN(3000) + 1
			if rng.IntN(20) == 0 {
				n = rng.IntN(2<<20) + 1
			}
			b, ok, err := f.Reserve(n, done)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range f.mems {
				if m.closed {
					for _, w := range inflight {
						if w.mem == m {
							t.Fatalf("round %d step %d: a region closed with write %d in flight", round, step, w.seq)
						}
					}
				}
			}
			if !ok {
				signalled := false
				for _, w := range inflight {
					signalled = signalled || w.signal
				}
				if !signalled {
					t.Fatalf("round %d step %d: Reserve waits with no signalled write in flight (%d in flight)", round, step, len(inflight))
				}
				waits++
				continue
			}
			if len(b) == 0 || len(b) > n || len(b) > f.Available() {
				t.Fatalf("round %d step %d: %d bytes for %d, %d available", round, step, len(b), n, f.Available())
			}
			k := rng.IntN(len(b)) + 1
			lo := uint64(uintptr(unsafe.Pointer(&b[0])))
			hi := lo + uint64(k)
			for _, w := range inflight {
				if lo < w.hi && w.lo < hi {
					t.Fatalf("round %d step %d: bytes [%#x,%#x) handed out with write %d on [%#x,%#x) in flight", round, step, lo, hi, w.seq, w.lo, w.hi)
				}
			}
			off := uint64(peer - f.Available())
			w := f.Commit(k, posted)
			local, remote, signal := w.Local, w.Remote, w.Signal
			if local != lo || remote != off {
				t.Fatalf("round %d step %d: local %#x remote %d, want %#x and %d", round, step, local, remote, lo, off)
			}
			mem := f.mems[len(f.mems)-1]
			inflight = append(inflight, flight{seq: posted, lo: lo, hi: hi, signal: signal || posted%128 == 0, mem: mem, remoteHi: off + uint64(k)})
			posted++
		}
		if waits == 0 || peer > 16<<10 && len(f.mems) < 3 {
			t.Errorf("round %d: %d waits, %d registrations: the test did not exercise the ring", round, waits, len(f.mems))
		}
		done = posted
		f.Shrink(done) // the first look after writes only notes them
		f.Shrink(done)
		if f.Pinned() > 16<<10 || f.open() != f.Pinned() {
			t.Fatalf("round %d: all done and idle: pinned %d, open %d", round, f.Pinned(), f.open())
		}
		f.Close()
		if f.open() != 0 {
			t.Fatalf("round %d: %d bytes open after Close", round, f.open())
		}
	}
}
