package cq

import "github.com/seed54442f1a/rdmapool/internal/bridge"

// Package qp reaches these through internal/bridge: they take and return C
// handles (package internal/verbs), which no user of this package could
// name, so they are not part of its API.
func init() {
	bridge.CQAttach = (*Reactor).attach
	bridge.CQOfMember = (*Member).handle
}
