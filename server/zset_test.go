package server

import (
	"fmt"
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

// TestZAddScales: 200,000 single-member ZADDs and ZRANGEs of a few
// members into one set, checked by the set's contents. They take 1-2 s
// (logged); the sorted slice this replaced took 146 s on a busy host, so a
// quadratic set shows as a test that runs into the binary's timeout. The
// time itself is the benchmarks' (BenchmarkZAdd).
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
	t.Logf("%d ZADDs and ZRANGEs took %v", n, time.Since(start))
	c.out = c.out[:0]
	c.exec([][]byte{[]byte("zcard"), []byte("z")})
	if string(c.out) != ":200000\r\n" {
		t.Errorf("ZCARD %q", c.out)
	}
}

// TestZRangeByScoreAndLex: ZRANGE BYSCORE and BYLEX, with REV and LIMIT,
// on a set larger than the differential test builds, against a filter of
// all members.
func TestZRangeByScoreAndLex(t *testing.T) {
	srv := New(nil)
	c := newConn(srv, discardConn{})
	do := func(args ...string) string {
		c.out = c.out[:0]
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		c.exec(b)
		return string(c.out)
	}
	const n = 1000
	var all []zitem
	for i := range n {
		m := fmt.Sprintf("m%04d", i)
		score := float64(i%100) / 2
		do("zadd", "z", strconv.FormatFloat(score, 'f', -1, 64), m)
		do("zadd", "lex", "0", m)
		all = append(all, zitem{score, m})
	}
	slices.SortFunc(all, func(a, b zitem) int {
		if a.less(b) {
			return -1
		}
		return 1
	})
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		lo, hi := float64(rng.IntN(60))-5, float64(rng.IntN(60))-5
		loEx, hiEx := rng.IntN(2) == 0, rng.IntN(2) == 0
		rev := rng.IntN(2) == 0
		offset, limit := rng.IntN(30), rng.IntN(40)-5
		var want []string
		for _, it := range all {
			if (loEx && it.score > lo || !loEx && it.score >= lo) && (hiEx && it.score < hi || !hiEx && it.score <= hi) {
				want = append(want, it.member)
			}
		}
		if rev {
			slices.Reverse(want)
		}
		want = want[min(offset, len(want)):]
		if limit >= 0 {
			want = want[:min(limit, len(want))]
		}
		end := func(f float64, ex bool) string {
			if ex {
				return "(" + strconv.FormatFloat(f, 'f', -1, 64)
			}
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
		args := []string{"zrange", "z", end(lo, loEx), end(hi, hiEx), "byscore", "limit", strconv.Itoa(offset), strconv.Itoa(limit)}
		lexArgs := []string{"zrange", "lex", "[" + fmt.Sprintf("m%04d", int(lo)*20), "(" + fmt.Sprintf("m%04d", int(hi)*20), "bylex", "limit", strconv.Itoa(offset), strconv.Itoa(limit)}
		if rev {
			args[2], args[3] = args[3], args[2]
			args = append(args, "rev")
			lexArgs[2], lexArgs[3] = lexArgs[3], lexArgs[2]
			lexArgs = append(lexArgs, "rev")
		}
		if got, w := do(args...), bulks(want); got != w {
			t.Fatalf("%q: %q, want %q", args, got, w)
		}
		var wantLex []string
		for i := max(int(lo)*20, 0); i < min(int(hi)*20, n); i++ {
			wantLex = append(wantLex, fmt.Sprintf("m%04d", i))
		}
		if rev {
			slices.Reverse(wantLex)
		}
		wantLex = wantLex[min(offset, len(wantLex)):]
		if limit >= 0 {
			wantLex = wantLex[:min(limit, len(wantLex))]
		}
		if got, w := do(lexArgs...), bulks(wantLex); got != w {
			t.Fatalf("%q: %q, want %q", lexArgs, got, w)
		}
	}
}

// bulks is the RESP2 array of bulk strings of ms.
func bulks(ms []string) string {
	s := fmt.Sprintf("*%d\r\n", len(ms))
	for _, m := range ms {
		s += fmt.Sprintf("$%d\r\n%s\r\n", len(m), m)
	}
	return s
}

// BenchmarkZAdd: a single-member ZADD into a set of b.N members, then a
// ZRANGE of ten: logarithmic per operation (TestZAddScales checks the
// contents at 200,000).
func BenchmarkZAdd(b *testing.B) {
	srv := New(nil)
	c := newConn(srv, discardConn{})
	b.ReportAllocs()
	for i := range b.N {
		c.out = c.out[:0]
		c.exec([][]byte{[]byte("zadd"), []byte("z"), []byte(strconv.Itoa((i * 7919) % (b.N + 1))), []byte("m" + strconv.Itoa(i))})
		c.out = c.out[:0]
		c.exec([][]byte{[]byte("zrange"), []byte("z"), []byte(strconv.Itoa(i / 2)), []byte(strconv.Itoa(i/2 + 9)), []byte("withscores")})
	}
}
