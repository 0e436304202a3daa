package mr

import "github.com/seed54442f1a/rdmapool/internal/bridge"

// Package qp reaches newPD through internal/bridge: it takes a C handle
// (package internal/verbs), which no user of this package could name, so it
// is not part of its API.
func init() { bridge.MRNewPD = newPD }
