//go:build !rdmapool_stages

package qp

import "io"

// StagesEnabled reports whether this build times the data path's stages
// (-tags rdmapool_stages).
const StagesEnabled = false

func stageNow() int64 { return 0 }

func (stage) record(int64) {}

// WriteStages prints nothing in a build without -tags rdmapool_stages.
func WriteStages(w io.Writer, who string) {}

func timelineFound(int64) {}

func timelinePost(int64, int64) {}

// Timeline returns nothing in a build without -tags rdmapool_stages.
func Timeline() (found, postStart, postEnd []int64) { return nil, nil, nil }
