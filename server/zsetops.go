package server

import (
	"math"
	"slices"
	"strings"
)

// The sorted sets' algebra: ZUNION, ZINTER, ZDIFF, their STORE forms and
// ZINTERCARD, as valkey 8.0's zunionInterDiffGenericCommand. Sets count
// as sorted sets whose scores are all 1. A command locks the shards of
// all its keys at once (lockKeys).

// The aggregates of ZUNION and ZINTER.
const (
	aggSum = iota
	aggMin
	aggMax
)

// zsource is an input of the algebra: a sorted set or a set (or none).
type zsource struct {
	z      *zset
	set    setValue
	weight float64
}

func (s zsource) len() int {
	if s.z != nil {
		return s.z.len()
	}
	return len(s.set)
}

// score returns member's score in s and whether it is there.
func (s zsource) score(member string) (float64, bool) {
	if s.z != nil {
		sc, ok := s.z.scores[member]
		return sc, ok
	}
	_, ok := s.set[member]
	return 1, ok
}

// each calls f with each member of s and its score.
func (s zsource) each(f func(member string, score float64)) {
	if s.z != nil {
		for x := s.z.sl.head.next[0].to; x != nil; x = x.next[0].to {
			f(x.member, x.score)
		}
		return
	}
	for m := range s.set {
		f(m, 1)
	}
}

// aggregate is valkey's zunionInterAggregate: a sum that is NaN (inf and
// -inf) is 0.
func aggregate(cur, v float64, agg int) float64 {
	switch agg {
	case aggMin:
		return min(cur, v)
	case aggMax:
		return max(cur, v)
	}
	if s := cur + v; !math.IsNaN(s) {
		return s
	}
	return 0
}

// weighted is a member's score times its set's weight, 0 for NaN.
func weighted(score, weight float64) float64 {
	if s := score * weight; !math.IsNaN(s) {
		return s
	}
	return 0
}

// zsetAlgebra returns ZUNION, ZINTER or ZDIFF numkeys key [key ...]
// [WEIGHTS weight ...] [AGGREGATE SUM | MIN | MAX] [WITHSCORES]; with
// store their STORE forms, destination first and no WITHSCORES; with
// card ZINTERCARD numkeys key [key ...] [LIMIT limit].
func zsetAlgebra(op setOp, store, card bool) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		numIndex := 1
		if store {
			numIndex = 2
		}
		n, ok := parseInt(args[numIndex])
		switch {
		case !ok:
			c.addError(msgNotInteger)
			return
		case n < 1:
			c.addError("ERR at least 1 input key is needed for '" + strings.ToLower(string(args[0])) + "' command")
			return
		case n > int64(len(args)-numIndex-1):
			c.addError(msgSyntax)
			return
		}
		keys := args[numIndex+1 : numIndex+1+int(n)]
		locked := keys
		if store {
			locked = append([][]byte{args[1]}, keys...)
		}
		unlock := c.lockKeys(locked)
		defer unlock()
		src := make([]zsource, len(keys))
		for i, k := range keys {
			src[i].weight = 1
			e := c.db.shard(k).get(k)
			switch {
			case e == nil:
			case e.kind == kindZSet:
				src[i].z = e.obj.(*zset)
			case e.kind == kindSet:
				src[i].set = e.obj.(setValue)
			default:
				c.addError(msgWrongType)
				return
			}
		}
		agg, withScores, limit := aggSum, false, int64(0)
		for j := numIndex + 1 + int(n); j < len(args); j++ {
			remaining := len(args) - j
			switch a := args[j]; {
			case op != setDiff && !card && remaining >= len(src)+1 && eqFold(a, "weights"):
				for i := range src {
					j++
					w, ok := parseScore(args[j])
					if !ok {
						c.addError("ERR weight value is not a float")
						return
					}
					src[i].weight = w
				}
			case op != setDiff && !card && remaining >= 2 && eqFold(a, "aggregate"):
				j++
				switch {
				case eqFold(args[j], "sum"):
					agg = aggSum
				case eqFold(args[j], "min"):
					agg = aggMin
				case eqFold(args[j], "max"):
					agg = aggMax
				default:
					c.addError(msgSyntax)
					return
				}
			case !store && !card && eqFold(a, "withscores"):
				withScores = true
			case card && remaining >= 2 && eqFold(a, "limit"):
				j++
				if limit, ok = parseInt(args[j]); !ok || limit < 0 {
					c.addError("ERR LIMIT can't be negative")
					return
				}
			default:
				c.addError(msgSyntax)
				return
			}
		}
		out := combineZSets(op, src, agg, limit)
		switch {
		case card:
			c.addInt(int64(len(out)))
		case store:
			c.addInt(int64(len(out)))
			storeZSet(c, args[1], out)
		default:
			items := sortedItems(out)
			if withScores && c.proto == 2 {
				c.addArray(2 * len(items))
			} else {
				c.addArray(len(items))
			}
			for _, it := range items {
				if withScores {
					c.addScored(it, true)
				} else {
					c.addBulkString(it.member)
				}
			}
		}
	}
}

// combineZSets applies op to src: an intersection and a union add up
// the weighted scores as agg says, the sets taken from the smallest up,
// as valkey does; a difference keeps the first set's scores. limit above
// 0 stops an intersection once it has that many members.
func combineZSets(op setOp, src []zsource, agg int, limit int64) map[string]float64 {
	out := map[string]float64{}
	if op == setDiff {
		src[0].each(func(m string, sc float64) {
			for _, o := range src[1:] {
				if _, in := o.score(m); in {
					return
				}
			}
			out[m] = sc
		})
		return out
	}
	bySize := slices.Clone(src)
	slices.SortStableFunc(bySize, func(a, b zsource) int { return a.len() - b.len() })
	if op == setUnion {
		for _, s := range bySize {
			s.each(func(m string, sc float64) {
				v := weighted(sc, s.weight)
				if cur, ok := out[m]; ok {
					out[m] = aggregate(cur, v, agg)
				} else {
					out[m] = v
				}
			})
		}
		return out
	}
	if bySize[0].len() == 0 {
		return out
	}
	bySize[0].each(func(m string, sc float64) {
		if limit > 0 && int64(len(out)) >= limit {
			return
		}
		v := weighted(sc, bySize[0].weight)
		for _, o := range bySize[1:] {
			osc, in := o.score(m)
			if !in {
				return
			}
			v = aggregate(v, weighted(osc, o.weight), agg)
		}
		out[m] = v
	})
	return out
}

// sortedItems returns m's members and scores in a sorted set's order.
func sortedItems(m map[string]float64) []zitem {
	items := make([]zitem, 0, len(m))
	for member, sc := range m {
		items = append(items, zitem{sc, member})
	}
	slices.SortFunc(items, func(a, b zitem) int {
		switch {
		case a.less(b):
			return -1
		case b.less(a):
			return 1
		}
		return 0
	})
	return items
}

// storeZSet stores the members and scores of m as a sorted set under
// dst, or deletes dst when m is empty. The caller holds dst's shard. As
// valkey's, the set is a listpack (which stores -0 as 0) if it is small
// enough.
func storeZSet(c *conn, dst []byte, m map[string]float64) {
	s := c.db.shard(dst)
	if len(m) == 0 {
		s.remove(dst)
		return
	}
	z := newZSet()
	longest := 0
	for member := range m {
		longest = max(longest, len(member))
	}
	z.skiplist = len(m) > zListpackEntries || longest > zListpackValue
	for member, sc := range m {
		if !z.skiplist {
			sc += 0
		}
		z.set(member, sc)
	}
	s.storeObject(dst, kindZSet, z)
}
