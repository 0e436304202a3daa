package qp

import (
	"github.com/seed54442f1a/rdmapool/cq"
	"github.com/seed54442f1a/rdmapool/internal/bridge"
	"github.com/seed54442f1a/rdmapool/internal/verbs"
	"github.com/seed54442f1a/rdmapool/mr"
)

// What packages cq and mr keep out of their APIs for taking C handles, set
// by their inits (cq/bridge.go and mr/bridge.go); asserted here, when qp is
// initialised, so that a changed signature fails at once.
var (
	// attachCQ places a QP's completions, cqes entries, on a CQ of the
	// reactor's on ctx's device and routes them to h.
	attachCQ = bridge.CQAttach.(func(r *cq.Reactor, ctx verbs.Ptr[verbs.Context], cqes int, h cq.Handler) (*cq.Member, error))
	// memberCQ is the CQ to create a member's QP with.
	memberCQ = bridge.CQOfMember.(func(*cq.Member) verbs.Ptr[verbs.CQ])
	// newPD wraps a protection domain for package mr.
	newPD = bridge.MRNewPD.(func(verbs.Ptr[verbs.PD]) mr.PD)
)
