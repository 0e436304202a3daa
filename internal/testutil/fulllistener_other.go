//go:build !unix

package testutil

import "testing"

// FullListener skips: it needs a listen backlog of 0 that the kernel
// holds to, from the unix socket calls.
func FullListener(t *testing.T) string {
	t.Skip("a full accept queue is made with unix socket calls")
	return ""
}
