package gnettcp

import "syscall"

// directWritesDefault: gnet's Windows connections are net.Conns with no
// socket of ours to write(2) to, so every Write goes through AsyncWrite.
const directWritesDefault = false

// writeFD is never called: directWritesDefault is false.
func writeFD(fd int, p []byte) (int, error) { return 0, syscall.EWINDOWS }

const (
	errEINTR  = syscall.EINTR
	errEAGAIN = syscall.EAGAIN
)
