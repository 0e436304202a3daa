// Package bridge carries the calls one package of this module makes into
// another that the callee keeps out of its public API, because they take or
// return types of internal packages (C handles of internal/verbs) that no
// user could name. The callee sets a variable here in its init, typed any
// to break the import cycle; the caller asserts it, once, when it is
// initialised, to the function type written beside it, so that a mismatch
// fails any program or test at its start.
package bridge

var (
	// CQAttach is package cq's (*Reactor).attach, of type
	// func(*cq.Reactor, verbs.Ptr[verbs.Context], int, cq.Handler) (*cq.Member, error):
	// it places a queue pair's completions on a CQ of the reactor's.
	CQAttach any
	// CQOfMember is package cq's (*Member).handle, of type
	// func(*cq.Member) verbs.Ptr[verbs.CQ]: the CQ to create the member's
	// queue pair with.
	CQOfMember any
	// MRNewPD is package mr's newPD, of type func(verbs.Ptr[verbs.PD]) mr.PD:
	// a protection domain to register memory with.
	MRNewPD any
)
