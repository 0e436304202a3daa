//go:build unix && !linux

package pool

// pollRDHUP is Linux's; elsewhere the peer's FIN makes the socket
// readable, which POLLIN sees.
const pollRDHUP = 0
