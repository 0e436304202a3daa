//go:build !linux

package loader

import (
	"runtime"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// bind fails off Linux: rdmapool binds the RDMA libraries only there.
func bind(config) (*Libraries, *verbs.Table, error) {
	return nil, nil, &UnsupportedOSError{GOOS: runtime.GOOS}
}
