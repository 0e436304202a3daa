// Package netpass lets a goroutine that polls in a loop, without parking,
// let the Go netpoller run.
//
// The runtime polls the network only from a P that has nothing else to run,
// and from sysmon every 10 ms. A goroutine that busy-polls an RDMA
// completion queue is always runnable, even when it yields with
// runtime.Gosched; with such a goroutine on every P, every other network
// event in the process (a TCP connection's data, a timer-less net.Conn
// read) waits for sysmon. Measured in the VM (docs/design.md, "Inline
// polling"), an RDMA request loop took a TCP round trip on loopback in the
// same process from 70–90 µs to 7–18 ms. So every loop that polls without
// parking calls Pass at least every Every. File, which hands an fd to the
// netpoller, serves the passes and the reactor's sleep (package cq).
package netpass

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Every is how long a polling loop may go without a Pass. Each pass costs a
// park and two eventfd system calls.
const Every = 200 * time.Microsecond

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

// File hands fd, which must be non-blocking, to the netpoller: the
// returned file owns it, and the RawConn's Read parks in the netpoller
// until fd is readable. It fails, closing fd, when the netpoller cannot
// poll fd.
func File(fd int, name string) (*os.File, syscall.RawConn, error) {
	f := os.NewFile(uintptr(fd), name)
	rc, err := f.SyscallConn()
	if err == nil && f.SetReadDeadline(time.Time{}) != nil {
		err = fmt.Errorf("%s is not pollable", name)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, rc, nil
}

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
