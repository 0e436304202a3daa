//go:build !linux

package qp

import (
	"errors"
	"os"
	"runtime"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// newCMChannel fails off Linux, where no rdma_cm event channel exists.
func newCMChannel(t *verbs.Table) (verbs.Ptr[verbs.EventChannel], *os.File, error) {
	return verbs.Ptr[verbs.EventChannel]{}, nil, errors.New("rdma: rdma_cm event channels need Linux; this is " + runtime.GOOS)
}

// raiseFileLimit does nothing off Linux.
func raiseFileLimit() {}

// fileLimitError returns err.
func fileLimitError(err error) error { return err }
