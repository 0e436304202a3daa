package server

import (
	"regexp"
	"slices"
	"strings"
)

// The differential test's commands of issue 35 item 4 (TestDifferential
// runs them): lists, hashes, sets and their algebra, the sorted sets'
// algebra, SCANs of a key, SORT; and how their replies are compared.

// collections makes one of the commands of lists, hashes, sets, sorted
// sets' algebra and SORT.
func (g *cmdGen) collections() []string {
	list := func() string { return g.keyOf("l0", "lcopy") }
	hash := func() string { return g.keyOf("h0", "hcopy") }
	set := func() string { return g.keyOf("s0", "s1", "scopy") }
	switch g.rng.IntN(16) {
	case 0, 1:
		return g.listCommand(list())
	case 2:
		return g.hashCommand(hash())
	case 3, 4:
		return g.setCommand(set())
	case 5, 6:
		return g.setAlgebra()
	case 7, 8, 9:
		return g.zsetAlgebra()
	case 10:
		return g.zsetLookup(g.keyOf("z0", "z1", bigSet))
	case 11:
		return g.keyScan()
	case 12:
		// Values for SORT's BY and GET: strings w_<member>, hashes
		// wh_<member>.
		if g.rng.IntN(2) == 0 {
			return []string{"set", "w_" + g.member(), g.sortValue()}
		}
		return []string{"hset", "wh_" + g.member(), "f", g.sortValue()}
	case 13:
		if g.rng.IntN(2) == 0 {
			return []string{"rpush", "l0", g.listElem(), g.listElem()}
		}
		return []string{"sadd", g.pick("s0", "s1"), g.listElem(), g.listElem()}
	}
	return g.sort()
}

// listElem is a member, or a number for SORT to sort.
func (g *cmdGen) listElem() string {
	if g.rng.IntN(2) == 0 {
		return g.member()
	}
	return g.pick("1", "2", "-3", "10", "2.5", "7", "0", "1e3")
}

func (g *cmdGen) sortValue() string {
	if g.rng.IntN(4) == 0 {
		return g.pick("", "x", "inf", "-inf", "nan", "1e400", " 1", "0x10", "1e-400", "1_0")
	}
	return g.pick("1", "2", "3", "-1", "0", "10", "5", "4", "2.5", "6", "7", "8", "9")
}

func (g *cmdGen) listCommand(key string) []string {
	switch g.rng.IntN(9) {
	case 0:
		return []string{"lindex", key, g.integer()}
	case 1:
		return []string{"linsert", key, g.pick("before", "AFTER", "after", "x"), g.member(), g.listElem()}
	case 2:
		cmd := []string{"lpos", key, g.member()}
		for range g.rng.IntN(4) {
			switch o := g.pick("rank", "count", "maxlen", "RANK", "bogus"); o {
			case "bogus":
				cmd = append(cmd, o)
			default:
				cmd = append(cmd, o, g.pick("0", "1", "2", "-1", "-2", "3", "x", "-9223372036854775808", "9223372036854775807"))
			}
		}
		return cmd
	case 3:
		return []string{g.pick("lpushx", "rpushx"), key, g.listElem(), g.listElem()}
	case 4:
		return []string{"lrem", key, g.pick("0", "1", "-1", "2", "-2", "x"), g.member()}
	case 5:
		return []string{"lset", key, g.integer(), g.listElem()}
	case 6:
		return []string{"ltrim", key, g.pick("0", "1", "-1", "-3", "x"), g.pick("0", "-1", "-2", "3", "100", "x")}
	case 7:
		return []string{"lrange", key, "0", "-1"}
	}
	return []string{g.pick("lpush", "rpush"), key, g.listElem(), g.listElem(), g.listElem()}
}

func (g *cmdGen) hashCommand(key string) []string {
	switch g.rng.IntN(6) {
	case 0:
		return []string{"hexists", key, g.member()}
	case 1:
		return []string{g.pick("hkeys", "hvals"), key}
	case 2:
		cmd := []string{"hmset", key}
		for range 1 + g.rng.IntN(3) {
			cmd = append(cmd, g.member(), g.pick("v", "1", ""))
		}
		return cmd
	case 3, 4:
		cmd := []string{"hrandfield", key}
		if g.rng.IntN(4) > 0 {
			cmd = append(cmd, g.randomCount())
			if g.rng.IntN(2) == 0 {
				cmd = append(cmd, g.pick("withvalues", "WITHVALUES", "withscores"))
			}
		}
		return cmd
	}
	return []string{"hscan", key, "0"}
}

// randomCount is a count of HRANDFIELD, SRANDMEMBER and ZRANDMEMBER.
func (g *cmdGen) randomCount() string {
	return g.pick("0", "1", "2", "5", "100", "-1", "-3", "-20", "x", "-9223372036854775808",
		"9223372036854775807", "4611686018427387904", "4611686018427387903") // no large negative one: valkey would reply with that many
}

func (g *cmdGen) setCommand(key string) []string {
	switch g.rng.IntN(4) {
	case 0:
		return []string{"smismember", key, g.member(), g.member()}
	case 1:
		return []string{"smove", key, g.keyOf("s0", "s1", "scopy"), g.member()}
	case 2:
		cmd := []string{"srandmember", key}
		if g.rng.IntN(4) > 0 {
			cmd = append(cmd, g.randomCount())
		}
		return cmd
	}
	return []string{"sadd", key, g.member(), g.member()}
}

func (g *cmdGen) setAlgebra() []string {
	set := func() string { return g.keyOf("s0", "s1", "scopy", "none") }
	if g.rng.IntN(5) == 0 {
		cmd := []string{"sintercard", g.pick("1", "2", "3", "0", "-1", "x", "5"), set(), set()}
		if g.rng.IntN(2) == 0 {
			cmd = append(cmd, g.pick("limit", "LIMIT", "bogus"), g.pick("0", "1", "2", "-1", "x"))
		}
		return cmd
	}
	op := g.pick("sunion", "sinter", "sdiff")
	cmd := []string{op}
	if g.rng.IntN(2) == 0 {
		cmd = []string{op + "store", g.pick("s1", "scopy", "sd", "s0")}
	}
	for range 1 + g.rng.IntN(3) {
		cmd = append(cmd, set())
	}
	return cmd
}

func (g *cmdGen) zsetAlgebra() []string {
	zset := func() string { return g.keyOf("z0", "z1", "s0", "z0", "none", bigSet) }
	op := g.pick("zunion", "zinter", "zdiff", "zintercard")
	store := op != "zintercard" && g.rng.IntN(2) == 0
	cmd := []string{op}
	if store {
		cmd = []string{op + "store", g.pick("z1", "zs", "z0")}
	}
	n := 1 + g.rng.IntN(3)
	cmd = append(cmd, g.pick(strconvItoa(n), strconvItoa(n), strconvItoa(n), "0", "-1", "x", "9"))
	for range n {
		cmd = append(cmd, zset())
	}
	for range g.rng.IntN(3) {
		switch o := g.pick("weights", "aggregate", "withscores", "limit", "WEIGHTS", "bogus"); o {
		case "weights", "WEIGHTS":
			cmd = append(cmd, o)
			for range n - g.rng.IntN(2) {
				cmd = append(cmd, g.pick("1", "2", "0", "-1", "0.5", "inf", "-inf", "x", "nan", "3"))
			}
		case "aggregate":
			cmd = append(cmd, o, g.pick("sum", "min", "MAX", "max", "avg"))
		case "limit":
			cmd = append(cmd, o, g.pick("0", "1", "2", "-1", "x"))
		default:
			cmd = append(cmd, o)
		}
	}
	return cmd
}

func strconvItoa(n int) string { return string(rune('0' + n)) }

func (g *cmdGen) zsetLookup(key string) []string {
	switch g.rng.IntN(4) {
	case 0:
		return []string{"zmscore", key, g.member(), g.member()}
	case 1:
		cmd := []string{g.pick("zrank", "zrevrank"), key, g.member()}
		if g.rng.IntN(2) == 0 {
			cmd = append(cmd, g.pick("withscore", "WITHSCORE", "withscores"))
		}
		return cmd
	}
	cmd := []string{"zrandmember", key}
	if g.rng.IntN(4) > 0 {
		cmd = append(cmd, g.randomCount())
		if g.rng.IntN(2) == 0 {
			cmd = append(cmd, g.pick("withscores", "WITHSCORES", "withvalues"))
		}
	}
	return cmd
}

// keyScan is HSCAN, SSCAN or ZSCAN, of a whole (small) collection in one
// call, or with a cursor or options that are refused.
func (g *cmdGen) keyScan() []string {
	name := g.pick("hscan", "sscan", "zscan")
	key := map[string]string{"hscan": "h0", "sscan": "s0", "zscan": "z0"}[name]
	cmd := []string{name, g.keyOf(key, "none"), g.pick("0", "0", "0", "x", "-1", "18446744073709551616")}
	for range g.rng.IntN(3) {
		switch g.rng.IntN(5) {
		case 0:
			cmd = append(cmd, "match", g.pick("*", "a*", "?", "b*", "[a-c]", "m?"))
		case 1:
			// Not a small count: a sorted set valkey holds as a skip
			// list is scanned in steps of its own.
			cmd = append(cmd, "count", g.pick("1000", "0", "x", "100"))
		case 2:
			cmd = append(cmd, g.pick("novalues", "noscores", "NOVALUES"))
		case 3:
			cmd = append(cmd, g.pick("type", "foo", "match", "count"))
		default:
			cmd = append(cmd, "type", "string")
		}
	}
	return cmd
}

func (g *cmdGen) sort() []string {
	cmd := []string{g.pick("sort", "sort", "sort_ro"), g.keyOf("l0", "s0", "z0", "l0", "none")}
	var opts [][]string
	for range g.rng.IntN(5) {
		switch o := g.pick("by", "limit", "get", "get", "asc", "desc", "alpha", "store", "bogus", "BY", "ALPHA"); o {
		case "by", "BY":
			opts = append(opts, []string{o, g.pick("w_*", "wh_*->f", "nosort", "w_*->f", "wh_*->", "*")})
		case "limit":
			opts = append(opts, []string{o, g.pick("0", "1", "2", "-1", "x", "10"), g.pick("0", "1", "2", "-1", "x", "5")})
		case "get":
			opts = append(opts, []string{o, g.pick("#", "w_*", "wh_*->f", "x", "wh_*->g", "*", "w_*->f")})
		case "store":
			opts = append(opts, []string{o, g.pick("lsort", "l0")})
		default:
			opts = append(opts, []string{o})
		}
	}
	// Stored results are made without reading numbers: valkey checks
	// errno after strtod without clearing it (sameCollReply), and a SORT
	// that fails there alone would leave the servers' keys apart. And
	// ALPHA with BY a pattern orders ties in any way in valkey: not
	// stored either, and the reply compared as sorted.
	store, alpha, byPattern, byConst := false, false, false, false
	for _, o := range opts {
		switch strings.ToLower(o[0]) {
		case "store":
			store = true
		case "alpha":
			alpha = true
		case "by":
			byPattern = byPattern || strings.Contains(o[1], "*")
			byConst = byConst || !strings.Contains(o[1], "*")
		}
	}
	if store && !alpha && !byConst {
		opts, alpha = append(opts, []string{"alpha"}), true
	}
	// A set unsorted (BY a constant), or ties of ALPHA BY: LIMIT would
	// take any of them.
	anyOrder := alpha && byPattern || byConst && strings.HasPrefix(cmd[1], "s")
	for _, o := range opts {
		if o[0] == "store" && alpha && byPattern || o[0] == "limit" && anyOrder {
			continue
		}
		cmd = append(cmd, o...)
	}
	return cmd
}

var (
	bulkReply   = regexp.MustCompile(`\$\d+\r\n[^\r]*\r\n`)
	doubleReply = regexp.MustCompile(`,[^\r]*\r\n`)
)

// shape is a reply with its strings' and doubles' contents left out,
// for comparing the replies of the commands that pick at random.
func shape(reply string) string {
	return doubleReply.ReplaceAllString(bulkReply.ReplaceAllString(reply, "$\r\n"), ",\r\n")
}

// sameCollReply compares the replies of the commands of collections()
// that are in no set order or random; ok is false for the others.
func sameCollReply(cmd []string, got, want string) (same, ok bool) {
	switch name := strings.ToLower(cmd[0]); name {
	case "hrandfield", "srandmember", "zrandmember":
		return strings.HasPrefix(want, "-") && got == want || !strings.HasPrefix(want, "-") && shape(got) == shape(want), true
	case "hkeys", "hvals", "sunion", "sinter", "sdiff":
		g, ok1 := sorted(got, false)
		w, ok2 := sorted(want, false)
		return ok1 && ok2 && g == w, true
	case "sort", "sort_ro":
		// Valkey reads a score with strtod and then looks at errno,
		// which it has not cleared: an ERANGE left by an earlier command
		// fails a score strtod read well ("" above all).
		if want == "-ERR One or more scores can't be converted into double\r\n" && !strings.HasPrefix(got, "-") {
			return true, true
		}
		// In no set order: a set's members unsorted, ties of ALPHA BY.
		g, ok1 := sorted(got, false)
		w, ok2 := sorted(want, false)
		return ok1 && ok2 && g == w, true
	case "hscan", "sscan", "zscan":
		const whole = "*2\r\n$1\r\n0\r\n"
		if !strings.HasPrefix(got, "*2\r\n") || !strings.HasPrefix(want, "*2\r\n") {
			return false, true
		}
		if !strings.HasPrefix(got, whole) || !strings.HasPrefix(want, whole) {
			// A set valkey holds as a hash table, scanned in steps.
			return !strings.HasPrefix(got, whole) && !strings.HasPrefix(want, whole), true
		}
		pairs := name != "sscan" && !slices.ContainsFunc(cmd, func(s string) bool {
			return strings.EqualFold(s, "novalues") || strings.EqualFold(s, "noscores")
		})
		g, ok1 := sorted(got[len(whole):], pairs)
		w, ok2 := sorted(want[len(whole):], pairs)
		return ok1 && ok2 && g == w, true
	}
	return false, false
}
