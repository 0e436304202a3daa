package pool

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/seed54442f1a/rdmapool/loader"
	"github.com/seed54442f1a/rdmapool/qp"
)

// Policy says which transport a Pool dials.
type Policy int

const (
	// Auto dials RDMA first and falls back to TCP when RDMA is unavailable
	// (libraries missing, no device, no route, connection refused on the
	// RDMA port). It tries RDMA again after RDMARetryInterval, so a machine
	// that gains RDMA goes back to it.
	Auto Policy = iota
	// RDMAOnly never uses TCP.
	RDMAOnly
	// TCPOnly never uses RDMA.
	TCPOnly
)

func (p Policy) String() string {
	switch p {
	case Auto:
		return "auto"
	case RDMAOnly:
		return "rdma"
	case TCPOnly:
		return "tcp"
	}
	return fmt.Sprintf("Policy(%d)", int(p))
}

// ParsePolicy parses "auto", "rdma" or "tcp".
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "auto", "":
		return Auto, nil
	case "rdma":
		return RDMAOnly, nil
	case "tcp":
		return TCPOnly, nil
	}
	return 0, fmt.Errorf("unknown transport policy %q (want auto, rdma or tcp)", s)
}

// FallbackReason classifies why RDMA was not used.
type FallbackReason string

const (
	ReasonLibraries     FallbackReason = "libraries"      // librdmacm or libibverbs cannot be loaded
	ReasonNoDevice      FallbackReason = "no-device"      // no RDMA device
	ReasonNoRoute       FallbackReason = "no-route"       // rdma_cm found no route to the address
	ReasonRefused       FallbackReason = "refused"        // nothing listens on the RDMA port
	ReasonDeviceRemoved FallbackReason = "device-removed" // the device went away
	ReasonTLS           FallbackReason = "tls"            // TLS was asked for; RDMA has none
)

// FallbackError says why a connection uses TCP although RDMA was preferred.
// One is recorded in Stats and given to Options.OnFallback for every such
// connection; falling back is never silent.
type FallbackError struct {
	Reason FallbackReason
	Err    error // the RDMA error
	// Skipped says RDMA was not tried for this connection: a dial less
	// than RDMARetryInterval before fell back, and Reason and Err are its.
	Skipped bool
}

func (e *FallbackError) Error() string {
	if e.Skipped {
		return fmt.Sprintf("rdmapool: using TCP instead of RDMA (%s, not retried yet): %v", e.Reason, e.Err)
	}
	return fmt.Sprintf("rdmapool: using TCP instead of RDMA (%s): %v", e.Reason, e.Err)
}

func (e *FallbackError) Unwrap() error { return e.Err }

// fallbackReason returns why err means RDMA is unavailable, or "" when err
// is some other failure (which is returned, not fallen back from).
func fallbackReason(err error) FallbackReason {
	switch {
	case errors.Is(err, loader.ErrUnavailable):
		return ReasonLibraries
	case errors.Is(err, qp.ErrDeviceRemoved):
		return ReasonDeviceRemoved
	case errors.Is(err, syscall.ENODEV), errors.Is(err, syscall.ENOSYS):
		return ReasonNoDevice
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.EADDRNOTAVAIL), errors.Is(err, syscall.ENETUNREACH):
		return ReasonNoRoute
	case errors.Is(err, syscall.ECONNREFUSED):
		return ReasonRefused
	}
	return ""
}
