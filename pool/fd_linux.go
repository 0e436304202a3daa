package pool

import "golang.org/x/sys/unix"

// pollRDHUP asks poll(2) for the peer's shutdown of its side.
const pollRDHUP = unix.POLLRDHUP
