//go:build unix

package gnettcp

import "golang.org/x/sys/unix"

// directWritesDefault: Conn.Write calls write(2) itself (see conn.go).
const directWritesDefault = true

// writeFD is write(2) on the socket gnet polls.
func writeFD(fd int, p []byte) (int, error) { return unix.Write(fd, p) }

const (
	errEINTR  = unix.EINTR
	errEAGAIN = unix.EAGAIN
)
