package mr

import (
	"fmt"
	"sync/atomic"
)

// RecvRing is the receive buffer of a connection: a remotely writable Region
// that the peer fills from offset 0 upwards with RDMA writes, and that the
// reader drains in order. It never wraps: once the reader has consumed every
// byte, the buffer is re-armed (Reset) and the peer told so.
//
// The peer's writes are reported with Wrote, from the completion handler; the
// reader uses Readable and Consume. Those two sides may run on different
// goroutines; each method says which side it belongs to.
type RecvRing struct {
	r       *Region
	written atomic.Uint32 // bytes the peer has written; advanced by Wrote
	read    int           // bytes consumed; the reader's own
}

// NewRecvRing wraps a region (registered with LocalWrite|RemoteWrite).
func NewRecvRing(r *Region) *RecvRing { return &RecvRing{r: r} }

// Region returns the ring's memory, to advertise its address, length and key.
func (q *RecvRing) Region() *Region { return q.r }

// Wrote records that the peer wrote n more bytes (completion side). It fails,
// changing nothing, when that would overrun the buffer: a protocol error. A
// write of 0 bytes changes nothing either: stored back, its offset could
// undo a Reset that ran in between.
func (q *RecvRing) Wrote(n uint32) error {
	if n == 0 {
		return nil
	}
	w := q.written.Load()
	if uint64(w)+uint64(n) > uint64(q.r.Len()) {
		return fmt.Errorf("peer wrote %d bytes at offset %d of a %d-byte receive buffer", n, w, q.r.Len())
	}
	q.written.Store(w + n)
	return nil
}

// Readable returns the bytes written and not yet consumed (reader side). The
// slice stays valid and unchanged until the reader consumes it: the peer
// cannot write there again before Reset.
func (q *RecvRing) Readable() []byte {
	return q.r.Bytes()[q.read:q.written.Load()]
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
}

// SendRing is the local staging area for writes into the peer's receive
// buffer. Its offsets mirror the peer's: the bytes at offset o are written to
// the peer's buffer at offset o, so like the peer's buffer it never wraps and
// is re-armed when the peer has consumed it all. It is not safe for
// concurrent use; the connection serialises its writers.
type SendRing struct {
	pd     PD
	r      *Region // local staging, at least the peer's length; nil until armed
	remote uint64  // peer's buffer address
	length uint32  // peer's buffer length
	rkey   uint32
	off    uint32
}

// NewSendRing returns an unarmed ring whose staging memory will be registered
// with pd.
func NewSendRing(pd PD) *SendRing { return &SendRing{pd: pd} }

// Arm points the ring at the peer's buffer (a RegisterXferMemory message) and
// starts again at offset 0, growing the staging area if the peer's buffer
// grew.
func (s *SendRing) Arm(addr uint64, length, rkey uint32) error {
	if s.r == nil || s.r.Len() < int(length) {
		r, err := Register(s.pd, int(length), 0) // local read only: the NIC reads it for RDMA writes
		if err != nil {
			return err
		}
		if s.r != nil {
			s.r.Close()
		}
		s.r = r
	}
	s.remote, s.length, s.rkey, s.off = addr, length, rkey, 0
	return nil
}

// Armed reports whether the peer has told where to write.
func (s *SendRing) Armed() bool { return s.length != 0 }

// Available is how many bytes may be written before the peer re-arms.
func (s *SendRing) Available() int { return int(s.length - s.off) }

// Reserve returns staging memory for up to n bytes at the current offset, or
// less when the peer's buffer has less room. The slice is valid until the
// next Commit or Arm; fill it, then Commit what was filled.
func (s *SendRing) Reserve(n int) []byte {
	if a := s.Available(); n > a {
		n = a
	}
	return s.r.Bytes()[s.off : s.off+uint32(n)]
}

// Commit advances the offset by n reserved bytes and returns what an RDMA
// write of them needs: the local address and key, and the remote address and
// key.
func (s *SendRing) Commit(n int) (local uint64, lkey uint32, remote uint64, rkey uint32) {
	local, remote = s.r.Addr()+uint64(s.off), s.remote+uint64(s.off)
	s.off += uint32(n)
	return local, s.r.LKey(), remote, s.rkey
}

// Close releases the staging memory.
func (s *SendRing) Close() error {
	if s.r == nil {
		return nil
	}
	err := s.r.Close()
	s.r = nil
	return err
}
