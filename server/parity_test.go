package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// TestRepliesMatchValkey sends the same commands to this server and to a
// real valkey-server and compares the replies byte for byte: the cases
// where the two are easiest to tell apart (how a double is written, the
// error texts clients match on), in RESP2 and RESP3.
func TestRepliesMatchValkey(t *testing.T) {
	_, ours := startServer(t, nil)
	theirs := testutil.ValkeyServer(t)
	scores := []string{"1000000", "123456789", "1234567.5", "0.00001", "1e-7", "1.5e-10", "0.1", "-3.25",
		"1e21", "1.5e20", "12345678901234567890", "4611686018427387904", "4611686018427387905.5",
		"-0", "1e300", "-1.7976931348623157e308", "5e-324", "123.456e-5", "inf", "-inf", "0.000001", "1234567.000001"}
	var cmds [][]string
	for i, s := range scores {
		m := string(rune('a' + i))
		cmds = append(cmds, []string{"zadd", "z" + m, s, m}, []string{"zscore", "z" + m, m},
			[]string{"zrange", "z" + m, "0", "-1", "withscores"})
	}
	cmds = append(cmds,
		[]string{"zadd", "big", "1e400", "m"},
		[]string{"zadd", "big", "nan", "m"},
		[]string{"zadd", "big", "1e-400", "m"},
		[]string{"zadd", "big", "0x10", "m"},
		[]string{"zadd", "big", "-0x1.8p1", "m"},
		[]string{"zadd", "big", "0x", "m"},
		[]string{"zadd", "big", "1e-320", "m"},
		[]string{"zadd", "big", "0e-400", "m"},
		[]string{"zadd", "big", "0.0", "m"},
		[]string{"zscore", "big", "m"},
		[]string{"zadd", "big", "1e", "m"},
		[]string{"zadd", "big", ".5", "m"},
		[]string{"zadd", "big", "5.", "m"},
		[]string{"zadd", "big", "+inf", "m"},
		[]string{"zadd", "big", " 1", "m"},
		[]string{"zadd", "big", "1_000", "m"},
		[]string{"zadd", "big", "Infinity", "m"},
		[]string{"sadd", "s", "x"},
		[]string{"spop", "s", "1", "2"},
		[]string{"zpopmin", "za", "1", "2"},
		[]string{"rpush", "l", "x"},
		[]string{"lpop", "l", "1", "2"},
		[]string{"rpop", "l", "1", "2"},
		// Issue 26's cases: SET's options read before their values, an
		// expiry in the past, XADD's MAXLEN, the last possible ID.
		[]string{"set", "k", "v", "px", "100000", "px", "99999999"},
		[]string{"set", "k", "", "ex", "9223372036854775807", "ex"},
		[]string{"set", "k", "v", "exat", "1"},
		[]string{"exists", "k"},
		[]string{"set", "k", "v", "keepttl", "px", "1"},
		[]string{"set", "k", "v", "nx", "xx"},
		[]string{"xadd", "x", "maxlen", "~", "7-1", "f", "v"},
		[]string{"xadd", "x", "maxlen", "~", "9", "f", "v"},
		[]string{"xadd", "x", "maxlen", "-1", "1-1", "f", "v"},
		[]string{"xadd", "x", "18446744073709551615-18446744073709551614", "f", "v"},
		[]string{"xadd", "x", "18446744073709551615-*", "f", "v"},
		[]string{"xadd", "x", "*", "f", "v"},
		[]string{"xadd", "x", "18446744073709551615-*", "f", "v"},
		[]string{"xlen", "x"},
		[]string{"xadd", "y", "5-*", "f", "v"},
		[]string{"xadd", "y", "5-*", "f", "v"},
		[]string{"xadd", "y", "+5-18446744073709551615", "f", "v"},
		[]string{"xadd", "y", "5-*", "f", "v"},
		[]string{"xadd", "y", "minid", "6", "limit", "0", "7", "f", "v"},
		[]string{"xadd", "y", "minid", "~", "6", "limit", "0", "7", "f", "v"},
		[]string{"zadd", "zi", "incr", "-0", "m"},
		[]string{"zadd", "zi", "incr", "inf", "m"},
		[]string{"zadd", "zi", "incr", "-inf", "m"},
		[]string{"zadd", "zi", "gt", "ch", "1", "m", "2", "n"},
		[]string{"zrange", "zi", "0", "-1", "withscores"},
	)
	// Sets valkey holds as skip lists (more than 128 members, or a member
	// longer than 64 bytes): -0 stays, a negative LIMIT offset counts from
	// the end.
	skip, lex := []string{"zadd", "zskip"}, []string{"zadd", "zlexbig"}
	for i := range 150 {
		skip = append(skip, strconv.Itoa(i%40-10), "b"+strconv.Itoa(i))
		lex = append(lex, "0", fmt.Sprintf("m%03d", i))
	}
	cmds = append(cmds, skip, lex,
		[]string{"zadd", "zskip", "-0", "z"},
		[]string{"zscore", "zskip", "z"},
		[]string{"zadd", "zlong", "-0", "a"},
		[]string{"zadd", "zlong", "-0", strings.Repeat("x", 65)},
		[]string{"zadd", "zlong", "-0", "b"},
		[]string{"zrange", "zlong", "0", "-1", "withscores"},
		[]string{"zrange", "zskip", "0", "5", "byscore", "limit", "-3", "5"},
		[]string{"zrange", "zskip", "5", "0", "byscore", "rev", "limit", "-2", "100"},
		[]string{"zrange", "zskip", "-inf", "+inf", "byscore", "limit", "-5", "-1", "withscores"},
		[]string{"zrange", "zskip", "0", "5", "byscore", "limit", "-200", "3"},
		[]string{"zrange", "zlexbig", "[m010", "(m020", "bylex", "limit", "-1", "3"},
		[]string{"zrange", "zlexbig", "+", "-", "bylex", "rev", "limit", "-150", "2"},
		[]string{"zrange", "zlexbig", "[m100", "+", "bylex", "limit", "-51", "2"},
		[]string{"zrange", "zi", "0", "5", "byscore", "limit", "-1", "3"},
	)
	// Many pairs, a member given twice, NX, XX and CH, then ZPOPMIN of most
	// of them.
	big := []string{"zadd", "many"}
	for i := range 300 {
		big = append(big, strconv.Itoa((i*7919)%1000-500)+".25", "m"+strconv.Itoa(i%250))
	}
	cmds = append(cmds, big,
		append([]string{"zadd", "many", "ch"}, big[2:]...),
		append([]string{"zadd", "many", "nx", "ch"}, big[2:202]...),
		append([]string{"zadd", "many", "xx", "ch"}, append([]string{"1", "new"}, big[4:204]...)...),
		[]string{"zrange", "many", "0", "-1", "withscores"},
		[]string{"zpopmin", "many", "200"},
		[]string{"zrange", "many", "0", "-1", "withscores"},
		[]string{"zcard", "many"},
	)
	for _, proto := range []string{"2", "3"} {
		a, b := dialRaw(t, ours), dialRaw(t, theirs)
		a.do("hello", proto)
		b.do("hello", proto)
		a.do("flushall")
		b.do("flushall")
		for _, c := range cmds {
			if got, want := a.do(c...), b.do(c...); got != want {
				t.Errorf("RESP%s %q: %q, valkey-server %q", proto, c, got, want)
			}
		}
	}
}
