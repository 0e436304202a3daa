package cq

import (
	"sync/atomic"
	"time"
)

// This file holds the whole protocol between the members of a CQ that poll
// it themselves (inline polling, Member.PollLocked), the goroutines parked
// to wait for the reactor's dispatch of its completions, and the reactor.
// The reactor's loop (loop_linux.go, sleep_linux.go) only calls the
// functions below; handoff_model_test.go explores its interleavings.
//
// # The ownership word
//
// Each CQ has one word (Inline.w), changed only by atomic read-modify-write
// (an Add or a CompareAndSwap: each change below is one atomic step, all of
// them in one total order):
//
//	bits  0-23  polling  goroutines polling the CQ in a loop (Begin to End)
//	bits 24-47  parked   goroutines parked on the reactor's dispatch (Park to Unpark)
//	bit  63     armed    the reactor watches the CQ: a completion that comes
//	                     now is found without waking it (below)
//
// armed is set only by the reactor, after it armed the CQ (ibv_req_notify_cq)
// and polled it with the CQ's lock held (Inline.watched, in armAndCool); it
// is cleared only by the reactor, in the step that sees a poller and leaves
// the CQ to it (Inline.take, in pollAll and armAndCool). So while armed is
// set the CQ is either hot, and the reactor polls it until it finds it
// empty after an arm before it sleeps, or cold: armed and found empty after
// the arm, so that its next completion raises an event on the completion
// channel, which wakes the reactor.
//
// # Why no wake-up is lost
//
// A parked goroutine waits for a completion that someone must dispatch: a
// poller, or the reactor. Park counts itself and reads armed in one step.
// If armed was clear it wakes the reactor (wake: at once if it sleeps,
// else its next sleep returns at once), which polls the CQ, and arms it
// once nobody polls it. If armed was set, the reactor watches the CQ (above)
// until it clears armed, which it does only in the step that sees a poller
// (take); the reactor then sleeps only after its sleep limit read every
// hot CQ's word (Inline.handoff), after those steps: it sees the parked
// count and sleeps at most handoffLimit, after which it polls the CQ, or
// arms it if nobody polls it any more. A Park after that read, on a CQ
// left to its pollers, finds armed clear and wakes the reactor. The poller
// hands out the parked goroutines' completions while it polls; its End
// wakes nobody (below).
//
// # The timers
//
// handoffLimit is needed: a waiter parked while the CQ was armed (its Park
// woke nobody), then a member began to poll and the reactor left the CQ
// unarmed to it, then the poller stopped without parking (it found its own
// data): without the timer nobody would poll the CQ, arm it or wake the
// reactor (TestHandoffModel's noHandoff variant finds it). End could wake
// the reactor instead when it is the last poller and a waiter is parked
// (the endWakes variant: no wake-up is lost either), but it did so at every
// round trip of a busy connection sharing its CQ with idle connections'
// parked readers: wakes coalesce only while the reactor has not read its
// eventfd, and it reads it at every wake-up.
//
// sleepLimit is needed too, not for a parked waiter but for the completions
// of members that do not wait: when the last poller stops, nobody is
// parked and the reactor sleeps, such a completion (a send completion, a
// control message, data for a connection that is not reading) sits in the
// hot, unarmed CQ until the sleep ends; the timeout's return to pollAll
// polls it (TestHandoffModel checks that every such case is a hot CQ). Its
// pollCold, the poll of cold CQs, is not needed by the protocol: a cold CQ
// is armed, and the model finds no completion left in one. It stays as a
// guard against an event lost outside the protocol (by the driver), at a
// bounded cost (coldPerTimeout polls per timeout, when idle).
//
// # Lock order (cq, and where qp meets it)
//
// Outermost first; qp/conn.go gives qp's own order (rmu, wmu, smu):
//
//  1. A connection's rmu or wmu (a waiting Read or Write) may take the
//     CQ's lock, queue.mu, but only by TryLock (Member.TryLock, for
//     PollLocked): it skips a CQ whose lock is held, never waits.
//  2. Reactor.devMu (attach, release) is taken before queue.mu (attach's
//     member table) and before Reactor.mu (do hands an operation to the
//     reactor goroutine and waits for it: that goroutine takes Reactor.mu
//     only briefly, in applyOps, and never devMu).
//  3. queue.mu: the reactor goroutine takes it by TryLock only; Member.Leave
//     and Member.Release wait for it. Handlers run under it
//     (HandleCompletions, HandleCQError): a handler may take its own
//     connection's smu (qp answers a control message with sendCmd, without
//     waiting for room) and no other lock that can block; never rmu, wmu,
//     devMu or Reactor.mu. So queue.mu comes before smu while the
//     connection is a member; qp's teardown takes queue.mu holding smu
//     (Member.Release) only after Member.Leave, once its handler runs no
//     more. Release takes devMu after it let go of queue.mu.
//  4. The ownership word and Reactor.woken are atomics, changed with any of
//     these held or none: Park's wake writes a non-blocking eventfd.
//  5. The reactor's state (the hot and cold lists, queue.hot, emptyRun,
//     emptyFrom) is its goroutine's alone, under no lock: other goroutines
//     change it only through do, and learn of it through the word (and
//     Stats).
//     The reactor goroutine holds no lock while it waits for another.

// The fields of the ownership word (see above).
const (
	pollOne   uint64 = 1       // polling, in bits 0-23
	parkOne   uint64 = 1 << 24 // parked, in bits 24-47
	countMask uint64 = 1<<24 - 1
	armedBit  uint64 = 1 << 63
)

// Inline is what the members of a CQ that poll it themselves share with
// the reactor: the ownership word. While a member polls the CQ in a loop,
// the reactor leaves the CQ to it: it neither polls nor arms it, and it
// does not busy-poll on its account, so a waiting owner and the reactor do
// not spin for the same completions (two threads taking the CPU from each
// other, from the kernel's RDMA work and from the peer). The poller hands
// out every member's completions meanwhile.
//
// A goroutine calls Begin before it polls in a loop and End after, and Park
// before it parks to wait for the reactor's dispatch (Unpark when it
// wakes). The protocol, its ordering and its timers are described at the
// top of this file.
type Inline struct {
	r *Reactor
	w atomic.Uint64 // the ownership word
}

// Begin marks a goroutine as polling the CQ in a loop.
func (in *Inline) Begin() { in.w.Add(pollOne) }

// End ends a Begin. It wakes nobody: the reactor, which left the CQ to the
// pollers, looks at it again within handoffLimit while a waiter is parked.
func (in *Inline) End() { in.w.Add(^(pollOne - 1)) }

// Park is called by a goroutine before it parks to wait for the reactor's
// dispatch of the CQ's completions; it wakes the reactor unless the
// reactor watches the CQ.
func (in *Inline) Park() {
	if in.park() {
		in.r.wake()
	}
}

// park counts a parked goroutine and reports whether the reactor must be
// woken: armed is clear. One step: the count and the look at armed are the
// same atomic change.
func (in *Inline) park() (wake bool) { return in.w.Add(parkOne)&armedBit == 0 }

// Unpark ends a Park, when the goroutine no longer waits.
func (in *Inline) Unpark() { in.w.Add(^(parkOne - 1)) }

// take is the reactor's look at the CQ before it polls it (pollAll) or
// arms it (armAndCool): it reports whether the reactor may do so (no
// member polls it). If one does, the reactor leaves the CQ to it and
// clears armed in the same step: it no longer watches the CQ, and a Park
// from now on wakes it. (After an arm, the completions that came before it
// raise no event, and a poller may take only a batch of them.) Otherwise
// armed stays as it is: the reactor polls the CQ itself.
func (in *Inline) take() bool {
	for {
		w := in.w.Load()
		if w&countMask == 0 {
			return true
		}
		if w&armedBit == 0 || in.w.CompareAndSwap(w, w&^armedBit) {
			return false
		}
	}
}

// watched is called by the reactor, with the CQ's lock held, after it
// armed the CQ and polled it: it watches the CQ (see armed).
func (in *Inline) watched() { in.w.Or(armedBit) }

// handoff reports, for the reactor's sleep limit, whether a goroutine is
// parked on the CQ while the reactor does not watch it: the reactor then
// sleeps at most handoffLimit. (At the sleep every hot CQ is one the
// reactor left to its pollers, take; its pollers may have stopped since.)
func (in *Inline) handoff() bool {
	w := in.w.Load()
	return w&armedBit == 0 && (w>>24)&countMask > 0
}

// polled reports whether a member polls the CQ in a loop now: pollCold
// leaves such a cold CQ to it.
func (in *Inline) polled() bool { return in.w.Load()&countMask > 0 }

// sleepLimit bounds each sleep: after it the reactor polls every hot CQ
// again and up to coldPerTimeout cold ones (pollCold), even without an
// event. The hot CQs at a sleep are those left to their pollers, and
// completions of members that do not wait can be left in them when the
// pollers stop (see "The timers" above). (It was first added for
// multi-second stalls under emulation that turned out to be a writer's
// torn view of its send queue, fixed in package qp.)
const sleepLimit = 100 * time.Millisecond

// handoffLimit bounds the sleep while a goroutine is parked on a CQ the
// reactor left to a member polling it (Inline.handoff): that poller hands
// out the parked goroutine's completions, but once it stops, without
// parking itself, nobody would until the CQ is armed. The reactor looks
// again after handoffLimit, so a parked waiter waits at most that much
// longer, and the poller need not wake the reactor whenever it stops.
const handoffLimit = time.Millisecond
