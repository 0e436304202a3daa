package qp

import (
	"errors"
	"fmt"
	"os"
	"sync"

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

// raiseFileLimit raises the soft RLIMIT_NOFILE to the hard one, once, on
// first RDMA use. Go does the same at startup (since 1.19); this covers a
// process whose limit was lowered after that (a library, a test's setup),
// as each device and the rdma_cm channel take descriptors, and so do the
// connections' TCP fallbacks beside them.
var raiseFileLimit = sync.OnceFunc(func() {
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) == nil && lim.Cur < lim.Max {
		lim.Cur = lim.Max
		unix.Setrlimit(unix.RLIMIT_NOFILE, &lim)
	}
})

// fileLimitError says, for an error that is EMFILE, what the process's
// limits are.
func fileLimitError(err error) error {
	if !errors.Is(err, unix.EMFILE) {
		return err
	}
	var lim unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &lim) != nil {
		return err
	}
	return fmt.Errorf("%w (the process may open %d files, the hard limit is %d: raise it, e.g. with ulimit -Hn or LimitNOFILE=)", err, lim.Cur, lim.Max)
}
