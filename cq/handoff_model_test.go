package cq

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// TestHandoffModel explores every interleaving of the inline-poll handoff
// (handoff.go) between a few members of one CQ, the reactor and the
// completions' arrival, and fails on a lost wake-up: a goroutine parked for
// ever with its completion in the CQ, the reactor asleep with no event, no
// wake and no handoffLimit timer, and nobody left to poll.
//
// Each actor is a program of atomic steps. The members' and the reactor's
// steps on the ownership word call the real Inline methods (Begin, End,
// park, Unpark, take, watched, handoff) on the word's value in the state;
// the rest is modelled on the code: the CQ's lock taken by TryLock, the
// CQ's contents polled one completion at a time (a batch that may leave
// some behind), ibv_req_notify_cq's one-shot arm (the next completion
// raises one event on the completion channel), the reactor's woken flag
// and eventfd (wake: a CAS, then the write; the reactor reads the eventfd,
// then clears woken), and the reactor's loop (run: pollAll, the busy spin
// with its peeks at the epoll set, armAndCool, sleepLimit, the sleep).
// The sleep ends by an event, by the eventfd, or by handoffLimit when its
// limit says so; sleepLimit's timer is left out, so that a case only it
// would end shows up: every state where nothing can move is checked. Such
// a state may hold a completion of a member that does not wait (the
// bystander's): the test checks that it is in a hot CQ nobody polls, which
// sleepLimit's timeout polls (pollAll), never in a cold one (which would
// need pollCold or an event), and that the case exists.
//
// -short (and the VM) explores one poller and one waiter; without it, two
// pollers and one waiter, and one poller and two waiters, too;
// -handoff.full adds two of each.
//
// The variants are test-only changes of the protocol, which show what the
// model catches: a Park that looks at armed before it counts itself, a
// reactor without the handoffLimit timer, the sleep limit of the code
// before the ownership word (it looked for a poller, not a parked waiter),
// and, as the one alternative that also holds, End waking the reactor
// instead of the timer.
func TestHandoffModel(t *testing.T) {
	small := []mConfig{
		{name: "1 poller, 1 waiter", kinds: []int{mPoller, mWaiter}, maxMisses: 2},
		{name: "1 poller, 1 waiter, a bystander's completion", kinds: []int{mPoller, mWaiter}, maxMisses: 1, bystander: true},
	}
	large := []mConfig{
		{name: "2 pollers, 1 waiter", kinds: []int{mPoller, mPoller, mWaiter}, maxMisses: 1},
		{name: "1 poller, 2 waiters", kinds: []int{mPoller, mWaiter, mWaiter}, maxMisses: 1},
	}
	if *handoffFull {
		large = append(large, mConfig{name: "2 pollers, 2 waiters", kinds: []int{mPoller, mPoller, mWaiter, mWaiter}, maxMisses: 1})
	}
	all := small
	// In the VM (emulated: ten times slower) the small cases only:
	// nothing in the model differs there, and the host runs the others.
	if !testing.Short() && !testutil.InVM() {
		all = append(all[:len(all):len(all)], large...)
	}
	variants := []struct {
		v        mVariant
		configs  []mConfig
		wantLost bool
	}{
		{mVariant{name: "the word"}, all, false},
		{mVariant{name: "endWakes", noHandoff: true, endWakes: true}, small, false},
		// The broken ones: the search stops at the first lost wake-up.
		{mVariant{name: "noHandoff", noHandoff: true}, small[:1], true},
		{mVariant{name: "parkLooksFirst", parkLooksFirst: true}, small[:1], true},
		{mVariant{name: "oldLimit", oldLimit: true}, small[:1], true},
	}
	for _, vc := range variants {
		for _, cfg := range vc.configs {
			res := explore(cfg, vc.v, vc.wantLost)
			t.Logf("%s, %s: %d states, %d transitions, %d end states (%d with a completion left for sleepLimit), lost wake-ups: %d",
				vc.v.name, cfg.name, res.states, res.transitions, res.ends, res.leftHot, res.lost)
			if res.bad != "" {
				t.Errorf("%s, %s: %s", vc.v.name, cfg.name, res.bad)
			}
			switch {
			case res.lost > 0 && !vc.wantLost:
				t.Errorf("%s, %s: lost wake-up:\n%s", vc.v.name, cfg.name, res.trace)
			case res.lost > 0:
				t.Logf("%s, %s: the lost wake-up it finds:\n%s", vc.v.name, cfg.name, res.trace)
			case vc.wantLost:
				t.Errorf("%s, %s: the model found no lost wake-up in a protocol that loses one", vc.v.name, cfg.name)
			case res.ends == 0:
				t.Errorf("%s, %s: no end state: the model never settles", vc.v.name, cfg.name)
			}
			if cfg.bystander && !vc.wantLost && res.leftHot == 0 {
				t.Errorf("%s, %s: no completion is ever left for sleepLimit's timer, which would then not be needed", vc.v.name, cfg.name)
			}
		}
	}
}

// handoffFull adds the case of 2 pollers and 2 waiters to TestHandoffModel:
// many times the states of the others, too many for every run.
var handoffFull = flag.Bool("handoff.full", false, "TestHandoffModel: explore 2 pollers and 2 waiters too")

// mVariant is a test-only change of the protocol.
type mVariant struct {
	name           string
	noHandoff      bool // the sleep is never bounded by handoffLimit
	endWakes       bool // End wakes the reactor when it is the last poller, a goroutine is parked and armed is clear
	parkLooksFirst bool // Park looks at armed, then counts itself: two steps in the wrong order
	oldLimit       bool // the code before the word: pollAll and armAndCool clear armed, then look at polling (pollAll puts armed back after its poll), and the sleep limit looks for polling > 0 && parked > 0
}

// mConfig is the members of the CQ.
type mConfig struct {
	name      string
	kinds     []int
	maxMisses int8 // a poller's polls without its completion before it ends and parks
	bystander bool // a completion of a member that does not wait comes too
}

// The members' kinds.
const (
	mPoller = iota // polls the CQ in a loop (Begin, polls, End) until its completion is found; if it gives up first, it parks
	mWaiter        // parks at once (a waiter with no spinner slot, an idle connection's reader)
)

const (
	mMembers   = 4
	mCQSize    = 6
	mFree      = -1           // the CQ's lock is free
	mReactor   = mMembers     // the reactor holds the CQ's lock
	mBystander = mMembers + 1 // the owner of a completion nobody waits for
	mNIC       = -1           // the arrival of a completion, in a step
)

// A member's program counter.
const (
	pcBegin     int8 = iota // a poller's Begin
	pcSpin                  // a poller: End, or TryLock to poll
	pcPoll                  // the lock held: poll one completion, hand it out, let go of the lock
	pcPark                  // Park
	pcParkCount             // parkLooksFirst: the count, after the look at armed
	pcWakeCAS               // wake: the CAS of woken
	pcWakeWrite             // wake: the eventfd write
	pcParked                // parked until its completion is handed out; then Unpark
	pcDone
)

// The reactor's program counter.
const (
	rPollTake    int8 = iota // pollAll: take (oldLimit: clear armed)
	rPollPolling             // oldLimit: the look at polling
	rPollLock                // TryLock
	rPoll                    // poll one completion, hand it out (oldLimit: armed put back), Unlock
	rAfterPoll               // spin on, peek at the epoll set, or (found nothing) go to armAndCool
	rArmTake                 // armAndCool: take (oldLimit: clear armed)
	rArmPolling              // oldLimit: the look at polling
	rArmLock                 // TryLock
	rArm                     // ibv_req_notify_cq
	rArmPoll                 // poll once more; empty: the CQ goes cold
	rArmWatched              // watched (oldLimit: set armed), Unlock
	rAfterArm                // found some or skipped: loop; else sleep
	rLimit                   // sleepLimit
	rSleep                   // until an event, the eventfd or handoffLimit
	rEventsWoken             // after reading the eventfd: clear woken
)

type mMember struct {
	pc, after, misses int8
	got               bool // its completion was handed out
	arrived           bool // its completion came
	sawArmed          bool // parkLooksFirst: what the look found
}

// mState is the whole state of the model; it is comparable, for the set of
// states seen.
type mState struct {
	word      uint64 // Inline.w
	lock      int8
	cq        [mCQSize]int8 // the owners of the completions in the CQ, oldest first
	n         int8
	hwArmed   bool // armed by ibv_req_notify_cq, no completion since
	event     bool // the completion channel has an event
	woken     bool // Reactor.woken
	evfd      bool // the eventfd is readable
	hot       bool // the CQ is in the reactor's poll list
	rpc       int8
	found     int8 // completions the reactor's pass found
	skipped   bool // armAndCool found the lock held
	short     bool // the sleep is bounded by handoffLimit
	armedWas  bool // oldLimit: armed before pollAll cleared it
	byArrived bool
	byDone    bool
	m         [mMembers]mMember
}

type mStep struct {
	who  int // member, or mReactor, or mNIC for a completion's arrival
	what string
	next mState
}

// pack is the state in 128 bits, for the set of states seen.
func (s *mState) pack() [2]uint64 {
	var k [2]uint64
	at := 0
	put := func(v uint64, bits int) {
		if v >= 1<<bits {
			panic("cq: the model's state does not fit its key")
		}
		k[at/64] |= v << (at % 64)
		at += bits
	}
	b := func(v bool) uint64 {
		if v {
			return 1
		}
		return 0
	}
	put(s.word&countMask, 3)
	put(s.word>>24&countMask, 3)
	put(s.word>>63, 1)
	put(uint64(s.lock+1), 3)
	put(uint64(s.n), 3)
	for _, o := range s.cq[:s.n] {
		put(uint64(o), 3)
	}
	at = 3 + 3 + 1 + 3 + 3 + 3*(mCQSize-1)
	for _, v := range []bool{s.hwArmed, s.event, s.woken, s.evfd, s.hot, s.skipped, s.short, s.armedWas, s.byArrived, s.byDone} {
		put(b(v), 1)
	}
	put(uint64(s.rpc), 5)
	put(uint64(s.found), 1)
	at = 64
	for _, m := range s.m {
		put(uint64(m.pc), 4)
		put(uint64(m.after), 4)
		put(uint64(m.misses), 2)
		put(b(m.got), 1)
		put(b(m.arrived), 1)
		put(b(m.sawArmed), 1)
	}
	return k
}

// mFrame is a state on the search's path, and the index of its next step.
type mFrame struct {
	s    mState
	next int
}

type mResult struct {
	states, transitions, ends int
	leftHot                   int // end states with a completion in a hot CQ that nobody polls: sleepLimit's timer ends them
	lost                      int
	trace                     string // the schedule to the first lost wake-up
	bad                       string // a broken expectation of the model itself
}

type model struct {
	cfg mConfig
	v   mVariant
}

// explore runs a depth-first search over every interleaving from the
// initial state: a fresh CQ, hot, not armed.
func explore(cfg mConfig, v mVariant, stopAtLost bool) mResult {
	md := &model{cfg: cfg, v: v}
	var s0 mState
	s0.lock = mFree
	s0.hot = true
	s0.rpc = rPollTake
	for i := range s0.m {
		s0.m[i].pc = pcDone
	}
	for i, k := range cfg.kinds {
		s0.m[i].pc = pcBegin
		if k == mWaiter {
			s0.m[i].pc = pcPark
		}
	}
	if !cfg.bystander {
		s0.byArrived, s0.byDone = true, true
	}
	// The path is the stack: each frame is a state and the index of its
	// next step; the steps are made again at each return to a frame,
	// which costs time but keeps the stack small.
	type frame = mFrame
	var res mResult
	seen := map[[2]uint64]struct{}{s0.pack(): {}}
	stack := []frame{{s: s0}}
	var buf []mStep
	for len(stack) > 0 {
		f := &stack[len(stack)-1]
		buf = md.steps(f.s, buf[:0])
		if f.next == 0 && len(buf) == 0 {
			res.ends++
			md.check(f.s, &res, func() string { return md.trace(stack) })
			if res.lost > 0 && stopAtLost {
				break
			}
		}
		if f.next == len(buf) {
			stack = stack[:len(stack)-1]
			continue
		}
		st := buf[f.next]
		f.next++
		res.transitions++
		k := st.next.pack()
		if _, ok := seen[k]; ok {
			continue
		}
		seen[k] = struct{}{}
		stack = append(stack, frame{s: st.next})
	}
	res.states = len(seen)
	return res
}

// trace writes the schedule that led to the top of stack.
func (md *model) trace(stack []mFrame) string {
	var b strings.Builder
	var buf []mStep
	for _, fr := range stack[:len(stack)-1] {
		buf = md.steps(fr.s, buf[:0])
		st := buf[fr.next-1]
		switch {
		case st.who == mReactor:
			fmt.Fprintf(&b, "\treactor: %s\n", st.what)
		case st.who == mNIC:
			fmt.Fprintf(&b, "\tNIC: %s\n", st.what)
		default:
			fmt.Fprintf(&b, "\tmember %d: %s\n", st.who, st.what)
		}
	}
	return b.String()
}

// check looks at a state where nothing can move.
func (md *model) check(s mState, res *mResult, trace func() string) {
	if s.rpc != rSleep {
		res.bad = fmt.Sprintf("an end state with the reactor at step %d, not asleep", s.rpc)
		return
	}
	for i := range md.cfg.kinds {
		if s.m[i].pc != pcDone {
			if s.m[i].pc != pcParked || s.m[i].got || !s.m[i].arrived {
				res.bad = fmt.Sprintf("an end state with member %d stuck at %d", i, s.m[i].pc)
				return
			}
			// Parked, its completion in the CQ, and the reactor asleep
			// with no event, no wake and no timer: lost.
			if res.lost == 0 {
				res.trace = trace()
			}
			res.lost++
			return
		}
	}
	if s.n > 0 {
		// Left behind: only a bystander's completion can be. The sleep
		// limit's timeout polls the hot CQs (run's loop goes back to
		// pollAll); a cold one would need pollCold, or an event.
		if !s.hot || s.word&countMask != 0 {
			res.bad = "a completion left in a cold CQ, or one a poller holds"
			return
		}
		res.leftHot++
	}
}

// steps appends to out every step that can be taken from s.
func (md *model) steps(s mState, out []mStep) []mStep {
	for i := range md.cfg.kinds {
		out = md.memberSteps(s, i, out)
	}
	out = md.reactorSteps(s, out)
	// The completions' arrival, at any time.
	for i := range md.cfg.kinds {
		if !s.m[i].arrived {
			t := s
			t.m[i].arrived = true
			t.arrive(int8(i))
			out = append(out, mStep{mNIC, arrivals[i], t})
		}
	}
	if !s.byArrived {
		t := s
		t.byArrived = true
		t.arrive(mBystander)
		out = append(out, mStep{mNIC, "a bystander's completion comes", t})
	}
	return out
}

var arrivals = [mMembers]string{"member 0's completion comes", "member 1's completion comes", "member 2's completion comes", "member 3's completion comes"}

// arrive puts a completion of owner in the CQ: an armed CQ raises its event.
func (s *mState) arrive(owner int8) {
	s.cq[s.n] = owner
	s.n++
	if s.hwArmed {
		s.hwArmed, s.event = false, true
	}
}

// poll takes the oldest completion, if any, and hands it out; it returns
// its owner, or mFree.
func (s *mState) poll() int8 {
	if s.n == 0 {
		return mFree
	}
	o := s.cq[0]
	copy(s.cq[:], s.cq[1:])
	s.n--
	s.cq[s.n] = 0
	if o == mBystander {
		s.byDone = true
	} else {
		s.m[o].got = true
	}
	return o
}

// inline runs f on an Inline holding the state's word.
func (s *mState) inline(f func(in *Inline)) {
	var in Inline
	in.w.Store(s.word)
	f(&in)
	s.word = in.w.Load()
}

// wake starts member i's wake of the reactor, then goes on at after.
func (s *mState) wake(i int, after int8) {
	s.m[i].pc, s.m[i].after = pcWakeCAS, after
}

func (md *model) memberSteps(s mState, i int, out []mStep) []mStep {
	t := s
	m := &t.m[i]
	add := func(what string) []mStep { return append(out, mStep{i, what, t}) }
	switch m.pc {
	case pcBegin:
		t.inline(func(in *Inline) { in.Begin() })
		m.pc = pcSpin
		return add("Begin")
	case pcSpin:
		if m.got || m.misses >= md.cfg.maxMisses {
			next := pcDone
			what := "End: found its completion"
			if !m.got {
				next, what = pcPark, "End: gives up"
			}
			t.inline(func(in *Inline) { in.End() })
			m.pc = next
			if w := t.word; md.v.endWakes && w&countMask == 0 && (w>>24)&countMask > 0 && w&armedBit == 0 {
				t.wake(i, next)
				what += ", wakes the reactor"
			}
			return add(what)
		}
		if t.lock == mFree {
			t.lock = int8(i)
			m.pc = pcPoll
			return add("TryLock")
		}
		m.misses++
		return add("TryLock fails")
	case pcPoll:
		if o := t.poll(); o != int8(i) {
			m.misses++
		}
		t.lock = mFree
		m.pc = pcSpin
		return add("poll, Unlock")
	case pcPark:
		if md.v.parkLooksFirst {
			m.sawArmed = t.word&armedBit != 0
			m.pc = pcParkCount
			return add("Park: looks at armed")
		}
		var wake bool
		t.inline(func(in *Inline) { wake = in.park() })
		if wake {
			t.wake(i, pcParked)
			return add("Park: armed clear")
		}
		m.pc = pcParked
		return add("Park: armed set")
	case pcParkCount:
		t.word += parkOne
		m.pc = pcParked
		if !m.sawArmed {
			t.wake(i, pcParked)
		}
		return add("Park: counts itself")
	case pcWakeCAS:
		if t.woken {
			m.pc = m.after
			return add("wake: woken already set")
		}
		t.woken = true
		m.pc = pcWakeWrite
		return add("wake: sets woken")
	case pcWakeWrite:
		t.evfd = true
		m.pc = m.after
		return add("wake: writes the eventfd")
	case pcParked:
		if !m.got {
			return out
		}
		t.inline(func(in *Inline) { in.Unpark() })
		m.pc = pcDone
		return add("Unpark")
	}
	return out
}

func (md *model) reactorSteps(s mState, out []mStep) []mStep {
	t := s
	add := func(what string) []mStep { return append(out, mStep{mReactor, what, t}) }
	// events takes what the epoll set reports (after a sleep or a peek):
	// the channel's event makes the CQ hot; the eventfd is read, then
	// woken cleared.
	events := func(t *mState) {
		if t.event {
			t.event, t.hot = false, true
		}
		t.rpc = rPollTake
		if t.evfd {
			t.evfd = false
			t.rpc = rEventsWoken
		}
		t.found, t.skipped = 0, false
	}
	switch s.rpc {
	case rPollTake:
		t.found = 0
		if !t.hot {
			t.rpc = rAfterPoll
			return add("pollAll: nothing hot")
		}
		if md.v.oldLimit {
			t.armedWas = t.word&armedBit != 0
			t.word &^= armedBit
			t.rpc = rPollPolling
			return add("pollAll: clears armed")
		}
		var mine bool
		t.inline(func(in *Inline) { mine = in.take() })
		if !mine {
			t.rpc = rAfterPoll
			return add("pollAll: take, left to a poller")
		}
		t.rpc = rPollLock
		return add("pollAll: take")
	case rPollPolling:
		if t.word&countMask != 0 {
			t.rpc = rAfterPoll
			return add("pollAll: left to a poller")
		}
		t.rpc = rPollLock
		return add("pollAll: nobody polls")
	case rPollLock:
		if t.lock != mFree {
			t.rpc = rAfterPoll
			return add("pollAll: TryLock fails")
		}
		t.lock = mReactor
		t.rpc = rPoll
		return add("pollAll: TryLock")
	case rPoll:
		if t.poll() != mFree {
			t.found = 1
		}
		if md.v.oldLimit && t.armedWas {
			t.word |= armedBit
		}
		t.lock = mFree
		t.rpc = rAfterPoll
		return add("pollAll: poll, Unlock")
	case rAfterPoll:
		// The busy loop: poll again, peek at the epoll set while a CQ
		// is cold, and once IdleSpin has passed without a completion,
		// arm.
		t.rpc = rPollTake
		out = add("spins on")
		if !s.hot && (s.event || s.evfd) {
			t = s
			events(&t)
			out = add("peeks at the epoll set")
		}
		if s.found == 0 {
			t = s
			t.rpc = rArmTake
			t.skipped = false
			out = add("IdleSpin over: armAndCool")
		}
		return out
	case rArmTake:
		if !t.hot {
			t.rpc = rAfterArm
			return add("armAndCool: nothing hot")
		}
		if md.v.oldLimit {
			t.word &^= armedBit
			t.rpc = rArmPolling
			return add("armAndCool: clears armed")
		}
		var mine bool
		t.inline(func(in *Inline) { mine = in.take() })
		if !mine {
			t.rpc = rAfterArm
			return add("armAndCool: take, left to a poller")
		}
		t.rpc = rArmLock
		return add("armAndCool: take")
	case rArmPolling:
		if t.word&countMask != 0 {
			t.rpc = rAfterArm
			return add("armAndCool: left to a poller")
		}
		t.rpc = rArmLock
		return add("armAndCool: nobody polls")
	case rArmLock:
		if t.lock != mFree {
			t.skipped = true
			t.rpc = rAfterArm
			return add("armAndCool: TryLock fails")
		}
		t.lock = mReactor
		t.rpc = rArm
		return add("armAndCool: TryLock")
	case rArm:
		t.hwArmed = true
		t.rpc = rArmPoll
		return add("armAndCool: ibv_req_notify_cq")
	case rArmPoll:
		if t.poll() != mFree {
			t.found = 1
		} else {
			t.hot = false
		}
		t.rpc = rArmWatched
		return add("armAndCool: poll")
	case rArmWatched:
		if md.v.oldLimit {
			t.word |= armedBit
		} else {
			t.inline(func(in *Inline) { in.watched() })
		}
		t.lock = mFree
		t.rpc = rAfterArm
		return add("armAndCool: watched, Unlock")
	case rAfterArm:
		if t.found > 0 || t.skipped {
			t.found, t.skipped = 0, false
			t.rpc = rPollTake
			return add("armAndCool found work")
		}
		t.rpc = rLimit
		return add("armAndCool done")
	case rLimit:
		switch {
		case md.v.noHandoff || !t.hot:
			t.short = false
		case md.v.oldLimit:
			t.short = t.word&countMask > 0 && (t.word>>24)&countMask > 0
		default:
			t.inline(func(in *Inline) { t.short = in.handoff() })
		}
		t.rpc = rSleep
		if t.short {
			return add("sleepLimit: handoffLimit")
		}
		return add("sleepLimit: sleepLimit")
	case rSleep:
		if s.event || s.evfd {
			events(&t)
			out = add("woken by the epoll set")
		}
		if s.short {
			t = s
			t.rpc = rPollTake
			t.found, t.skipped = 0, false
			out = add("handoffLimit passes")
		}
		return out
	case rEventsWoken:
		t.woken = false
		t.rpc = rPollTake
		return add("clears woken")
	}
	return out
}
