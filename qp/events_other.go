//go:build !linux

package qp

import (
	"errors"
	"runtime"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// newEventChannel fails off Linux, where no rdma_cm event channel exists.
func newEventChannel(t *verbs.Table) (*eventChannel, error) {
	return nil, errors.New("rdma: rdma_cm event channels need Linux; this is " + runtime.GOOS)
}
