package server

// LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN], as valkey
// 8.0's lcsCommand: the longest common subsequence of two strings (a
// missing key is the empty string), its length, or its matching ranges.
func cmdLCS(c *conn, args [][]byte) {
	var a, b []byte
	for i, k := range args[1:3] {
		s := c.db.shard(k)
		s.rlock(c)
		e := s.get(k)
		wrong := e != nil && e.kind != kindString
		if e != nil && !wrong {
			if i == 0 {
				a = e.str
			} else {
				b = e.str
			}
		}
		s.runlock(c)
		if wrong {
			c.addError("ERR The specified keys must contain string values")
			return
		}
	}
	var getLen, getIdx, withMatchLen bool
	var minMatchLen int64
	for j := 3; j < len(args); j++ {
		opt := args[j]
		more := len(args) - 1 - j
		switch {
		case eqFold(opt, "idx"):
			getIdx = true
		case eqFold(opt, "len"):
			getLen = true
		case eqFold(opt, "withmatchlen"):
			withMatchLen = true
		case eqFold(opt, "minmatchlen") && more > 0:
			n, ok := parseInt(args[j+1])
			if !ok {
				c.addError(msgNotInteger)
				return
			}
			minMatchLen = max(n, 0)
			j++
		default:
			c.addError(msgSyntax)
			return
		}
	}
	if getLen && getIdx {
		c.addError("ERR If you want both the length and indexes, please just use IDX.")
		return
	}
	alen, blen := len(a), len(b)
	if int64(alen+1)*int64(blen+1)*4 > int64(c.srv.opts.MaxBulkLen) {
		c.addError("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
		return
	}
	w := blen + 1
	lcs := make([]uint32, (alen+1)*w)
	for i := 1; i <= alen; i++ {
		for j := 1; j <= blen; j++ {
			if a[i-1] == b[j-1] {
				lcs[i*w+j] = lcs[(i-1)*w+j-1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i-1)*w+j], lcs[i*w+j-1])
			}
		}
	}
	total := lcs[alen*w+blen]
	if getLen {
		c.addInt(int64(total))
		return
	}
	idx := total
	result := make([]byte, total)
	type match struct{ a0, a1, b0, b1 uint32 }
	var matches []match
	aStart, aEnd, bStart, bEnd := uint32(alen), uint32(0), uint32(0), uint32(0) // aStart == alen: no range open
	for i, j := uint32(alen), uint32(blen); i > 0 && j > 0; {
		emit := false
		if a[i-1] == b[j-1] {
			result[idx-1] = a[i-1]
			if aStart == uint32(alen) {
				aStart, aEnd, bStart, bEnd = i-1, i-1, j-1, j-1
			} else if aStart == i && bStart == j {
				aStart--
				bStart--
			} else {
				emit = true
			}
			if aStart == 0 || bStart == 0 {
				emit = true
			}
			idx--
			i--
			j--
		} else {
			if lcs[int(i-1)*w+int(j)] > lcs[int(i)*w+int(j)-1] {
				i--
			} else {
				j--
			}
			if aStart != uint32(alen) {
				emit = true
			}
		}
		if emit {
			if n := aEnd - aStart + 1; minMatchLen == 0 || int64(n) >= minMatchLen {
				matches = append(matches, match{aStart, aEnd, bStart, bEnd})
			}
			aStart = uint32(alen)
		}
	}
	if !getIdx {
		c.addBulk(result)
		return
	}
	c.addMap(2)
	c.addBulkString("matches")
	c.addArray(len(matches))
	for _, m := range matches {
		c.addArray(2 + int(boolInt(withMatchLen)))
		c.addArray(2)
		c.addInt(int64(m.a0))
		c.addInt(int64(m.a1))
		c.addArray(2)
		c.addInt(int64(m.b0))
		c.addInt(int64(m.b1))
		if withMatchLen {
			c.addInt(int64(m.a1 - m.a0 + 1))
		}
	}
	c.addBulkString("len")
	c.addInt(int64(total))
}
