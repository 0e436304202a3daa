package qp

import (
	"time"

	"github.com/seed54442f1a/rdmapool/cq"
	"github.com/seed54442f1a/rdmapool/internal/spinwait"
)

// spinSlots counts the goroutines that poll a CQ inline right now, at most
// max(GOMAXPROCS-1, 1) (see spinwait.Slots: the runtime polls the network
// only from a P that has nothing else to run, and spinners on every P held
// every other network event in the process for milliseconds;
// docs/design.md, "Inline polling").
var spinSlots spinwait.Slots

// spinPolicy is how a waiting Read or Write polls its CQ: the clock looked
// at every 16 polls, a yield every 64 (every 8 while the spinners hold
// every P), a spinner slot, and netpass when the spinners hold every P.
//
// A spinner yields its P (runtime.Gosched) so that goroutines queued behind
// it on its P get their turn; more often when the spinners hold every P, as
// with GOMAXPROCS 1. Otherwise a P is free, and the scheduler's idle Ps take
// the queued work (work stealing), so the yield need not come often: a
// yield costs several polls, and a completion that lands during one waits
// for it. A look at the clock costs about what a poll does (more under
// emulation), and SpinWait need not be kept to the poll.
var spinPolicy = spinwait.Policy{
	ClockEvery:  16,
	YieldEvery:  64,
	YieldShared: 8,
	Slots:       &spinSlots,
}

// spin is a waiter's polling state: its spinwait.Spin, and the CQ whose
// reactor it told that it polls while the spin is on.
type spin struct {
	c      *Conn
	w      spinwait.Spin
	inline *cq.Inline
	reader bool // the connection's reader's (pollInlineBy)
}

// newSpin is the polling state of a reader (lastPass &c.rxPassed) or a
// writer (&c.txPassed).
func (c *Conn) newSpin(lastPass *time.Duration) spin {
	return spin{c: c, w: spinwait.Spin{Policy: &spinPolicy, Wait: c.opts.SpinWait, LastPass: lastPass}}
}

func (s *spin) release() {
	if s.w.Spinning() {
		s.w.End()
		s.ended()
	}
}

// ended tells the reactor that the waiter no longer polls its CQ. (The
// reactor arms no CQ while a member polls it; while waiters are parked on
// it, the reactor looks at it again within a millisecond: cq.Inline.)
func (s *spin) ended() { s.inline.End() }

// park waits until ch is signalled, the connection ends or dl (nil: none)
// is closed, having made sure that the reactor will dispatch the CQ's
// completions; it reports false for dl.
func (c *Conn) park(ch, dl chan struct{}) bool {
	in := c.member.Inline()
	in.Park()
	ok := spinwait.Park(ch, c.done, nil, dl)
	in.Unpark()
	return ok
}

// spinPoll is what a waiting reader or writer does before it parks: poll
// the CQ itself, for up to opts.SpinWait without a result, if a spinner
// slot is free. It reports whether to look again (true) or to park (false).
func (c *Conn) spinPoll(s *spin) bool {
	if !s.w.Spinning() {
		if !s.w.Begin() {
			return false
		}
		s.inline = c.member.Inline()
		s.inline.Begin()
	}
	if c.pollInlineBy(s.reader) {
		s.w.Hit()
		return true
	}
	if !s.w.Miss() {
		s.ended()
		return false
	}
	return true
}
