package main

// openFilesLimit is 0, unknown: Windows has no RLIMIT_NOFILE.
func openFilesLimit() uint64 { return 0 }
