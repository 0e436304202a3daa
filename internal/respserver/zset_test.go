package respserver

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestSkiplist: random adds, score changes, removals and pops against a
// sorted slice; after each step the order, the ranks and the spans agree.
func TestSkiplist(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	z := newZSet()
	var want []zitem
	find := func(m string) int {
		return slices.IndexFunc(want, func(it zitem) bool { return it.member == m })
	}
	for step := range 20000 {
		m := "m" + strconv.Itoa(rng.IntN(500))
		score := float64(rng.IntN(50)) / 2
		switch op := rng.IntN(10); {
		case op < 6:
			added := z.set(m, score)
			i := find(m)
			if added != (i < 0) {
				t.Fatalf("step %d: set(%q) added %v", step, m, added)
			}
			if i >= 0 {
				want = slices.Delete(want, i, i+1)
			}
			want = append(want, zitem{score, m})
			slices.SortFunc(want, func(a, b zitem) int {
				if a.less(b) {
					return -1
				}
				if b.less(a) {
					return 1
				}
				return 0
			})
		case op < 9:
			i := find(m)
			if z.remove(m) != (i >= 0) {
				t.Fatalf("step %d: remove(%q) disagrees", step, m)
			}
			if i >= 0 {
				want = slices.Delete(want, i, i+1)
			}
		case len(want) > 0:
			if got := z.popMin(); got != want[0] {
				t.Fatalf("step %d: popMin %v, want %v", step, got, want[0])
			}
			want = want[1:]
		}
		if step%97 == 0 || step > 19900 {
			checkSkiplist(t, z, want)
		}
	}
}

func checkSkiplist(t *testing.T, z *zset, want []zitem) {
	t.Helper()
	if z.len() != len(want) || len(z.scores) != len(want) {
		t.Fatalf("len %d, scores %d, want %d", z.len(), len(z.scores), len(want))
	}
	i := 0
	for x := z.sl.head.next[0].to; x != nil; x = x.next[0].to {
		if i >= len(want) || x.zitem != want[i] {
			t.Fatalf("at %d: %v, want %v", i, x.zitem, want)
		}
		i++
	}
	for r := range want {
		if got := z.at(r).zitem; got != want[r] {
			t.Fatalf("at(%d) = %v, want %v", r, got, want[r])
		}
	}
	// Each level's spans add up to the ranks of the nodes it links.
	for k := range z.sl.level {
		rank := 0
		for x := z.sl.head; x.next[k].to != nil; x = x.next[k].to {
			rank += x.next[k].span
			if z.at(rank-1) != x.next[k].to {
				t.Fatalf("level %d: a span leads to rank %d, which is another node", k, rank)
			}
		}
	}
}

// TestZAddScales: single-member ZADDs and ZRANGEs of a few members stay
// logarithmic: 200,000 of each into one set take 1-2 s (the sorted slice
// before took 146 s on a busy host); the bound leaves room for a busier
// one.
func TestZAddScales(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	srv := New(nil)
	c := newConn(srv, discardConn{})
	const n = 200000
	start := time.Now()
	for i := range n {
		c.out = c.out[:0]
		c.exec([][]byte{[]byte("zadd"), []byte("z"), []byte(strconv.Itoa((i * 7919) % n)), []byte("m" + strconv.Itoa(i))})
	}
	for i := range n {
		c.out = c.out[:0]
		c.exec([][]byte{[]byte("zrange"), []byte("z"), []byte(strconv.Itoa(i)), []byte(strconv.Itoa(i + 9)), []byte("withscores")})
	}
	limit := 20 * time.Second
	if raceEnabled {
		limit *= 5
	}
	if took := time.Since(start); took > limit {
		t.Errorf("%d ZADDs and ZRANGEs took %v", n, took)
	}
	c.out = c.out[:0]
	c.exec([][]byte{[]byte("zcard"), []byte("z")})
	if string(c.out) != ":200000\r\n" {
		t.Errorf("ZCARD %q", c.out)
	}
}
