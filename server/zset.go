package server

import "math/rand/v2"

// zset is a sorted set: scores by member, and the members ordered by
// (score, member) in a skip list with spans, as valkey's zskiplist: adding,
// removing and finding the member at a rank take O(log n), a range of m
// members from a rank O(log n + m).
type zset struct {
	scores map[string]float64
	sl     skiplist
	// skiplist: valkey would hold this set as a skip list, not a listpack
	// (see grow); a few replies differ between the two.
	skiplist bool
}

// Valkey's zset-max-listpack-entries and zset-max-listpack-value.
const (
	zListpackEntries = 128
	zListpackValue   = 64
)

// willAdd notes a ZADD of n pairs whose longest member has longest bytes,
// as valkey's zsetTypeCreate and zsetTypeMaybeConvert do: past 128 pairs
// or 64 bytes, the set is a skip list, for good.
func (z *zset) willAdd(n, longest int) {
	if n > zListpackEntries || longest > zListpackValue {
		z.skiplist = true
	}
}

// adding notes that member is about to be added, as valkey's zsetAdd
// does: past 128 members or 64 bytes, the set becomes a skip list.
func (z *zset) adding(member string) {
	if z.len()+1 > zListpackEntries || len(member) > zListpackValue {
		z.skiplist = true
	}
}

type zitem struct {
	score  float64
	member string
}

func newZSet() *zset {
	return &zset{scores: map[string]float64{}, sl: skiplist{head: &znode{next: make([]zlink, zMaxLevel)}, level: 1}}
}

func (z *zset) len() int { return z.sl.n }

// set adds member or changes its score; it reports whether it was added.
func (z *zset) set(member string, score float64) (added bool) {
	old, existed := z.scores[member]
	if existed {
		if old == score {
			return false
		}
		z.sl.delete(zitem{old, member})
	}
	z.scores[member] = score
	z.sl.insert(zitem{score, member})
	return !existed
}

func (z *zset) remove(member string) bool {
	score, ok := z.scores[member]
	if !ok {
		return false
	}
	delete(z.scores, member)
	z.sl.delete(zitem{score, member})
	return true
}

// popMin removes and returns the first member; the set is not empty.
func (z *zset) popMin() zitem {
	it := z.sl.head.next[0].to.zitem
	z.sl.delete(it)
	delete(z.scores, it.member)
	return it
}

// at returns the node at rank (0 is the first), which is below len; the
// ones after it follow through next[0].
func (z *zset) at(rank int) *znode { return z.sl.byRank(rank + 1) }

const (
	zMaxLevel = 32 // valkey's ZSKIPLIST_MAXLEVEL
	// A node has a link at level k+1 with probability 1/zLevelOdds given
	// one at level k (valkey's ZSKIPLIST_P, 0.25).
	zLevelOdds = 4
)

// skiplist orders zitems by (score, member). head is a sentinel with
// zMaxLevel links; level is the number of levels in use.
type skiplist struct {
	head  *znode
	n     int
	level int
}

type znode struct {
	zitem
	next []zlink // next[k]: the following node at level k
}

// zlink points to the next node at a level; span is how many nodes on
// level 0 it passes over (1 to the adjacent one), so that walking down
// from the head adds up a node's rank.
type zlink struct {
	to   *znode
	span int
}

func (it zitem) less(o zitem) bool {
	return it.score < o.score || it.score == o.score && it.member < o.member
}

func randomLevel() int {
	l := 1
	for l < zMaxLevel && rand.N(zLevelOdds) == 0 {
		l++
	}
	return l
}

// insert adds it, which the list does not hold.
func (sl *skiplist) insert(it zitem) {
	var update [zMaxLevel]*znode
	var rank [zMaxLevel]int // rank of update[k]
	x := sl.head
	for k := sl.level - 1; k >= 0; k-- {
		if k < sl.level-1 {
			rank[k] = rank[k+1]
		}
		for x.next[k].to != nil && x.next[k].to.less(it) {
			rank[k] += x.next[k].span
			x = x.next[k].to
		}
		update[k] = x
	}
	level := randomLevel()
	for k := sl.level; k < level; k++ {
		rank[k] = 0
		update[k] = sl.head
		update[k].next[k].span = sl.n
	}
	sl.level = max(sl.level, level)
	node := &znode{zitem: it, next: make([]zlink, level)}
	for k := range level {
		node.next[k].to = update[k].next[k].to
		update[k].next[k].to = node
		// update[k] is at rank[k], node lands at rank[0]+1.
		node.next[k].span = update[k].next[k].span - (rank[0] - rank[k])
		update[k].next[k].span = rank[0] - rank[k] + 1
	}
	for k := level; k < sl.level; k++ {
		update[k].next[k].span++
	}
	sl.n++
}

// delete removes it, which the list holds.
func (sl *skiplist) delete(it zitem) {
	var update [zMaxLevel]*znode
	x := sl.head
	for k := sl.level - 1; k >= 0; k-- {
		for x.next[k].to != nil && x.next[k].to.less(it) {
			x = x.next[k].to
		}
		update[k] = x
	}
	node := x.next[0].to
	if node == nil || node.zitem != it {
		panic("server: sorted set out of step with its scores")
	}
	for k := range sl.level {
		if update[k].next[k].to == node {
			update[k].next[k].span += node.next[k].span - 1
			update[k].next[k].to = node.next[k].to
		} else {
			update[k].next[k].span--
		}
	}
	for sl.level > 1 && sl.head.next[sl.level-1].to == nil {
		sl.level--
	}
	sl.n--
}

// count returns how many nodes from the first pred holds for, pred being
// true of the nodes up to some rank and false after.
func (sl *skiplist) count(pred func(*znode) bool) int {
	x, rank := sl.head, 0
	for k := sl.level - 1; k >= 0; k-- {
		for x.next[k].to != nil && pred(x.next[k].to) {
			rank += x.next[k].span
			x = x.next[k].to
		}
	}
	return rank
}

// byRank returns the node at rank (1 is the first), which exists.
func (sl *skiplist) byRank(rank int) *znode {
	x, traversed := sl.head, 0
	for k := sl.level - 1; k >= 0; k-- {
		for x.next[k].to != nil && traversed+x.next[k].span <= rank {
			traversed += x.next[k].span
			x = x.next[k].to
		}
		if traversed == rank {
			return x
		}
	}
	panic("server: sorted set rank out of range")
}
