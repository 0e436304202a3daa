//go:build unix

package pool

import "golang.org/x/sys/unix"

// pollSet is what a netpoll connection's health check polls.
type pollSet = [1]unix.PollFd

// peekFD looks at the socket once, without waiting: poll(2) finds it
// neither readable nor hung up. A signal pending when it looks (the
// runtime preempts goroutines with SIGURG) fails poll with EINTR even with
// no wait; that says nothing of the socket, so it looks again.
func (c *netpollConn) peekFD(fd uintptr) bool {
	c.pfd[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN | pollRDHUP}
	n, err := unix.Poll(c.pfd[:], 0)
	for err == unix.EINTR {
		n, err = unix.Poll(c.pfd[:], 0)
	}
	c.idle = err == nil && n == 0 // else data, EOF, a hang-up or an error
	return true                   // one look, never a wait
}
