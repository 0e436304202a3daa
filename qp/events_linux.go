package qp

import (
	"os"

	"golang.org/x/sys/unix"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

func newEventChannel(t *verbs.Table) (*eventChannel, error) {
	ch, err := t.CreateEventChannel()
	if err != nil {
		return nil, err
	}
	fd := verbs.EventChannelFD(ch)
	if err := unix.SetNonblock(fd, true); err != nil {
		t.DestroyEventChannel(ch)
		return nil, os.NewSyscallError("fcntl", err)
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.DestroyEventChannel(ch)
		return nil, os.NewSyscallError("fcntl", err)
	}
	return &eventChannel{t: t, ch: ch, f: os.NewFile(uintptr(dup), "rdma_cm")}, nil
}
