package server

import (
	"math/big"
	"runtime"
	"strings"
)

// INCRBYFLOAT and HINCRBYFLOAT add in C's long double and print the sum
// with "%.17Lf", trailing zeros cut (valkey's ld2string, LD_STR_HUMAN).
// So that their replies are valkey's to the last digit, the sum is a
// big.Float of long double's precision: x87's 64-bit mantissa on amd64
// and 386, IEEE quad's 113 bits on the others valkey is built for
// (arm64's long double), each rounded to nearest as the hardware does.
// Both have a 15-bit exponent.

var ldPrec = func() uint {
	if runtime.GOARCH == "amd64" || runtime.GOARCH == "386" {
		return 64
	}
	return 113
}()

// Long double's largest exponent (big.Float's MantExp: 0.5 <= mant < 1)
// and the smallest of a subnormal.
const (
	ldMaxExp = 16384
	ldMinExp = -16445 + 1
)

// ldValue is a long double: a finite big.Float, or an infinity.
type ldValue struct {
	f   *big.Float
	inf int // +1, -1: an infinity
}

// parseLongDouble parses b as valkey's string2ld: strtold over the whole
// of b, no leading white space, nan refused, and so is a number too large
// to hold or one that rounds to 0 though it is not.
func parseLongDouble(b []byte) (ldValue, bool) {
	s := string(b)
	if s == "" || strings.ContainsAny(s[:1], " \t\n\v\f\r") || strings.IndexByte(s, '_') >= 0 {
		return ldValue{}, false
	}
	unsigned, sign := s, 1
	if s[0] == '-' || s[0] == '+' {
		unsigned = s[1:]
		if s[0] == '-' {
			sign = -1
		}
	}
	if u := strings.ToLower(unsigned); u == "inf" || u == "infinity" {
		return ldValue{inf: sign}, true
	}
	base := 10
	if len(unsigned) > 1 && unsigned[0] == '0' && unsigned[1]|0x20 == 'x' {
		base = 0 // hexadecimal, with its 0x prefix
	}
	f, _, err := big.ParseFloat(s, base, ldPrec, big.ToNearestEven)
	if err != nil {
		return ldValue{}, false
	}
	if exp := f.MantExp(nil); f.Sign() != 0 && (exp > ldMaxExp || exp < ldMinExp) {
		return ldValue{}, false // strtold's ERANGE: infinite, or 0
	}
	return ldValue{f: f}, true
}

// ldAdd returns a + b, and false when the sum is NaN or infinite.
func ldAdd(a, b ldValue) (ldValue, bool) {
	if a.inf != 0 || b.inf != 0 {
		return ldValue{}, false
	}
	sum := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven).Add(a.f, b.f)
	if sum.Sign() != 0 && sum.MantExp(nil) > ldMaxExp {
		return ldValue{}, false
	}
	return ldValue{f: sum}, true
}

// ldZero is 0 as a long double.
func ldZero() ldValue { return ldValue{f: new(big.Float).SetPrec(ldPrec)} }

// ldFormat is a finite long double as "%.17Lf" prints it, trailing zeros
// and point removed, "-0" written "0" (ld2string's LD_STR_HUMAN).
func ldFormat(v ldValue) []byte {
	s := v.f.Text('f', 17)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return []byte(s)
}

// INCRBYFLOAT key increment: the stored value and the increment read as
// long doubles, the sum stored as ldFormat prints it, the expiry kept.
func cmdIncrByFloat(c *conn, args [][]byte) {
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e := s.getForWrite(key)
	if e != nil && e.kind != kindString {
		c.addError(msgWrongType)
		return
	}
	cur, ok := ldZero(), true
	if e != nil {
		cur, ok = parseLongDouble(e.str)
	}
	incr, ok2 := parseLongDouble(args[2])
	if !ok || !ok2 {
		c.addError(msgNotFloat)
		return
	}
	sum, ok := ldAdd(cur, incr)
	if !ok {
		c.addError("ERR increment would produce NaN or Infinity")
		return
	}
	v := ldFormat(sum)
	var expireAt int64
	if e != nil {
		expireAt = e.expireAt
	}
	s.storeString(key, e, v, expireAt)
	s.m[string(key)].enc = encNoInt
	c.addBulk(v)
}
