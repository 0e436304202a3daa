// Package mr provides memory for RDMA: page-aligned regions outside the Go
// heap, registered with a protection domain, and the send and receive rings
// of a Valkey-over-RDMA connection that callers write into and read from
// directly.
//
// Nothing here is Go-heap memory: the NIC may read or write a Region at any
// time while it is registered, so its bytes come from mmap and are unmapped
// only after they are deregistered.
//
// Registering memory is built for Linux (region_linux.go); on other systems
// (region_other.go) Register fails.
package mr

import (
	"errors"

	"github.com/seed54442f1a/rdmapool/internal/unsafeptr"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// PD is a protection domain to register memory with. Package qp makes one
// per connection (newPD); the zero PD is none, and Register fails with it.
type PD struct {
	h verbs.Ptr[verbs.PD]
}

// newPD wraps a protection domain that the caller allocated and frees after
// every region registered with it. Package qp calls it through
// internal/bridge (bridge.go).
func newPD(h verbs.Ptr[verbs.PD]) PD { return PD{h: h} }

// Access says what a peer and the local NIC may do with a region. Give each
// buffer the least it needs: only a receive buffer is remotely writable.
type Access int

const (
	LocalWrite  Access = verbs.AccessLocalWrite
	RemoteWrite Access = verbs.AccessRemoteWrite
	RemoteRead  Access = verbs.AccessRemoteRead
)

// ErrMemlock is matched (errors.Is) by a registration that failed for lack of
// locked memory.
var ErrMemlock = errors.New("not enough locked memory (RLIMIT_MEMLOCK)")

// Region is registered memory: Size bytes, page aligned, outside the Go heap.
type Region struct {
	t    *verbs.Table
	buf  []byte
	mr   verbs.Ptr[verbs.MR]
	lkey uint32
	rkey uint32
}

// Bytes returns the region's memory. The slice is valid until Close.
func (r *Region) Bytes() []byte { return r.buf }

// Len is the region's size in bytes.
func (r *Region) Len() int { return len(r.buf) }

// Addr is the address of the region's first byte, as the NIC and the peer
// see it.
func (r *Region) Addr() uint64 { return uint64(unsafeptr.Addr(r.buf)) }

// LKey is the local key, for scatter/gather entries.
func (r *Region) LKey() uint32 { return r.lkey }

// RKey is the remote key, for a peer's RDMA operations.
func (r *Region) RKey() uint32 { return r.rkey }
