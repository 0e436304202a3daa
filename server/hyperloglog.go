package server

import (
	"encoding/binary"
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"strings"
)

// The HyperLogLog commands, as valkey 8.0's hyperloglog.c, down to the
// bytes: a HyperLogLog is a string of a 16-byte header ("HYLL", the
// encoding, three zero bytes, the cached cardinality, little-endian, its
// top bit set while invalid) and 16384 registers of 6 bits, either dense
// (12288 bytes) or sparse (runs of ZERO, XZERO and VAL opcodes, promoted
// to dense past hllSparseMax bytes or a register above 32). The same
// hash (MurmurHash64A), the same opcode merging and the same estimator
// make every value and count equal to valkey's, so values copied between
// the two servers keep working.

const (
	hllP           = 14
	hllQ           = 64 - hllP
	hllRegisters   = 1 << hllP
	hllPMask       = hllRegisters - 1
	hllBits        = 6
	hllRegMax      = 1<<hllBits - 1
	hllHdrSize     = 16
	hllDenseSize   = hllHdrSize + (hllRegisters*hllBits+7)/8
	hllDense       = 0
	hllSparse      = 1
	hllMaxEncoding = 1
	// hllSparseMax is valkey's default hll-sparse-max-bytes.
	hllSparseMax = 3000

	hllXZeroBit    = 0x40
	hllValBit      = 0x80
	hllValMaxValue = 32
	hllValMaxLen   = 4
	hllZeroMaxLen  = 64
	hllXZeroMaxLen = 16384
	hllAlphaInf    = 0.721347520444481703680 // 0.5/ln(2)
)

const (
	msgNotHLL     = "WRONGTYPE Key is not a valid HyperLogLog string value."
	msgInvalidHLL = "INVALIDOBJ Corrupted HLL object detected"
)

// murmurHash64A is valkey's MurmurHash64A (little-endian reads).
func murmurHash64A(key []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ uint64(len(key))*m
	for len(key) >= 8 {
		k := binary.LittleEndian.Uint64(key)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
		key = key[8:]
	}
	if n := len(key); n > 0 {
		for i := n - 1; i >= 0; i-- {
			h ^= uint64(key[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// hllPatLen returns the register of ele and the length of its run of
// zero bits plus one.
func hllPatLen(ele []byte) (index int, count uint8) {
	h := murmurHash64A(ele, 0xadc83b19)
	index = int(h & hllPMask)
	h >>= hllP
	h |= 1 << hllQ
	return index, uint8(1 + bits.TrailingZeros64(h))
}

func denseGet(regs []byte, i int) uint8 {
	b := i * hllBits / 8
	fb := uint(i * hllBits & 7)
	b0 := uint(regs[b])
	var b1 uint
	if b+1 < len(regs) {
		b1 = uint(regs[b+1])
	}
	return uint8((b0>>fb | b1<<(8-fb)) & hllRegMax)
}

func denseSet(regs []byte, i int, v uint8) {
	b := i * hllBits / 8
	fb := uint(i * hllBits & 7)
	regs[b] &^= byte(hllRegMax << fb)
	regs[b] |= byte(uint(v) << fb)
	if b+1 < len(regs) {
		regs[b+1] &^= byte(hllRegMax >> (8 - fb))
		regs[b+1] |= byte(uint(v) >> (8 - fb))
	}
}

func denseSetMax(regs []byte, i int, v uint8) bool {
	if v > denseGet(regs, i) {
		denseSet(regs, i, v)
		return true
	}
	return false
}

func sparseIsZero(b byte) bool  { return b&0xc0 == 0 }
func sparseIsXZero(b byte) bool { return b&0xc0 == hllXZeroBit }
func sparseIsVal(b byte) bool   { return b&hllValBit != 0 }
func sparseZeroLen(b byte) int  { return int(b&0x3f) + 1 }
func sparseXZeroLen(p []byte, i int) int {
	lo := 0
	if i+1 < len(p) {
		lo = int(p[i+1])
	}
	return (int(p[i]&0x3f)<<8 | lo) + 1
}
func sparseValValue(b byte) int           { return int(b>>2&0x1f) + 1 }
func sparseValLen(b byte) int             { return int(b&3) + 1 }
func sparseVal(val, n int) byte           { return byte((val-1)<<2|(n-1)) | hllValBit }
func sparseXZero(n int) (byte, byte)      { return byte((n-1)>>8) | hllXZeroBit, byte((n - 1) & 0xff) }
func sparseZero(n int) byte               { return byte(n - 1) }
func hllInvalidateCache(h []byte)         { h[15] |= 0x80 }
func hllValidCache(h []byte) bool         { return h[15]&0x80 == 0 }
func hllEncoding(h []byte) byte           { return h[4] }
func hllCachedCard(h []byte) uint64       { return binary.LittleEndian.Uint64(h[8:16]) }
func hllSetCachedCard(h []byte, n uint64) { binary.LittleEndian.PutUint64(h[8:16], n) }

// newHLL is an empty sparse HyperLogLog: one XZERO run of every register.
func newHLL() []byte {
	h := make([]byte, hllHdrSize, hllHdrSize+64)
	copy(h, "HYLL")
	h[4] = hllSparse
	for n := hllRegisters; n > 0; n -= hllXZeroMaxLen {
		a, b := sparseXZero(min(n, hllXZeroMaxLen))
		h = append(h, a, b)
	}
	return h
}

// isHLL reports whether v is a HyperLogLog as valkey's isHLLObjectOrReply
// checks it: the magic, a known encoding, a dense one's exact size.
func isHLL(v []byte) bool {
	return len(v) >= hllHdrSize && string(v[:4]) == "HYLL" && v[4] <= hllMaxEncoding &&
		(v[4] != hllDense || len(v) == hllDenseSize)
}

// hllToDense returns the dense form of the sparse h, its header copied;
// false if h is corrupt.
func hllToDense(h []byte) ([]byte, bool) {
	if hllEncoding(h) == hllDense {
		return h, true
	}
	d := make([]byte, hllDenseSize)
	copy(d, h[:hllHdrSize])
	d[4] = hllDense
	regs := d[hllHdrSize:]
	if !sparseRuns(h, func(i, n int, v uint8) {
		for ; n > 0; n-- {
			denseSet(regs, i, v)
			i++
		}
	}) {
		return nil, false
	}
	return d, true
}

// hllSparseSet is valkey's hllSparseSet on *h: 1 if register index was
// raised to count, 0 if it held as much, -1 if *h is corrupt. *h may be
// replaced by its dense form.
func hllSparseSet(h *[]byte, index int, count uint8) int {
	if count > hllValMaxValue {
		return hllPromote(h, index, count)
	}
	o := *h
	end := len(o)
	p := hllHdrSize
	first, span, prev := 0, 0, -1
	for p < end {
		oplen := 1
		switch b := o[p]; {
		case sparseIsZero(b):
			span = sparseZeroLen(b)
		case sparseIsVal(b):
			span = sparseValLen(b)
		default:
			span = sparseXZeroLen(o, p)
			oplen = 2
		}
		if index <= first+span-1 {
			break
		}
		prev = p
		p += oplen
		first += span
	}
	if span == 0 || p >= end {
		return -1
	}
	next := p + 1
	if sparseIsXZero(o[p]) {
		next = p + 2
	}
	if next >= end {
		next = -1
	}
	var isZero, isXZero, isVal bool
	var runlen int
	switch b := o[p]; {
	case sparseIsZero(b):
		isZero, runlen = true, sparseZeroLen(b)
	case sparseIsXZero(b):
		isXZero, runlen = true, sparseXZeroLen(o, p)
	default:
		isVal, runlen = true, sparseValLen(b)
	}
	updated := false
	if isVal {
		if sparseValValue(o[p]) >= int(count) {
			return 0
		}
		if runlen == 1 {
			o[p] = sparseVal(int(count), 1)
			updated = true
		}
	}
	if !updated && isZero && runlen == 1 {
		o[p] = sparseVal(int(count), 1)
		updated = true
	}
	if !updated {
		seq := make([]byte, 0, 5)
		last := first + span - 1
		if isZero || isXZero {
			if index != first {
				if n := index - first; n > hllZeroMaxLen {
					a, b := sparseXZero(n)
					seq = append(seq, a, b)
				} else {
					seq = append(seq, sparseZero(n))
				}
			}
			seq = append(seq, sparseVal(int(count), 1))
			if index != last {
				if n := last - index; n > hllZeroMaxLen {
					a, b := sparseXZero(n)
					seq = append(seq, a, b)
				} else {
					seq = append(seq, sparseZero(n))
				}
			}
		} else {
			cur := sparseValValue(o[p])
			if index != first {
				seq = append(seq, sparseVal(cur, index-first))
			}
			seq = append(seq, sparseVal(int(count), 1))
			if index != last {
				seq = append(seq, sparseVal(cur, last-index))
			}
		}
		oldlen := 1
		if isXZero {
			oldlen = 2
		}
		delta := len(seq) - oldlen
		if delta > 0 && len(o)+delta > hllSparseMax {
			return hllPromote(h, index, count)
		}
		n := make([]byte, 0, len(o)+delta)
		n = append(n, o[:p]...)
		n = append(n, seq...)
		if next >= 0 {
			n = append(n, o[next:]...)
		}
		o = n
		end = len(o)
	}
	// Merge adjacent VAL opcodes of the same value, scanning up to five
	// opcodes from the one before the change.
	p = hllHdrSize
	if prev >= 0 {
		p = prev
	}
	for scan := 5; p < end && scan > 0; scan-- {
		switch {
		case sparseIsXZero(o[p]):
			p += 2
			continue
		case sparseIsZero(o[p]):
			p++
			continue
		}
		if p+1 < end && sparseIsVal(o[p+1]) {
			v1, v2 := sparseValValue(o[p]), sparseValValue(o[p+1])
			if v1 == v2 {
				if n := sparseValLen(o[p]) + sparseValLen(o[p+1]); n <= hllValMaxLen {
					o[p+1] = sparseVal(v1, n)
					o = append(o[:p], o[p+1:]...)
					end--
					continue
				}
			}
		}
		p++
	}
	hllInvalidateCache(o)
	*h = o
	return 1
}

// hllPromote turns *h dense and sets the register there.
func hllPromote(h *[]byte, index int, count uint8) int {
	d, ok := hllToDense(*h)
	if !ok {
		return -1
	}
	denseSetMax(d[hllHdrSize:], index, count)
	*h = d
	return 1
}

// hllAdd adds ele to *h: 1 if a register changed, 0 if not, -1 if *h is
// corrupt.
func hllAdd(h *[]byte, ele []byte) int {
	index, count := hllPatLen(ele)
	switch hllEncoding(*h) {
	case hllDense:
		return int(boolInt(denseSetMax((*h)[hllHdrSize:], index, count)))
	case hllSparse:
		return hllSparseSet(h, index, count)
	}
	return -1
}

// hllMerge raises each register of max (one byte a register) to h's;
// false if h is corrupt.
func hllMerge(mx []byte, h []byte) bool {
	if hllEncoding(h) == hllDense {
		regs := h[hllHdrSize:]
		for i := range hllRegisters {
			mx[i] = max(mx[i], denseGet(regs, i))
		}
		return true
	}
	return sparseRuns(h, func(i, n int, v uint8) {
		for ; n > 0; n-- {
			mx[i] = max(mx[i], v)
			i++
		}
	})
}

// sparseRuns calls run for each run of n registers from i that the sparse
// h sets to v (the zero runs are skipped), as valkey's sparse walks in
// hllSparseToDense and hllMerge; false, and no more runs, if h is
// corrupt: a run past the last register, or not all registers described.
func sparseRuns(h []byte, run func(i, n int, v uint8)) bool {
	i := 0
	for p := hllHdrSize; p < len(h); {
		switch b := h[p]; {
		case sparseIsZero(b):
			i += sparseZeroLen(b)
			p++
		case sparseIsXZero(b):
			i += sparseXZeroLen(h, p)
			p += 2
		default:
			n, v := sparseValLen(b), uint8(sparseValValue(b))
			if n+i > hllRegisters {
				return false
			}
			run(i, n, v)
			i += n
			p++
		}
		if i > hllRegisters { // valkey stops here too, one opcode on
			return false
		}
	}
	return i == hllRegisters
}

func hllSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		zp := z
		z += float64(x * y)
		y += y
		if zp == z {
			return z
		}
	}
}

func hllTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		zp := z
		y *= 0.5
		d := 1 - x
		z -= float64(float64(d*d) * y)
		if zp == z {
			return z / 3
		}
	}
}

// hllEstimate is valkey's hllCount from a histogram of register values.
func hllEstimate(histo *[64]int) uint64 {
	m := float64(hllRegisters)
	z := m * hllTau((m-float64(histo[hllQ+1]))/m)
	for j := hllQ; j >= 1; j-- {
		z += float64(histo[j])
		z *= 0.5
	}
	z += float64(m * hllSigma(float64(histo[0])/m))
	return uint64(math.Round(float64(hllAlphaInf*m) * m / z))
}

// hllCount counts h; invalid when a sparse h does not cover every
// register exactly.
func hllCount(h []byte) (n uint64, invalid bool) {
	var histo [64]int
	if hllEncoding(h) == hllDense {
		regs := h[hllHdrSize:]
		for i := range hllRegisters {
			histo[denseGet(regs, i)]++
		}
		return hllEstimate(&histo), false
	}
	idx := 0
	for p := hllHdrSize; p < len(h); {
		switch b := h[p]; {
		case sparseIsZero(b):
			n := sparseZeroLen(b)
			idx += n
			histo[0] += n
			p++
		case sparseIsXZero(b):
			n := sparseXZeroLen(h, p)
			idx += n
			histo[0] += n
			p += 2
		default:
			n := sparseValLen(b)
			idx += n
			histo[sparseValValue(b)] += n
			p++
		}
	}
	return hllEstimate(&histo), idx != hllRegisters
}

// hllRead returns the HyperLogLog under key for reading (nil if none), or
// replies an error and returns false. The caller holds s's lock.
func hllRead(c *conn, s *shard, key []byte, write bool) (e *entry, ok bool) {
	if write {
		e = s.getForWrite(key)
	} else {
		e = s.get(key)
	}
	if e == nil {
		return nil, true
	}
	if e.kind != kindString {
		c.addError(msgWrongType)
		return nil, false
	}
	if !isHLL(e.str) {
		c.addError(msgNotHLL)
		return nil, false
	}
	return e, true
}

// hllStore stores h, a new array, as the value of the entry e (nil: a new
// key) under key, keeping its expiry.
func hllStore(s *shard, key []byte, e *entry, h []byte) {
	at := int64(0)
	if e != nil {
		at = e.expireAt
	}
	s.storeString(key, e, h, at)
	s.m[string(key)].enc = encRaw
}

// PFADD key [element ...]: 1 if a register changed or the key was made.
func cmdPFAdd(c *conn, args [][]byte) {
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, ok := hllRead(c, s, key, true)
	if !ok {
		return
	}
	updated := 0
	var h []byte
	if e == nil {
		h = newHLL()
		updated++
	} else {
		h = append([]byte(nil), e.str...) // stored strings never change
		e.enc = encRaw                    // valkey unshares the value, changed or not
	}
	for _, ele := range args[2:] {
		switch hllAdd(&h, ele) {
		case 1:
			updated++
		case -1:
			if e != nil && string(h) != string(e.str) { // valkey changed it in place
				hllStore(s, key, e, h)
			}
			c.addError(msgInvalidHLL)
			return
		}
	}
	if updated > 0 {
		hllInvalidateCache(h)
		hllStore(s, key, e, h)
	}
	c.addInt(boolInt(updated > 0))
}

// PFCOUNT key [key ...]: one key's count, cached in its header (a write
// of the value, as valkey's); several keys' merged count.
func cmdPFCount(c *conn, args [][]byte) {
	if len(args) > 2 {
		unlock := c.lockKeys(args[1:])
		defer unlock()
		mx := make([]byte, hllRegisters)
		for _, k := range args[1:] {
			e, ok := hllRead(c, c.db.shard(k), k, false)
			if !ok {
				return
			}
			if e != nil && !hllMerge(mx, e.str) {
				c.addError(msgInvalidHLL)
				return
			}
		}
		var histo [64]int
		for _, r := range mx {
			histo[r]++
		}
		c.addInt(int64(hllEstimate(&histo)))
		return
	}
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, ok := hllRead(c, s, key, false)
	if !ok {
		return
	}
	if e == nil {
		c.addInt(0)
		return
	}
	e.enc = encRaw // valkey unshares the value, even to read its cached count
	if hllValidCache(e.str) {
		c.addInt(int64(hllCachedCard(e.str)))
		return
	}
	n, invalid := hllCount(e.str)
	if invalid {
		c.addError(msgInvalidHLL)
		return
	}
	h := append([]byte(nil), e.str...)
	hllSetCachedCard(h, n)
	hllStore(s, key, e, h)
	c.addInt(int64(n))
}

// PFMERGE destkey [sourcekey ...]: destkey holds the union of itself and
// the sources, dense if any of them is.
func cmdPFMerge(c *conn, args [][]byte) {
	unlock := c.lockKeys(args[1:])
	defer unlock()
	mx := make([]byte, hllRegisters)
	dense := false
	for _, k := range args[1:] {
		e, ok := hllRead(c, c.db.shard(k), k, false)
		if !ok {
			return
		}
		if e == nil {
			continue
		}
		dense = dense || hllEncoding(e.str) == hllDense
		if !hllMerge(mx, e.str) {
			c.addError(msgInvalidHLL)
			return
		}
	}
	key := args[1]
	s := c.db.shard(key)
	e := s.getForWrite(key)
	var h []byte
	if e == nil {
		h = newHLL()
	} else {
		h = append([]byte(nil), e.str...)
	}
	if dense {
		d, ok := hllToDense(h)
		if !ok {
			c.addError(msgInvalidHLL)
			return
		}
		h = d
	}
	for i, v := range mx {
		if v == 0 {
			continue
		}
		switch hllEncoding(h) {
		case hllDense:
			denseSetMax(h[hllHdrSize:], i, v)
		case hllSparse:
			hllSparseSet(&h, i, v)
		}
	}
	hllInvalidateCache(h)
	hllStore(s, key, e, h)
	c.addOK()
}

// PFDEBUG GETREG | DECODE | ENCODING | TODENSE key.
func cmdPFDebug(c *conn, args [][]byte) {
	sub, key := args[1], args[2]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e := s.getForWrite(key)
	if e == nil {
		c.addError("ERR The specified key does not exist")
		return
	}
	if _, ok := hllRead(c, s, key, true); !ok {
		return
	}
	e.enc = encRaw // valkey unshares the value
	h := e.str
	toDense := func() bool {
		d, ok := hllToDense(h)
		if !ok {
			c.addError(msgInvalidHLL)
			return false
		}
		hllStore(s, key, e, d)
		h = d
		return true
	}
	switch {
	case eqFold(sub, "getreg"):
		if hllEncoding(h) == hllSparse && !toDense() {
			return
		}
		c.addArray(hllRegisters)
		for i := range hllRegisters {
			c.addInt(int64(denseGet(h[hllHdrSize:], i)))
		}
	case eqFold(sub, "decode"):
		if hllEncoding(h) != hllSparse {
			c.addError("ERR HLL encoding is not sparse")
			return
		}
		var out []string
		for p := hllHdrSize; p < len(h); {
			switch b := h[p]; {
			case sparseIsZero(b):
				out = append(out, "z:"+strconv.Itoa(sparseZeroLen(b)))
				p++
			case sparseIsXZero(b):
				out = append(out, "Z:"+strconv.Itoa(sparseXZeroLen(h, p)))
				p += 2
			default:
				out = append(out, "v:"+strconv.Itoa(sparseValValue(b))+","+strconv.Itoa(sparseValLen(b)))
				p++
			}
		}
		c.addBulkString(strings.Join(out, " "))
	case eqFold(sub, "encoding"):
		c.addSimple([]string{"dense", "sparse"}[hllEncoding(h)])
	case eqFold(sub, "todense"):
		conv := hllEncoding(h) == hllSparse
		if conv && !toDense() {
			return
		}
		c.addInt(boolInt(conv))
	default:
		c.addError("ERR Unknown PFDEBUG subcommand '" + string(sub) + "'")
	}
}

// PFSELFTEST: valkey's self test of the register macros, the sparse and
// dense encodings against each other, and the estimator's error.
func cmdPFSelfTest(c *conn, _ [][]byte) {
	dense := make([]byte, hllDenseSize)
	regs := dense[hllHdrSize:]
	var want [hllRegisters]uint8
	for range 1000 {
		for i := range hllRegisters {
			r := uint8(rand.IntN(hllRegMax + 1))
			want[i] = r
			denseSet(regs, i, r)
		}
		for i := range hllRegisters {
			if v := denseGet(regs, i); v != want[i] {
				c.addError("TESTFAILED Register " + strconv.Itoa(i) + " should be " + strconv.Itoa(int(want[i])) + " but is " + strconv.Itoa(int(v)))
				return
			}
		}
	}
	clear(regs)
	dense[4] = hllDense
	sparse := newHLL()
	relerr := 1.04 / math.Sqrt(hllRegisters)
	checkpoint := uint64(1)
	seed := rand.Uint64()
	var ele [8]byte
	for j := uint64(1); j <= 10000000; j++ {
		binary.LittleEndian.PutUint64(ele[:], j^seed)
		index, count := hllPatLen(ele[:])
		denseSetMax(regs, index, count)
		hllAdd(&sparse, ele[:])
		if j != checkpoint {
			continue
		}
		if j < hllSparseMax/2 && hllEncoding(sparse) != hllSparse {
			c.addError("TESTFAILED sparse encoding not used")
			return
		}
		nd, _ := hllCount(dense)
		if ns, _ := hllCount(sparse); nd != ns {
			c.addError("TESTFAILED dense/sparse disagree")
			return
		}
		abserr := int64(checkpoint) - int64(nd)
		maxerr := uint64(math.Ceil(relerr * 6 * float64(checkpoint)))
		if j == 10 {
			maxerr = 1
		}
		if abserr < 0 {
			abserr = -abserr
		}
		if abserr > int64(maxerr) {
			c.addError("TESTFAILED Too big error. card:" + strconv.FormatUint(checkpoint, 10) + " abserr:" + strconv.FormatInt(abserr, 10))
			return
		}
		checkpoint *= 10
	}
	c.addOK()
}
