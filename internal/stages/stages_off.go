//go:build !rdmapool_stages

package stages

import "io"

// Enabled reports whether this build times the data path's stages
// (-tags rdmapool_stages).
const Enabled = false

// Now returns 0 in a build without -tags rdmapool_stages.
func Now() int64 { return 0 }

// Record does nothing in a build without -tags rdmapool_stages.
func (Stage) Record(int64) {}

// Print prints nothing in a build without -tags rdmapool_stages.
func Print(w io.Writer, who string) {}

// Found does nothing in a build without -tags rdmapool_stages.
func Found(int64) {}

// Posted does nothing in a build without -tags rdmapool_stages.
func Posted(int64, int64) {}

// Timeline returns nothing in a build without -tags rdmapool_stages.
func Timeline() (found, postStart, postEnd []int64) { return nil, nil, nil }
