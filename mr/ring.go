package mr

import (
	"fmt"
	"sync/atomic"
)

// RecvRing is the receive buffer of a connection: a remotely writable Region
// that the peer fills from offset 0 upwards with RDMA writes, and that the
// reader drains in order. It never wraps: once the reader has consumed every
// byte, the buffer is re-armed (Reset, or ResetTo with another region) and
// the peer told so.
//
// The peer's writes are reported with Wrote, from the completion handler; the
// reader uses Readable and Consume. Those two sides may run on different
// goroutines; each method says which side it belongs to.
type RecvRing struct {
	r       *Region       // the reader's own
	size    atomic.Uint32 // r.Len(), for Wrote
	written atomic.Uint32 // bytes the peer has written; advanced by Wrote
	writes  atomic.Uint32 // the writes that wrote them
	read    int           // bytes consumed; the reader's own
}

// NewRecvRing wraps a region (registered with LocalWrite|RemoteWrite).
func NewRecvRing(r *Region) *RecvRing {
	q := &RecvRing{r: r}
	q.size.Store(uint32(r.Len()))
	return q
}

// Region returns the ring's memory, to advertise its address, length and key
// (reader side).
func (q *RecvRing) Region() *Region { return q.r }

// Wrote records that the peer wrote n more bytes (completion side). It fails,
// changing nothing, when that would overrun the buffer: a protocol error. A
// write of 0 bytes changes nothing either: stored back, its offset could
// undo a Reset that ran in between.
func (q *RecvRing) Wrote(n uint32) error {
	if n == 0 {
		return nil
	}
	w, size := q.written.Load(), q.size.Load()
	if uint64(w)+uint64(n) > uint64(size) {
		return fmt.Errorf("peer wrote %d bytes at offset %d of a %d-byte receive buffer", n, w, size)
	}
	q.written.Store(w + n)
	q.writes.Store(q.writes.Load() + 1)
	return nil
}

// Readable returns the bytes written and not yet consumed (reader side). The
// slice stays valid and unchanged until the reader consumes it: the peer
// cannot write there again before Reset.
func (q *RecvRing) Readable() []byte {
	return q.r.Bytes()[q.read:q.written.Load()]
}

// Written is how many bytes the peer has written since the last Reset, and
// in how many writes.
func (q *RecvRing) Written() (bytes, writes int) {
	return int(q.written.Load()), int(q.writes.Load())
}

// Consume marks n readable bytes as consumed (reader side) and reports
// whether the whole buffer has now been consumed, when the caller must Reset
// it and re-arm the peer.
func (q *RecvRing) Consume(n int) (full bool) {
	q.read += n
	return q.read == q.r.Len()
}

// Reset empties a fully consumed buffer (reader side), before the peer is
// told it may write from offset 0 again.
func (q *RecvRing) Reset() {
	q.read = 0
	q.written.Store(0)
	q.writes.Store(0)
}

// ResetTo empties a fully consumed buffer and puts r in its place (reader
// side), before the peer is told of r. The old region is the caller's to
// close: the peer, having filled it, writes no more into it.
func (q *RecvRing) ResetTo(r *Region) {
	q.r = r
	q.size.Store(uint32(r.Len()))
	q.Reset()
}

// memory is what a SendRing stages into: a Region, or plain memory in tests.
type memory interface {
	Bytes() []byte
	Addr() uint64
	LKey() uint32
	Close() error
}

// SendRing is the local staging memory for writes into the peer's receive
// buffer, sized to the bytes in flight rather than to the peer's buffer.
//
// The peer's buffer (Arm) is written from offset 0 upwards and never wraps,
// as the protocol has it. The staging memory is a ring of its own: a
// Reserve and Commit of n bytes take n contiguous local bytes, which the RDMA
// write posted for them reads, and which are reusable once that write has
// completed. Completions are given as the send queue's done sequence number
// (every WR before it has completed, on an RC QP in order): Commit is told
// the sequence number of the write it is for.
//
// The ring starts at a minimum size and grows to a bigger region when a
// reservation finds too little room, up to the smaller of its maximum and
// the peer's buffer; a region given up keeps its registration until its
// writes have completed. Shrink, called from time to time, goes back to the
// minimum when the ring was idle.
//
// The ring never registers or deregisters memory itself, so that its
// caller's lock is never held across either (milliseconds on a NIC for a
// large region): a Reserve that wants memory says so (Wanted) and goes on
// with what it has; the caller registers it without its lock (Prepare) and
// hands it over under the lock (Offer), and the next Reserve puts it in
// place if it is still wanted. Regions given up whose writes have completed
// are handed back (Dead) for the caller to close once it has let go of its
// lock.
//
// It is not safe for concurrent use, but for Prepare; the connection
// serialises its writers.
type SendRing struct {
	register func(size int) (memory, error)
	min, max int

	m          memory // the staging memory; nil until the first Reserve
	size       int    // len(m.Bytes())
	head, tail uint64 // virtual offsets (position = offset % size): [tail, head) is in flight
	spans      []span // the writes in flight in m, oldest first, from spans[first]
	first      int
	retired    []retiredMem // regions given up by a growth, their writes in flight
	dead       []memory     // regions given up, their writes done: for the caller to close (Dead)
	spare      memory       // registered for a growth (Offer), not yet in place
	want       int          // the size a Reserve found wanting (Wanted); 0: none
	resPos     int          // the position of the last Reserve
	resStart   uint64       // its virtual offset (past any skipped end of the ring)
	active     bool         // a Commit since the last Shrink

	remote uint64 // peer's buffer address
	length uint32 // peer's buffer length
	rkey   uint32
	off    uint32
}

// span is a write in flight: its send sequence number, and the virtual
// offset just past its bytes.
type span struct {
	seq uint32
	end uint64
}

type retiredMem struct {
	m   memory
	seq uint32 // the last write that read it
}

// NewSendRing returns an unarmed ring whose staging memory will be
// registered with pd: min bytes at first (or the peer's buffer length if
// smaller), at most max.
func NewSendRing(pd PD, min, max int) *SendRing {
	return newSendRing(func(size int) (memory, error) { return Register(pd, size, 0) }, min, max) // local read only: the NIC reads it for RDMA writes
}

func newSendRing(register func(int) (memory, error), min, max int) *SendRing {
	return &SendRing{register: register, min: min, max: max}
}

// Staging is registered staging memory on its way into a SendRing
// (Prepare, Offer) or out of it (Dead).
type Staging struct{ m memory }

// Len is the memory's size in bytes.
func (m Staging) Len() int { return len(m.m.Bytes()) }

// Close deregisters and frees the memory.
func (m Staging) Close() error { return m.m.Close() }

// Wanted is the size of the staging memory a Reserve found wanting, 0 if
// none: the caller registers it (Prepare) and hands it over (Offer).
// Without memory at all the ring can hand out nothing until then.
func (s *SendRing) Wanted() int { return s.want }

// Prepare registers size bytes of staging memory for the ring. It touches
// nothing that the other methods change: call it without the lock that
// serialises them.
func (s *SendRing) Prepare(size int) (Staging, error) {
	m, err := s.register(size)
	if err != nil {
		return Staging{}, err
	}
	return Staging{m: m}, nil
}

// Offer hands the ring memory from Prepare. The next Reserve that wants
// memory puts it in place if it is still of use; else it is given up
// (Dead). It answers Wanted; Refused says that the registration failed.
func (s *SendRing) Offer(m Staging) {
	if s.spare != nil {
		s.dead = append(s.dead, s.spare)
	}
	s.spare, s.want = m.m, 0
}

// Refused says that the registration of the memory Wanted failed: the ring
// goes on as it was, and asks again at a later Reserve that wants memory.
func (s *SendRing) Refused() { s.want = 0 }

// HasMemory reports whether the ring has staging memory in place.
func (s *SendRing) HasMemory() bool { return s.m != nil }

// Dead returns the regions given up whose writes have all completed, and
// forgets them: the caller closes them once it has let go of its lock.
func (s *SendRing) Dead() []Staging {
	if len(s.dead) == 0 { // the common case, inlined
		return nil
	}
	return s.takeDead()
}

func (s *SendRing) takeDead() []Staging {
	d := make([]Staging, len(s.dead))
	for i, m := range s.dead {
		d[i] = Staging{m: m}
	}
	clear(s.dead)
	s.dead = s.dead[:0]
	return d
}

// takeSpare puts the offered memory in place if it is bigger than the
// ring's (any, when the ring has none) and within its limit, and reports
// whether it did; memory of no use is given up.
func (s *SendRing) takeSpare() bool {
	m := s.spare
	if m == nil {
		return false
	}
	s.spare = nil
	if n := len(m.Bytes()); n > s.limit() || s.m != nil && n <= s.size {
		s.dead = append(s.dead, m)
		return false
	}
	s.replace(m)
	return true
}

// Arm points the ring at the peer's buffer (a RegisterXferMemory message)
// and starts again at its offset 0. The staging memory stays as it is: bytes
// still in flight keep their place until their writes complete.
func (s *SendRing) Arm(addr uint64, length, rkey uint32) {
	s.remote, s.length, s.rkey, s.off = addr, length, rkey, 0
}

// Armed reports whether the peer has told where to write.
func (s *SendRing) Armed() bool { return s.length != 0 }

// Available is how many bytes may be written before the peer re-arms.
func (s *SendRing) Available() int { return int(s.length - s.off) }

// Pinned is the staging memory registered now, given up and offered
// regions included.
func (s *SendRing) Pinned() int {
	n := s.size
	for _, r := range s.retired {
		n += len(r.m.Bytes())
	}
	for _, m := range s.dead {
		n += len(m.Bytes())
	}
	if s.spare != nil {
		n += len(s.spare.Bytes())
	}
	return n
}

// limit is the most staging memory the ring may have now.
func (s *SendRing) limit() int { return max(min(s.max, int(s.length)), 1) }

// base is the size the ring starts with and shrinks back to.
func (s *SendRing) base() int { return min(s.min, s.limit()) }

// reclaim frees the bytes of the writes completed before done, and the
// given-up regions whose writes have all completed.
func (s *SendRing) reclaim(done uint32) {
	for s.first < len(s.spans) && int32(done-s.spans[s.first].seq) > 0 {
		s.tail = s.spans[s.first].end
		s.first++
	}
	switch {
	case s.first == len(s.spans):
		s.spans, s.first = s.spans[:0], 0
		s.head, s.tail = 0, 0
	case s.first >= 256 && 2*s.first >= len(s.spans):
		s.spans = s.spans[:copy(s.spans, s.spans[s.first:])]
		s.first = 0
	}
	if len(s.retired) == 0 {
		return
	}
	kept := s.retired[:0]
	for _, r := range s.retired {
		if int32(done-r.seq) > 0 {
			s.dead = append(s.dead, r.m)
		} else {
			kept = append(kept, r)
		}
	}
	clear(s.retired[len(kept):])
	s.retired = kept
}

// replace makes m the staging memory; the old one is given up (Dead), or
// kept until the last write that reads it has completed.
func (s *SendRing) replace(m memory) {
	if s.m != nil {
		if s.first < len(s.spans) {
			s.retired = append(s.retired, retiredMem{m: s.m, seq: s.spans[len(s.spans)-1].seq})
		} else {
			s.dead = append(s.dead, s.m)
		}
	}
	s.m, s.size = m, len(m.Bytes())
	s.spans, s.first = s.spans[:0], 0
	s.head, s.tail = 0, 0
}

// fit finds contiguous free room for want bytes, or the most there is: its
// position, its virtual offset and how many bytes it holds.
func (s *SendRing) fit(want int) (pos int, start uint64, got int) {
	used := int(s.head - s.tail)
	if used == s.size {
		return 0, 0, 0
	}
	h, t := int(s.head%uint64(s.size)), int(s.tail%uint64(s.size))
	endPiece, startPiece := s.size-h, 0 // [h, size) then [0, t)
	if used > 0 && h < t {
		endPiece = t - h
	} else if used > 0 {
		startPiece = t
	}
	skip := s.head + uint64(s.size-h) // the next lap's position 0
	switch {
	case endPiece >= want:
		return h, s.head, want
	case startPiece >= want:
		return 0, skip, want
	case endPiece >= startPiece:
		return h, s.head, endPiece
	default:
		return 0, skip, startPiece
	}
}

// Reserve returns staging memory for up to n bytes, less when the peer's
// buffer or the ring has less room, taking done, the send queue's done
// sequence number, to reuse the bytes of completed writes. ok false means
// wait: writes are in flight, and one that is signalled will free room; or
// the ring has no memory yet, and waits for the memory it asks for
// (Wanted, Offer). The slice is valid until the next Commit; fill it, then
// Commit what was filled. A Reserve that finds too little room asks for a
// bigger region (Wanted) and, until it comes, hands out what there is.
func (s *SendRing) Reserve(n int, done uint32) (b []byte, ok bool) {
	s.reclaim(done)
	want := min(n, s.Available())
	if s.m == nil && !s.takeSpare() {
		size := s.base()
		if want > size {
			size = s.grownSize(want)
		}
		s.want = size
		return nil, false
	}
	if want <= 0 {
		s.resPos, s.resStart = 0, s.head
		return s.m.Bytes()[:0], true
	}
	pos, start, got := s.fit(want)
	if got < want && s.size < s.limit() {
		if s.takeSpare() {
			pos, start, got = s.fit(want)
		}
		if got < want && s.size < s.limit() {
			s.want = s.grownSize(want)
		}
	}
	// Waiting is safe only with a signalled write in flight: with less
	// than a quarter free in one piece, at least half the ring is in
	// flight, and the last Commit, which left at least that much, was
	// signalled (Commit).
	if got < want && got < s.size/4 {
		return nil, false
	}
	s.resPos, s.resStart = pos, start
	return s.m.Bytes()[pos : pos+got], true
}

// grownSize is the size of the region a growth for want bytes registers.
func (s *SendRing) grownSize(want int) int {
	size := max(s.size*2, s.base())
	for size < want {
		size *= 2
	}
	return min(size, s.limit())
}

// Write is the RDMA write a Commit stands for, as the send queue posts it:
// Len bytes of staging memory at Local (key LKey) to the peer's buffer at
// Remote (key RKey). Signal says it must be signaled: it leaves half the
// ring or more in flight, so that a Reserve that waits for room always has
// a signaled write to wait for.
type Write struct {
	Local  uint64
	Remote uint64
	Len    uint32
	LKey   uint32
	RKey   uint32
	Signal bool
}

// Commit takes n bytes of the last Reserve for the write with send sequence
// number seq, which is posted next, and returns that write.
func (s *SendRing) Commit(n int, seq uint32) Write {
	w := Write{
		Local:  s.m.Addr() + uint64(s.resPos),
		Remote: s.remote + uint64(s.off),
		Len:    uint32(n),
		LKey:   s.m.LKey(),
		RKey:   s.rkey,
	}
	s.off += uint32(n)
	s.head = s.resStart + uint64(n)
	s.resStart = s.head
	s.resPos += n
	s.spans = append(s.spans, span{seq: seq, end: s.head})
	s.active = true
	w.Signal = 2*(s.head-s.tail) >= uint64(s.size)
	return w
}

// ShrinkWanted is the first half of a shrink: it returns the base size
// when no Commit came since the last look and every write has completed
// (done as for Reserve), else 0. The caller registers that much (Prepare)
// without its lock, then calls ShrinkTo. Memory offered for a growth and
// not used is given up.
func (s *SendRing) ShrinkWanted(done uint32) int {
	s.reclaim(done)
	if s.spare != nil {
		s.dead = append(s.dead, s.spare)
		s.spare = nil
	}
	idle := !s.active
	s.active = false
	if !s.idle(idle) {
		return 0
	}
	return s.base()
}

func (s *SendRing) idle(noCommit bool) bool {
	return noCommit && s.m != nil && s.size > s.base() && s.head == s.tail && len(s.retired) == 0
}

// ShrinkTo puts m, of the size ShrinkWanted returned, in place if the ring
// is still idle (no Commit since, every write done) and bigger, and
// reports whether it did; else m is given up (Dead).
func (s *SendRing) ShrinkTo(m Staging, done uint32) bool {
	s.reclaim(done)
	if !s.idle(!s.active) || m.Len() >= s.size {
		s.dead = append(s.dead, m.m)
		return false
	}
	s.replace(m.m)
	return true
}

// Close releases the staging memory, given-up regions included.
func (s *SendRing) Close() error {
	var err error
	for _, r := range s.retired {
		if e := r.m.Close(); err == nil {
			err = e
		}
	}
	s.retired = nil
	for _, m := range s.dead {
		if e := m.Close(); err == nil {
			err = e
		}
	}
	s.dead = nil
	if s.spare != nil {
		if e := s.spare.Close(); err == nil {
			err = e
		}
		s.spare = nil
	}
	s.want = 0
	if s.m != nil {
		if e := s.m.Close(); err == nil {
			err = e
		}
		s.m, s.size = nil, 0
	}
	return err
}
