//go:build unix

package main

import "syscall"

// openFilesLimit is RLIMIT_NOFILE's soft limit, which Go raised to the hard
// one at start; 0 if unknown.
func openFilesLimit() uint64 {
	var rl syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl) != nil {
		return 0
	}
	return rl.Cur
}
