package qp

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// newCMChannel makes an rdma_cm event channel with a non-blocking fd and an
// os.File on a duplicate of it, for the netpoller.
func newCMChannel(t *verbs.Table) (verbs.Ptr[verbs.EventChannel], *os.File, error) {
	ch, err := t.CreateEventChannel()
	if err != nil {
		return ch, nil, err
	}
	fd := verbs.EventChannelFD(ch)
	if err := unix.SetNonblock(fd, true); err != nil {
		t.DestroyEventChannel(ch)
		return verbs.Ptr[verbs.EventChannel]{}, nil, os.NewSyscallError("fcntl", err)
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.DestroyEventChannel(ch)
		return verbs.Ptr[verbs.EventChannel]{}, nil, os.NewSyscallError("fcntl", err)
	}
	return ch, os.NewFile(uintptr(dup), "rdma_cm"), nil
}
