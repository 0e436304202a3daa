// Package netpass lets a goroutine that polls in a loop, without parking,
// let the Go netpoller run.
//
// The runtime polls the network only from a P that has nothing else to run,
// and from sysmon every 10 ms. A goroutine that busy-polls an RDMA
// completion queue is always runnable, even when it yields with
// runtime.Gosched; with such a goroutine on every P, every other network
// event in the process (a TCP connection's data, a timer-less net.Conn
// read) waits for sysmon, and a TCP round trip beside an RDMA request loop
// takes milliseconds (docs/benchmarks.md, "Busy polling and the
// netpoller"). So every loop that polls without parking calls Pass at
// least every Every. File, which hands an fd to the
// netpoller, serves the passes and the reactor's sleep (package cq).
//
// Pass is built for Linux, where it waits on an eventfd; elsewhere
// (netpass_other.go), where there is no RDMA to poll for, it returns at once.
package netpass

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// Every is how long a polling loop may go without a Pass. Each pass costs a
// park and two eventfd system calls.
const Every = 200 * time.Microsecond

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
