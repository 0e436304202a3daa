// Package tcpdial connects TCP sockets for both of the pool's TCP engines
// (package pool's netpoll one and package pool/gnettcp), with a context as
// the dial's one bound and errors as the net package's.
package tcpdial

import (
	"context"
	"errors"
	"net"
	"os"
	"time"
)

// Connect connects with net.Dialer, nd's settings (if nd is not nil) and
// ctx alone as its bound: nd's Timeout and Deadline are ignored. ctx
// cancels the kernel's connect itself, so no goroutine or socket outlives
// it. Errors are the net package's *net.OpError values; a passed deadline
// matches both os.ErrDeadlineExceeded and context.DeadlineExceeded.
func Connect(ctx context.Context, nd *net.Dialer, addr string) (*net.TCPConn, error) {
	var d net.Dialer
	if nd != nil {
		d = *nd
		d.Timeout, d.Deadline = 0, time.Time{}
	}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		// The net package reports a passed deadline as the context's error
		// or as the socket's (before the context has noticed), whichever
		// came first; match both.
		var oe *net.OpError
		var ne net.Error
		if errors.As(err, &oe) && errors.As(err, &ne) && ne.Timeout() && deadlinePassed(ctx) {
			oe.Err = dialTimeout{}
		}
		return nil, err
	}
	return nc.(*net.TCPConn), nil
}

// dialTimeout is the error of a dial whose context's deadline passed. It
// matches both os.ErrDeadlineExceeded and context.DeadlineExceeded.
type dialTimeout struct{}

func (dialTimeout) Error() string   { return "i/o timeout" }
func (dialTimeout) Timeout() bool   { return true }
func (dialTimeout) Temporary() bool { return true }
func (dialTimeout) Is(err error) bool {
	return err == os.ErrDeadlineExceeded || err == context.DeadlineExceeded
}

func deadlinePassed(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ctx.Err() == context.DeadlineExceeded || ok && !time.Now().Before(dl)
}

// Addr is an address that did not resolve, for errors.
type Addr string

func (Addr) Network() string  { return "tcp" }
func (a Addr) String() string { return string(a) }
