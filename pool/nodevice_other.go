//go:build !linux

package pool

// noRDMADevice does not look off Linux: the RDMA dial fails at once there
// (loader.UnsupportedOSError).
func noRDMADevice(string) error { return nil }

// lookNoDevice is noRDMADevice for op, "dial" or "listen".
func lookNoDevice(op, addr string) error { return nil }
