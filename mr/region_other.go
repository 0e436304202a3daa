//go:build !linux

package mr

import (
	"errors"
	"runtime"
)

// Register fails off Linux: there is no RDMA device to register memory with.
func Register(pd PD, size int, access Access) (*Region, error) {
	return nil, errors.New("mr: registering memory needs Linux (libibverbs); this is " + runtime.GOOS)
}

// Close does nothing: off Linux no Region is ever registered.
func (r *Region) Close() error { return nil }
