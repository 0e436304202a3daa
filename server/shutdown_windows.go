//go:build windows

package server

import "syscall"

// shutdownWrite shuts down the write side of the socket fd (gnet's
// connections hand out their descriptor, not a net.Conn).
func shutdownWrite(fd int) error { return syscall.Shutdown(syscall.Handle(fd), syscall.SHUT_WR) }
