package mr

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/seed54442f1a/rdmapool/internal/unsafeptr"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// Register maps size bytes (rounded up to whole pages) and registers them
// with pd. The libraries must be bound (loader.Load).
func Register(pd PD, size int, access Access) (*Region, error) {
	t := verbs.Bound()
	if t == nil {
		return nil, errors.New("mr: the RDMA libraries are not loaded")
	}
	if size <= 0 {
		return nil, fmt.Errorf("mr: invalid size %d", size)
	}
	if pd.h.IsNil() {
		return nil, errors.New("mr: no protection domain (the zero PD)")
	}
	page := unix.Getpagesize()
	size = (size + page - 1) &^ (page - 1)
	buf, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("mr: mmap %d bytes: %w", size, err)
	}
	mr, err := t.RegMR(pd.h, unsafeptr.Addr(buf), uintptr(size), int(access))
	if err != nil {
		unix.Munmap(buf)
		return nil, registerError(size, err)
	}
	m := mr.Get()
	return &Region{t: t, buf: buf, mr: mr, lkey: m.LKey, rkey: m.RKey}, nil
}

// registerError explains a failed ibv_reg_mr; ENOMEM and EPERM there almost
// always mean the locked-memory limit.
func registerError(size int, err error) error {
	if !errors.Is(err, unix.ENOMEM) && !errors.Is(err, unix.EPERM) && !errors.Is(err, unix.EAGAIN) {
		return fmt.Errorf("mr: registering %d bytes: %w", size, err)
	}
	var rl unix.Rlimit
	limit := "unknown"
	if unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl) == nil {
		limit = fmtLimit(rl.Cur)
	}
	return fmt.Errorf("mr: registering %d bytes: %w: %w; RLIMIT_MEMLOCK is %s: raise it (ulimit -l unlimited, LimitMEMLOCK=infinity in a systemd unit, or memlock in /etc/security/limits.conf) or use smaller buffers",
		size, err, ErrMemlock, limit)
}

func fmtLimit(v uint64) string {
	if v == unix.RLIM_INFINITY {
		return "unlimited"
	}
	return fmt.Sprintf("%d KiB", v/1024)
}

// Close deregisters the region, then unmaps it. It is idempotent.
func (r *Region) Close() error {
	if r.mr.IsNil() {
		return nil
	}
	err := r.t.DeregMR(r.mr)
	r.mr = verbs.Ptr[verbs.MR]{}
	if err != nil {
		// Still registered: the NIC may touch it, so it must stay mapped.
		return fmt.Errorf("mr: %w (the memory stays mapped)", err)
	}
	err = unix.Munmap(r.buf)
	r.buf = nil
	return err
}
