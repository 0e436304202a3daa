//go:build !linux

package benchrun

import "errors"

// takeSocket takes no socket: the event loops are Linux's (epoll), and
// every client elsewhere has a goroutine of its own.
func takeSocket(conn) (int, bool, error) { return -1, false, nil }

// loopsSupported says whether this system has the event loops.
const loopsSupported = false

type eventLoop struct{}

func newEventLoop() (*eventLoop, error)   { return nil, errors.ErrUnsupported }
func (*eventLoop) add(*client, int) error { return errors.ErrUnsupported }
func (*eventLoop) wake()                  {}
func (*eventLoop) close()                 {}
func (*eventLoop) run(*loopPhase) error   { return errors.ErrUnsupported }
