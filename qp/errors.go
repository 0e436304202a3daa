package qp

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// ProtocolError says the peer broke the Valkey-over-RDMA protocol. The
// connection is closed; nothing else is affected.
type ProtocolError struct {
	What string
}

func (e *ProtocolError) Error() string { return "rdma: protocol error from peer: " + e.What }

// CompletionError is a work request that completed with an error status.
type CompletionError struct {
	Op     string // "send", "write", "receive"
	Status uint32 // enum ibv_wc_status
	Text   string // ibv_wc_status_str
	Vendor uint32
}

func (e *CompletionError) Error() string {
	return fmt.Sprintf("rdma: %s completed with error: %s (status %d, vendor error %#x)", e.Op, e.Text, e.Status, e.Vendor)
}

// Is lets errors.Is(err, ErrPeerGone) match the statuses that mean the peer
// is unreachable or gone.
func (e *CompletionError) Is(target error) bool {
	return target == ErrPeerGone && (e.Status == verbs.WCRetryExcErr || e.Status == verbs.WCRNRRetryExcErr || e.Status == verbs.WCRemAbortErr)
}

var (
	// ErrPeerGone is matched by errors saying the peer closed the
	// connection, vanished, or became unreachable. It also matches
	// syscall.ECONNRESET.
	ErrPeerGone = &peerGoneError{}
	// ErrDeviceRemoved is matched by the error of every connection whose
	// RDMA device was removed.
	ErrDeviceRemoved = errors.New("rdma: the RDMA device was removed")
)

type peerGoneError struct{}

func (*peerGoneError) Error() string { return "rdma: peer closed the connection or is gone" }
func (*peerGoneError) Is(target error) bool {
	return target == syscall.ECONNRESET
}

// connectError is a failed Dial step, with the rdma_cm event that ended it.
func connectError(step, event string, status int32) error {
	err := fmt.Errorf("rdma: %s: %s (status %d)", step, event, status)
	switch event {
	case "RDMA_CM_EVENT_REJECTED":
		return fmt.Errorf("%w: %w", err, syscall.ECONNREFUSED)
	case "RDMA_CM_EVENT_UNREACHABLE", "RDMA_CM_EVENT_ADDR_ERROR", "RDMA_CM_EVENT_ROUTE_ERROR":
		return fmt.Errorf("%w: %w", err, syscall.EHOSTUNREACH)
	}
	return err
}
