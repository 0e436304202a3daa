package server

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The GEO commands, as valkey 8.0's geo.c, geohash.c and geohash_helper.c:
// a place is a member of a sorted set whose score is its 52-bit geohash
// (longitude and latitude interleaved, 26 bits each). A search looks in
// the geohash box around its centre and the eight around that, at a step
// estimated from the radius, and keeps the points inside the shape; the
// same arithmetic as valkey's gives the same scores, distances and order.
// Go's sin, cos and asin are not always correctly rounded as the C
// library's are: a distance may differ from valkey's in its last bit or
// two, which the four decimals of WITHDIST and GEODIST do not show, but
// GEOSEARCHSTORE's STOREDIST scores, stored whole, may.

const (
	geoStepMax  = 26
	geoLatMin   = -85.05112878
	geoLatMax   = 85.05112878
	geoLongMin  = -180
	geoLongMax  = 180
	earthRadius = 6372797.560856
	mercatorMax = 20037726.37
	degToRad    = math.Pi / 180.0
)

type geoHash struct {
	bits uint64
	step uint8
}

func (h geoHash) zero() bool { return h.bits == 0 && h.step == 0 }

type geoRange struct{ min, max float64 }

type geoArea struct {
	hash      geoHash
	long, lat geoRange
}

func interleave64(xlo, ylo uint32) uint64 {
	b := [...]uint64{0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF}
	s := [...]uint{1, 2, 4, 8, 16}
	x, y := uint64(xlo), uint64(ylo)
	for i := 4; i >= 0; i-- {
		x = (x | x<<s[i]) & b[i]
		y = (y | y<<s[i]) & b[i]
	}
	return x | y<<1
}

func deinterleave64(v uint64) uint64 {
	b := [...]uint64{0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x00FF00FF00FF00FF, 0x0000FFFF0000FFFF, 0x00000000FFFFFFFF}
	s := [...]uint{0, 1, 2, 4, 8, 16}
	x, y := v, v>>1
	for i := range 6 {
		x = (x | x>>s[i]) & b[i]
		y = (y | y>>s[i]) & b[i]
	}
	return x | y<<32
}

var (
	geoLongRange = geoRange{geoLongMin, geoLongMax}
	geoLatRange  = geoRange{geoLatMin, geoLatMax}
)

// geoEncode is geohashEncode; false out of range.
func geoEncode(lr, ar geoRange, long, lat float64, step uint8) (geoHash, bool) {
	if step > 32 || step == 0 || long > geoLongMax || long < geoLongMin || lat > geoLatMax || lat < geoLatMin ||
		lat < ar.min || lat > ar.max || long < lr.min || long > lr.max {
		return geoHash{}, false
	}
	latOff := (lat - ar.min) / (ar.max - ar.min)
	longOff := (long - lr.min) / (lr.max - lr.min)
	latOff *= float64(uint64(1) << step)
	longOff *= float64(uint64(1) << step)
	return geoHash{bits: interleave64(uint32(latOff), uint32(longOff)), step: step}, true
}

// geoDecode is geohashDecode.
func geoDecode(lr, ar geoRange, h geoHash) geoArea {
	sep := deinterleave64(h.bits)
	latScale, longScale := ar.max-ar.min, lr.max-lr.min
	ilat, ilong := uint32(sep), uint32(sep>>32)
	div := float64(uint64(1) << h.step)
	return geoArea{
		hash: h,
		lat: geoRange{ar.min + float64(float64(ilat)*1.0/div)*latScale,
			ar.min + float64((float64(ilat)+1)*1.0/div)*latScale},
		long: geoRange{lr.min + float64(float64(ilong)*1.0/div)*longScale,
			lr.min + float64((float64(ilong)+1)*1.0/div)*longScale},
	}
}

// geoDecodeScore is decodeGeohash: a score's centre, clamped.
func geoDecodeScore(score float64) (long, lat float64) {
	a := geoDecode(geoLongRange, geoLatRange, geoHash{bits: uint64(score), step: geoStepMax})
	long = min(max((a.long.min+a.long.max)/2, geoLongMin), geoLongMax)
	lat = min(max((a.lat.min+a.lat.max)/2, geoLatMin), geoLatMax)
	return long, lat
}

func geoMoveX(h *geoHash, d int) {
	if d == 0 {
		return
	}
	x := h.bits & 0xaaaaaaaaaaaaaaaa
	y := h.bits & 0x5555555555555555
	zz := uint64(0x5555555555555555) >> (64 - uint(h.step)*2)
	if d > 0 {
		x += zz + 1
	} else {
		x |= zz
		x -= zz + 1
	}
	x &= 0xaaaaaaaaaaaaaaaa >> (64 - uint(h.step)*2)
	h.bits = x | y
}

func geoMoveY(h *geoHash, d int) {
	if d == 0 {
		return
	}
	x := h.bits & 0xaaaaaaaaaaaaaaaa
	y := h.bits & 0x5555555555555555
	zz := uint64(0xaaaaaaaaaaaaaaaa) >> (64 - uint(h.step)*2)
	if d > 0 {
		y += zz + 1
	} else {
		y |= zz
		y -= zz + 1
	}
	y &= 0x5555555555555555 >> (64 - uint(h.step)*2)
	h.bits = x | y
}

// geoNeighbors are the boxes around h, in the order valkey searches them
// after h itself: north, south, east, west, north-east, north-west,
// south-east, south-west.
func geoNeighbors(h geoHash) [8]geoHash {
	moves := [8][2]int{{0, 1}, {0, -1}, {1, 0}, {-1, 0}, {1, 1}, {-1, 1}, {1, -1}, {-1, -1}}
	var n [8]geoHash
	for i, m := range moves {
		n[i] = h
		geoMoveX(&n[i], m[0])
		geoMoveY(&n[i], m[1])
	}
	return n
}

const (
	nNorth = iota
	nSouth
	nEast
	nWest
	nNorthEast
	nNorthWest
	nSouthEast
	nSouthWest
)

func geoEstimateSteps(meters, lat float64) uint8 {
	if meters == 0 {
		return 26
	}
	step := 1
	for meters < mercatorMax {
		meters *= 2
		step++
	}
	step -= 2
	if lat > 66 || lat < -66 {
		step--
		if lat > 80 || lat < -80 {
			step--
		}
	}
	return uint8(min(max(step, 1), 26))
}

// geoShape is a search: around (long, lat), a circle of radius or a box
// of width and height, in units of conversion metres.
type geoShape struct {
	box                   bool
	long, lat             float64
	radius, width, height float64
	conversion            float64
}

func degRad(a float64) float64 { return a * degToRad }
func radDeg(a float64) float64 { return a / degToRad }

func (s *geoShape) boundingBox() [4]float64 {
	height, width := s.radius, s.radius
	if s.box {
		height, width = s.height/2, s.width/2
	}
	height *= s.conversion
	width *= s.conversion
	latDelta := radDeg(height / earthRadius)
	top := radDeg(width / earthRadius / math.Cos(degRad(s.lat+latDelta)))
	bottom := radDeg(width / earthRadius / math.Cos(degRad(s.lat-latDelta)))
	var b [4]float64
	if s.lat < 0 {
		b[0], b[2] = s.long-bottom, s.long+bottom
	} else {
		b[0], b[2] = s.long-top, s.long+top
	}
	b[1], b[3] = s.lat-latDelta, s.lat+latDelta
	return b
}

// areas is geohashCalculateAreasByShapeWGS84: the centre box and its
// neighbours, those wholly outside the bounding box zeroed.
func (s *geoShape) areas() [9]geoHash {
	b := s.boundingBox()
	minLon, minLat, maxLon, maxLat := b[0], b[1], b[2], b[3]
	meters := s.radius
	if s.box {
		meters = math.Sqrt((s.width/2)*(s.width/2) + (s.height/2)*(s.height/2))
	}
	meters *= s.conversion
	steps := geoEstimateSteps(meters, s.lat)
	hash, _ := geoEncode(geoLongRange, geoLatRange, s.long, s.lat, steps)
	n := geoNeighbors(hash)
	area := geoDecode(geoLongRange, geoLatRange, hash)
	north := geoDecode(geoLongRange, geoLatRange, n[nNorth])
	south := geoDecode(geoLongRange, geoLatRange, n[nSouth])
	east := geoDecode(geoLongRange, geoLatRange, n[nEast])
	west := geoDecode(geoLongRange, geoLatRange, n[nWest])
	decrease := north.lat.max < maxLat || south.lat.min > minLat || east.long.max < maxLon || west.long.min > minLon
	if steps > 1 && decrease {
		steps--
		hash, _ = geoEncode(geoLongRange, geoLatRange, s.long, s.lat, steps)
		n = geoNeighbors(hash)
		area = geoDecode(geoLongRange, geoLatRange, hash)
	}
	if steps >= 2 {
		zero := func(idx ...int) {
			for _, i := range idx {
				n[i] = geoHash{}
			}
		}
		if area.lat.min < minLat {
			zero(nSouth, nSouthWest, nSouthEast)
		}
		if area.lat.max > maxLat {
			zero(nNorth, nNorthEast, nNorthWest)
		}
		if area.long.min < minLon {
			zero(nWest, nSouthWest, nNorthWest)
		}
		if area.long.max > maxLon {
			zero(nEast, nSouthEast, nNorthEast)
		}
	}
	var all [9]geoHash
	all[0] = hash
	copy(all[1:], n[:])
	return all
}

func geoLatDistance(lat1, lat2 float64) float64 {
	return earthRadius * math.Abs(degRad(lat2)-degRad(lat1))
}

// geoDistance is geohashGetDistance (haversine).
func geoDistance(lon1, lat1, lon2, lat2 float64) float64 {
	lon1r, lon2r := degRad(lon1), degRad(lon2)
	v := math.Sin((lon2r - lon1r) / 2)
	if v == 0 {
		return geoLatDistance(lat1, lat2)
	}
	lat1r, lat2r := degRad(lat1), degRad(lat2)
	u := math.Sin((lat2r - lat1r) / 2)
	a := float64(u*u) + float64(float64(float64(math.Cos(lat1r)*math.Cos(lat2r))*v)*v)
	return 2.0 * earthRadius * math.Asin(math.Sqrt(a))
}

// within reports whether the point of score is in s, with its distance
// from s's centre in metres.
func (s *geoShape) within(score float64) (long, lat, dist float64, ok bool) {
	long, lat = geoDecodeScore(score)
	if !s.box {
		dist = geoDistance(s.long, s.lat, long, lat)
		return long, lat, dist, dist <= s.radius*s.conversion
	}
	if geoLatDistance(lat, s.lat) > s.height*s.conversion/2 {
		return long, lat, 0, false
	}
	if geoDistance(long, lat, s.long, lat) > s.width*s.conversion/2 {
		return long, lat, 0, false
	}
	return long, lat, geoDistance(s.long, s.lat, long, lat), true
}

type geoPoint struct {
	long, lat, dist, score float64
	member                 string
}

// geoMembers is membersOfAllNeighbors: the points of z in s, box by box,
// up to limit of them (0: all).
func geoMembers(z *zset, s *geoShape, limit int) []geoPoint {
	var out []geoPoint
	boxes := s.areas()
	last := 0
	for i, h := range boxes {
		if h.zero() {
			continue
		}
		if last != 0 && h == boxes[last] {
			continue
		}
		if len(out) > 0 && limit > 0 && len(out) >= limit {
			break
		}
		lo := float64(h.bits << (52 - uint(h.step)*2))
		h.bits++
		hi := float64(h.bits << (52 - uint(h.step)*2))
		rank := z.sl.count(func(x *znode) bool { return x.score < lo })
		if rank < z.len() {
			for x := z.sl.byRank(rank + 1); x != nil && x.score < hi; x = x.next[0].to {
				if long, lat, dist, ok := s.within(x.score); ok {
					out = append(out, geoPoint{long, lat, dist, x.score, x.member})
				}
				if len(out) > 0 && limit > 0 && len(out) >= limit {
					break
				}
			}
		}
		last = i
	}
	return out
}

// geoFloat parses a double as valkey's getDoubleFromObjectOrReply.
func geoFloat(c *conn, b []byte, msg string) (float64, bool) {
	f, ok := parseScore(b)
	if !ok {
		c.addError(msg)
	}
	return f, ok
}

func fmtC(f float64) string { // C's %f
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return fmt.Sprintf("%f", f)
}

// geoLongLat parses a longitude and a latitude.
func geoLongLat(c *conn, args [][]byte) (long, lat float64, ok bool) {
	if long, ok = geoFloat(c, args[0], msgNotFloat); !ok {
		return
	}
	if lat, ok = geoFloat(c, args[1], msgNotFloat); !ok {
		return
	}
	if long < geoLongMin || long > geoLongMax || lat < geoLatMin || lat > geoLatMax {
		c.addError("ERR invalid longitude,latitude pair " + fmtC(long) + "," + fmtC(lat))
		return 0, 0, false
	}
	return long, lat, true
}

// geoUnit is the metres in a unit, or -1 after an error reply.
func geoUnit(c *conn, b []byte) float64 {
	switch {
	case eqFold(b, "m"):
		return 1
	case eqFold(b, "km"):
		return 1000
	case eqFold(b, "ft"):
		return 0.3048
	case eqFold(b, "mi"):
		return 1609.34
	}
	c.addError("ERR unsupported unit provided. please use M, KM, FT, MI")
	return -1
}

// geoRadius parses a radius and its unit into s.
func geoRadius(c *conn, args [][]byte, s *geoShape) bool {
	r, ok := geoFloat(c, args[0], "ERR need numeric radius")
	if !ok {
		return false
	}
	if r < 0 {
		c.addError("ERR radius cannot be negative")
		return false
	}
	s.radius = r
	if s.conversion = geoUnit(c, args[1]); s.conversion < 0 {
		return false
	}
	return true
}

func geoMemberScore(e *entry, member []byte) (float64, bool) {
	score, ok := e.obj.(*zset).scores[string(member)]
	return score, ok
}

// geoMemberPos returns the longitude and latitude of member in e (nil for
// no key), or false when it is not there (GEOHASH, GEOPOS).
func geoMemberPos(e *entry, member []byte) (long, lat float64, ok bool) {
	if e == nil {
		return 0, 0, false
	}
	score, ok := geoMemberScore(e, member)
	if !ok {
		return 0, 0, false
	}
	long, lat = geoDecodeScore(score)
	return long, lat, true
}

// GEOADD key [NX | XX] [CH] longitude latitude member [...]: ZADD of the
// members' geohashes.
func cmdGeoAdd(c *conn, args [][]byte) {
	i := 2
	var nx, xx bool
	for ; i < len(args); i++ {
		switch a := args[i]; {
		case eqFold(a, "nx"):
			nx = true
		case eqFold(a, "xx"):
			xx = true
		case eqFold(a, "ch"):
		default:
			goto parsed
		}
	}
parsed:
	if (len(args)-i)%3 != 0 || nx && xx {
		c.addError(msgSyntax)
		return
	}
	zargs := append([][]byte{[]byte("zadd")}, args[1:i]...)
	for ; i < len(args); i += 3 {
		long, lat, ok := geoLongLat(c, args[i:])
		if !ok {
			return
		}
		h, _ := geoEncode(geoLongRange, geoLatRange, long, lat, geoStepMax)
		zargs = append(zargs, strconv.AppendUint(nil, h.bits<<(52-geoStepMax*2), 10), args[i+2])
	}
	cmdZAdd(c, zargs)
}

// readZSet returns the sorted set under key (nil if none) with s's read
// lock held, or replies WRONGTYPE and returns false (the lock released).
func readZSet(c *conn, s *shard, key []byte) (*entry, bool) {
	s.rlock(c)
	e := s.get(key)
	if e != nil && e.kind != kindZSet {
		s.runlock(c)
		c.addError(msgWrongType)
		return nil, false
	}
	return e, true
}

// addHuman is valkey's addReplyHumanLongDouble of a double.
func (c *conn) addHuman(f float64) {
	s := strconv.FormatFloat(f, 'f', 17, 64)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	if c.proto == 3 {
		c.out = append(c.out, ',')
		c.out = append(c.out, s...)
		c.out = append(c.out, '\r', '\n')
	} else {
		c.addBulkString(s)
	}
}

// addDistance is addReplyDoubleDistance: four decimals, rounded to even.
func (c *conn) addDistance(d float64) {
	if d == 0 {
		c.addBulkString("0.0000")
		return
	}
	v := math.RoundToEven(d * 10000)
	neg := v < 0
	u := uint64(math.Abs(v))
	s := strconv.FormatUint(u/10000, 10) + "." + fmt.Sprintf("%04d", u%10000)
	if neg {
		s = "-" + s
	}
	c.addBulkString(s)
}

// GEODIST key member1 member2 [unit]
func cmdGeoDist(c *conn, args [][]byte) {
	conv := 1.0
	if len(args) == 5 {
		if conv = geoUnit(c, args[4]); conv < 0 {
			return
		}
	} else if len(args) > 5 {
		c.addError(msgSyntax)
		return
	}
	s := c.db.shard(args[1])
	e, ok := readZSet(c, s, args[1])
	if !ok {
		return
	}
	defer s.runlock(c)
	if e == nil {
		c.addNull()
		return
	}
	s1, ok1 := geoMemberScore(e, args[2])
	s2, ok2 := geoMemberScore(e, args[3])
	if !ok1 || !ok2 {
		c.addNull()
		return
	}
	lo1, la1 := geoDecodeScore(s1)
	lo2, la2 := geoDecodeScore(s2)
	c.addDistance(geoDistance(lo1, la1, lo2, la2) / conv)
}

// GEOHASH key [member ...]: the members' standard 11-character geohashes.
func cmdGeoHash(c *conn, args [][]byte) {
	const alphabet = "0123456789bcdefghjkmnpqrstuvwxyz"
	s := c.db.shard(args[1])
	e, ok := readZSet(c, s, args[1])
	if !ok {
		return
	}
	defer s.runlock(c)
	c.addArray(len(args) - 2)
	for _, m := range args[2:] {
		long, lat, ok := geoMemberPos(e, m)
		if !ok {
			c.addNull()
			continue
		}
		h, _ := geoEncode(geoRange{-180, 180}, geoRange{-90, 90}, long, lat, 26)
		var buf [11]byte
		for i := range 11 {
			idx := 0
			if i < 10 {
				idx = int(h.bits>>(52-(i+1)*5)) & 0x1f
			}
			buf[i] = alphabet[idx]
		}
		c.addBulk(buf[:])
	}
}

// GEOPOS key [member ...]
func cmdGeoPos(c *conn, args [][]byte) {
	s := c.db.shard(args[1])
	e, ok := readZSet(c, s, args[1])
	if !ok {
		return
	}
	defer s.runlock(c)
	c.addArray(len(args) - 2)
	for _, m := range args[2:] {
		long, lat, ok := geoMemberPos(e, m)
		if !ok {
			c.addNullArray()
			continue
		}
		c.addArray(2)
		c.addHuman(long)
		c.addHuman(lat)
	}
}

// The forms of georadiusGeneric.
const (
	geoCoords = 1 << iota
	geoMember
	geoNoStore
	geoSearch
	geoSearchStore
)

func cmdGeoRadius(c *conn, args [][]byte)         { geoRadiusGeneric(c, args, 1, geoCoords) }
func cmdGeoRadiusByMember(c *conn, args [][]byte) { geoRadiusGeneric(c, args, 1, geoMember) }
func cmdGeoRadiusRO(c *conn, args [][]byte)       { geoRadiusGeneric(c, args, 1, geoCoords|geoNoStore) }
func cmdGeoRadiusByMemberRO(c *conn, args [][]byte) {
	geoRadiusGeneric(c, args, 1, geoMember|geoNoStore)
}
func cmdGeoSearch(c *conn, args [][]byte) { geoRadiusGeneric(c, args, 1, geoSearch) }
func cmdGeoSearchStore(c *conn, args [][]byte) {
	geoRadiusGeneric(c, args, 2, geoSearch|geoSearchStore)
}

// geoRadiusGeneric is valkey's georadiusGeneric.
func geoRadiusGeneric(c *conn, args [][]byte, srcIdx int, flags int) {
	key := args[srcIdx]
	var storeKey []byte
	if flags&geoSearchStore != 0 {
		storeKey = args[1]
	}
	if flags&(geoNoStore|geoSearch) == 0 {
		// GEORADIUS's STORE or STOREDIST key, the last given, found as
		// the options below will be, to lock it first.
		base := 6
		if flags&geoMember != 0 {
			base = 5
		}
		for i := base; i < len(args); i++ {
			switch a := args[i]; {
			case eqFold(a, "count") && i+1 < len(args):
				i++
			case (eqFold(a, "store") || eqFold(a, "storedist")) && i+1 < len(args):
				storeKey = args[i+1]
				i++
			}
		}
		if storeKey != nil && c.tx.running && !c.tx.held[c.db.shard(storeKey).idx] {
			// Only with several STORE options: EXEC locked the first's key.
			c.addError("ERR the key of the last STORE or STOREDIST option must be the first one's in a transaction")
			return
		}
	}
	var src, dst *shard
	if storeKey != nil {
		var unlock func()
		dst, src, unlock = lockPair(c, storeKey, key)
		defer unlock()
	} else {
		src = c.db.shard(key)
		src.rlock(c)
		defer src.runlock(c)
	}
	e := src.get(key)
	if e != nil && e.kind != kindZSet {
		c.addError(msgWrongType)
		return
	}
	var z *zset
	if e != nil {
		z = e.obj.(*zset)
	}
	var shape geoShape
	var base int
	switch {
	case flags&geoCoords != 0:
		base = 6
		var ok bool
		if shape.long, shape.lat, ok = geoLongLat(c, args[2:]); !ok {
			return
		}
		if !geoRadius(c, args[4:], &shape) {
			return
		}
	case flags&geoMember != 0 && z == nil:
		base = 5
	case flags&geoMember != 0:
		base = 5
		score, ok := z.scores[string(args[2])]
		if !ok {
			c.addError("ERR could not decode requested zset member")
			return
		}
		shape.long, shape.lat = geoDecodeScore(score)
		if !geoRadius(c, args[3:], &shape) {
			return
		}
	default:
		base = 2
		if flags&geoSearchStore != 0 {
			base = 3
		}
	}
	var withDist, withHash, withCoords, fromMember, fromLoc, byRadius, byBox, any, storeDist bool
	sortDir := 0 // 1 ascending, 2 descending
	var count int64
	rest := args[base:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		more := len(rest) - 1 - i
		switch {
		case eqFold(a, "withdist"):
			withDist = true
		case eqFold(a, "withhash"):
			withHash = true
		case eqFold(a, "withcoord"):
			withCoords = true
		case eqFold(a, "any"):
			any = true
		case eqFold(a, "asc"):
			sortDir = 1
		case eqFold(a, "desc"):
			sortDir = 2
		case eqFold(a, "count") && more >= 1:
			n, ok := parseInt(rest[i+1])
			if !ok {
				c.addError(msgNotInteger)
				return
			}
			if n <= 0 {
				c.addError("ERR COUNT must be > 0")
				return
			}
			count = n
			i++
		case (eqFold(a, "store") || eqFold(a, "storedist")) && more >= 1 && flags&(geoNoStore|geoSearch) == 0:
			storeDist = eqFold(a, "storedist")
			i++
		case eqFold(a, "storedist") && flags&geoSearchStore != 0:
			storeDist = true
		case eqFold(a, "frommember") && more >= 1 && flags&geoSearch != 0 && !fromLoc:
			if z != nil {
				score, ok := z.scores[string(rest[i+1])]
				if !ok {
					c.addError("ERR could not decode requested zset member")
					return
				}
				shape.long, shape.lat = geoDecodeScore(score)
			}
			fromMember = true
			i++
		case eqFold(a, "fromlonlat") && more >= 2 && flags&geoSearch != 0 && !fromMember:
			var ok bool
			if shape.long, shape.lat, ok = geoLongLat(c, rest[i+1:]); !ok {
				return
			}
			fromLoc = true
			i += 2
		case eqFold(a, "byradius") && more >= 2 && flags&geoSearch != 0 && !byBox:
			if !geoRadius(c, rest[i+1:], &shape) {
				return
			}
			shape.box = false
			byRadius = true
			i += 2
		case eqFold(a, "bybox") && more >= 3 && flags&geoSearch != 0 && !byRadius:
			w, ok := geoFloat(c, rest[i+1], "ERR need numeric width")
			if !ok {
				return
			}
			h, ok := geoFloat(c, rest[i+2], "ERR need numeric height")
			if !ok {
				return
			}
			if h < 0 || w < 0 {
				c.addError("ERR height or width cannot be negative")
				return
			}
			shape.width, shape.height = w, h
			if shape.conversion = geoUnit(c, rest[i+3]); shape.conversion < 0 {
				return
			}
			shape.box = true
			byBox = true
			i += 3
		default:
			c.addError(msgSyntax)
			return
		}
	}
	switch name := string(args[0]); {
	case storeKey != nil && (withDist || withHash || withCoords):
		if flags&geoSearchStore != 0 {
			c.addError("ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
		} else {
			c.addError("ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options")
		}
		return
	case flags&geoSearch != 0 && !fromMember && !fromLoc:
		c.addError("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for " + name)
		return
	case flags&geoSearch != 0 && !byRadius && !byBox:
		c.addError("ERR exactly one of BYRADIUS and BYBOX can be specified for " + name)
		return
	case any && count == 0:
		c.addError("ERR the ANY argument requires COUNT argument")
		return
	}
	if z == nil {
		if storeKey != nil {
			dst.remove(storeKey)
			c.addInt(0)
		} else {
			c.addArray(0)
		}
		return
	}
	if count != 0 && sortDir == 0 && !any {
		sortDir = 1
	}
	limit := 0
	if any {
		limit = int(min(count, math.MaxInt32))
	}
	points := geoMembers(z, &shape, limit)
	if len(points) == 0 && storeKey == nil {
		c.addArray(0)
		return
	}
	n := len(points)
	if count != 0 && int64(n) > count {
		n = int(count)
	}
	switch sortDir {
	case 1:
		slices.SortFunc(points, func(a, b geoPoint) int { return cmpFloat(a.dist, b.dist) })
	case 2:
		slices.SortFunc(points, func(a, b geoPoint) int { return cmpFloat(b.dist, a.dist) })
	}
	points = points[:n]
	if storeKey == nil {
		opts := int(boolInt(withDist) + boolInt(withHash) + boolInt(withCoords))
		c.addArray(n)
		for _, p := range points {
			if opts > 0 {
				c.addArray(opts + 1)
			}
			c.addBulkString(p.member)
			if withDist {
				c.addDistance(p.dist / shape.conversion)
			}
			if withHash {
				c.addInt(int64(p.score))
			}
			if withCoords {
				c.addArray(2)
				c.addHuman(p.long)
				c.addHuman(p.lat)
			}
		}
		return
	}
	old := dst.getForWrite(storeKey)
	if n == 0 {
		if old != nil {
			dst.drop(storeKey, old)
		}
		c.addInt(0)
		return
	}
	out := newZSet()
	longest := 0
	for _, p := range points {
		longest = max(longest, len(p.member))
	}
	out.willAdd(n, longest)
	for _, p := range points {
		score := p.score
		if storeDist {
			score = p.dist / shape.conversion
		}
		out.set(p.member, score)
	}
	if old != nil {
		dst.drop(storeKey, old)
	}
	dst.add(storeKey, &entry{kind: kindZSet, obj: out})
	c.addInt(int64(n))
}

func cmpFloat(a, b float64) int {
	switch {
	case a > b:
		return 1
	case a < b:
		return -1
	}
	return 0
}
