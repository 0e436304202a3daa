package cq

import (
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// completion is a Completion of the work request wrid.
func completion(wrid uint64) Completion { return Completion{wc: verbs.WC{WRID: wrid}} }

type recorder struct {
	got   [][]uint64
	owned []bool
}

func (r *recorder) HandleCompletions(wcs []Completion, byOwner bool) {
	var ids []uint64
	for _, wc := range wcs {
		ids = append(ids, uint64(wc.Local()))
	}
	r.got = append(r.got, ids)
	r.owned = append(r.owned, byOwner)
}
func (r *recorder) HandleCQError(error) {}

func TestWRID(t *testing.T) {
	reg := registration{slot: 1<<24 - 1, gen: 0xbeef}
	w := reg.wrid(0xabcdef)
	if s, g := decode(w); s != reg.slot || g != reg.gen || local(w) != 0xabcdef {
		t.Errorf("WRID %#x decodes to slot %d gen %#x local %#x", w, s, g, local(w))
	}
	if local(reg.wrid(0x1abcdef)) != 0xabcdef {
		t.Error("the local part is not masked to 24 bits")
	}
	// The queue bit and the handler's 23 bits.
	for _, c := range []struct {
		wrid uint64
		send bool
	}{{reg.SendWRID(0x7abcdef), true}, {reg.RecvWRID(0x7abcdef), false}} {
		wc := completion(c.wrid)
		if s, g := decode(c.wrid); s != reg.slot || g != reg.gen || wc.Send() != c.send || wc.Local() != 0x7abcdef&LocalMask {
			t.Errorf("WRID %#x decodes to slot %d gen %#x send %v local %#x", c.wrid, s, g, wc.Send(), wc.Local())
		}
	}
}

// TestDispatch: runs of completions for the same member reach its handler
// together, told whether the poller was that member; completions of a
// stale generation or an unknown slot are counted and dropped.
func TestDispatch(t *testing.T) {
	a, b := &recorder{}, &recorder{}
	r := &Reactor{}
	q := &queue{r: r, members: []member{{gen: 3, h: a, live: true}, {gen: 1, h: b, live: true}}}
	ra, rb := registration{0, 3}, registration{1, 1}
	old := registration{0, 2}  // slot 0's previous generation
	gone := registration{7, 0} // no such slot
	wcs := []Completion{
		completion(ra.RecvWRID(1)), completion(ra.RecvWRID(2)),
		completion(rb.SendWRID(3)),
		completion(old.RecvWRID(4)),
		completion(ra.SendWRID(5)),
		completion(gone.RecvWRID(6)),
	}
	if own := q.dispatch(wcs, 1); own != 1 {
		t.Errorf("dispatch with member 1 polling = %d of its own, want 1", own)
	}
	if len(a.got) != 2 || len(a.got[0]) != 2 || a.got[0][1] != 2 || a.got[1][0] != 5 {
		t.Errorf("handler a got %v, want [[1 2] [5]]", a.got)
	}
	if len(b.owned) != 1 || !b.owned[0] || a.owned[0] || a.owned[1] {
		t.Errorf("byOwner: a %v, b %v; want only b's true", a.owned, b.owned)
	}
	if len(b.got) != 1 || b.got[0][0] != 3 {
		t.Errorf("handler b got %v, want [[3]]", b.got)
	}
	if n := r.stale.Load(); n != 2 {
		t.Errorf("stale %d, want 2", n)
	}
}

type nopHandler struct{ n int }

func (h *nopHandler) HandleCompletions(wcs []Completion, _ bool) { h.n += len(wcs) }
func (h *nopHandler) HandleCQError(error)                        {}

// BenchmarkDispatch: a poll's batch of 16 completions for 4 queue pairs, in
// runs of 2, handed to their handlers; an op is a batch.
func BenchmarkDispatch(b *testing.B) {
	const regs, batch = 4, 16
	q := &queue{r: &Reactor{}}
	hs := make([]*nopHandler, regs)
	wcs := make([]Completion, batch)
	for i := range regs {
		hs[i] = &nopHandler{}
		q.members = append(q.members, member{gen: 1, h: hs[i], live: true})
	}
	for i := range wcs {
		wcs[i] = completion(registration{slot: uint32(i / 2 % regs), gen: 1}.RecvWRID(uint32(i)))
	}
	b.ReportAllocs()
	for b.Loop() {
		q.dispatch(wcs, noOwner)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/completion")
}
