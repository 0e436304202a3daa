package cq

import "testing"

type recorder struct{ got [][]uint64 }

func (r *recorder) HandleCompletions(wcs []Completion) {
	var ids []uint64
	for _, wc := range wcs {
		ids = append(ids, uint64(Local(wc.WRID)))
	}
	r.got = append(r.got, ids)
}
func (r *recorder) HandleCQError(error) {}

func TestWRID(t *testing.T) {
	reg := Registration{slot: 1<<24 - 1, gen: 0xbeef}
	w := reg.WRID(0xabcdef)
	if s, g := decode(w); s != reg.slot || g != reg.gen || Local(w) != 0xabcdef {
		t.Errorf("WRID %#x decodes to slot %d gen %#x local %#x", w, s, g, Local(w))
	}
	if Local(reg.WRID(0x1abcdef)) != 0xabcdef {
		t.Error("the local part is not masked to 24 bits")
	}
}

// TestDispatch: runs of completions for the same registration reach its
// handler together; completions of a stale generation or an unknown slot
// are counted and dropped.
func TestDispatch(t *testing.T) {
	a, b := &recorder{}, &recorder{}
	r := &Reactor{entries: []entry{{gen: 3, h: a, live: true}, {gen: 1, h: b, live: true}}}
	ra, rb := Registration{0, 3}, Registration{1, 1}
	old := Registration{0, 2}  // slot 0's previous generation
	gone := Registration{7, 0} // no such slot
	wcs := []Completion{
		{WRID: ra.WRID(1)}, {WRID: ra.WRID(2)},
		{WRID: rb.WRID(3)},
		{WRID: old.WRID(4)},
		{WRID: ra.WRID(5)},
		{WRID: gone.WRID(6)},
	}
	r.dispatch(wcs)
	if len(a.got) != 2 || len(a.got[0]) != 2 || a.got[0][1] != 2 || a.got[1][0] != 5 {
		t.Errorf("handler a got %v, want [[1 2] [5]]", a.got)
	}
	if len(b.got) != 1 || b.got[0][0] != 3 {
		t.Errorf("handler b got %v, want [[3]]", b.got)
	}
	if n := r.stale.Load(); n != 2 {
		t.Errorf("stale %d, want 2", n)
	}
}

type nopHandler struct{ n int }

func (h *nopHandler) HandleCompletions(wcs []Completion) { h.n += len(wcs) }
func (h *nopHandler) HandleCQError(error)                {}

// BenchmarkDispatch: a poll's batch of 16 completions for 4 queue pairs, in
// runs of 2, handed to their handlers; an op is a batch.
func BenchmarkDispatch(b *testing.B) {
	const regs, batch = 4, 16
	r := &Reactor{}
	hs := make([]*nopHandler, regs)
	wcs := make([]Completion, batch)
	for i := range regs {
		hs[i] = &nopHandler{}
		r.entries = append(r.entries, entry{gen: 1, h: hs[i], live: true})
	}
	for i := range wcs {
		wcs[i].WRID = Registration{slot: uint32(i / 2 % regs), gen: 1}.WRID(uint32(i))
	}
	b.ReportAllocs()
	for b.Loop() {
		r.dispatch(wcs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/completion")
}
