package netpass

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// A passer is an eventfd registered with the netpoller.
type passer struct {
	f       *os.File
	rc      syscall.RawConn
	written bool                  // this pass wrote the eventfd
	buf     [8]byte               // the eventfd's counter, read
	step    func(fd uintptr) bool // p.wait, made once: a method value allocates
}

// free keeps passers for reuse; a Pass takes one, so concurrent passes do
// not queue behind one fd's read lock.
var free = make(chan *passer, 64)

func newPasser() (*passer, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("netpass: %w", os.NewSyscallError("eventfd", err))
	}
	f, rc, err := File(fd, "netpass eventfd")
	if err != nil {
		return nil, fmt.Errorf("netpass: %w", err)
	}
	p := &passer{f: f, rc: rc}
	p.step = p.wait
	return p, nil
}

// Pass parks the calling goroutine in the netpoller, woken at once by an
// eventfd it writes, so that its P, with nothing else to run, polls the
// network, and the goroutines that poll makes runnable get their turn. It
// returns when the goroutine runs again.
func Pass() error {
	var p *passer
	select {
	case p = <-free:
	default:
		var err error
		if p, err = newPasser(); err != nil {
			return err
		}
	}
	err := p.pass()
	select {
	case free <- p:
	default:
		p.f.Close()
	}
	return err
}

// pass parks until the netpoller reports the eventfd, which it writes
// once the read has begun: written before, its event could be taken by
// another thread's netpoll and forgotten when the wait begins. The wake-up
// cannot be lost, and a netpoller kept from running by goroutines on every
// P still runs from sysmon, so a pass needs no deadline.
func (p *passer) pass() error {
	p.written = false
	return p.rc.Read(p.step)
}

func (p *passer) wait(fd uintptr) bool {
	if !p.written {
		p.written = true
		one := [8]byte{1}
		unix.Write(int(fd), one[:])
		return false // park until the netpoller reports it
	}
	_, err := unix.Read(int(fd), p.buf[:])
	return err != unix.EAGAIN
}
