package pool

import (
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/seed54442f1a/rdmapool/loader"
	"github.com/seed54442f1a/rdmapool/qp"
)

// Policy says which transport a Pool dials.
type Policy int

const (
	// Auto prefers RDMA: it dials RDMA first, and TCP beside it when the
	// RDMA dial fails or has not connected within Options.FallbackDelay;
	// the first to connect is used. When RDMA is unavailable (libraries
	// missing, no device, no route, connection refused on the RDMA port)
	// it dials TCP alone until RDMARetryInterval has passed, so a machine
	// that gains RDMA goes back to it; after any other RDMA failure the
	// next dial tries RDMA again.
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
	ReasonSlow          FallbackReason = "slow"           // RDMA had not connected within FallbackDelay; TCP connected first
	ReasonFailed        FallbackReason = "failed"         // the RDMA dial failed otherwise (a timeout, a name that does not resolve, a protocol error)
)

// FallbackError says why a connection uses TCP although RDMA was preferred.
// Every such connection is counted in Stats (Fallbacks, LastFallback), and
// Options.OnFallback is told when the reason changes; falling back is
// never silent.
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

// remedy says what to do about a reason RDMA cannot be used, in the words
// of `rdmapool info` (package loader/probe), or "" when the error says it
// already (ReasonLibraries: what to install) or there is nothing to do.
func remedy(r FallbackReason) string {
	switch r {
	case ReasonNoDevice:
		return "RDMA cannot be used: no RDMA device; load a NIC driver, or for soft-RoCE: modprobe rdma_rxe && rdma link add rxe0 type rxe netdev <ifname>"
	case ReasonNoRoute:
		return "RDMA cannot reach the address: no active RDMA port has a GID on its network; check the link (rdma link show) and the GIDs (rdmapool info)"
	case ReasonRefused:
		return "nothing listens on the RDMA port: start the server with RDMA (valkey-server --rdma-port), or set Options.RDMAPort or RDMAAddr to the port it listens on"
	case ReasonDeviceRemoved:
		return "the RDMA device went away; check the link (rdma link show)"
	}
	return ""
}

// withRemedy adds to an RDMAOnly dial's error what to do, when it says RDMA
// is unavailable; errors.Is and errors.As see the error as before.
func withRemedy(err error) error {
	var own interface{ remedy() string }
	if errors.As(err, &own) {
		return &remedyError{err: err, remedy: own.remedy()}
	}
	if rm := remedy(fallbackReason(err)); rm != "" {
		return &remedyError{err: err, remedy: rm}
	}
	return err
}

type remedyError struct {
	err    error
	remedy string
}

func (e *remedyError) Error() string { return e.err.Error() + " (" + e.remedy + ")" }
func (e *remedyError) Unwrap() error { return e.err }

// Timeout is the error's, so that a timeout stays one (net.Error).
func (e *remedyError) Timeout() bool {
	var ne net.Error
	return errors.As(e.err, &ne) && ne.Timeout()
}
