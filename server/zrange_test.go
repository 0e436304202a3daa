package server

import (
	"strconv"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// TestZRangeStoreEncoding compares with valkey-server the scores of -0
// that ZRANGESTORE keeps: a listpack stores -0 as 0, and whether the set
// it makes is one when a member is added depends on the range's kind
// (valkey sizes the set for a range of ranks) and on the order of adding
// (REV adds from the top).
func TestZRangeStoreEncoding(t *testing.T) {
	theirs := testutil.ValkeyServer(t)
	_, ours := startServer(t, nil)
	a, b := dialRaw(t, ours), dialRaw(t, theirs)
	// Two members of score -0 below 190 others: a skip list, which keeps -0.
	add := []string{"zadd", "src", "-0", "a", "-0", "b"}
	for i := range 190 {
		add = append(add, strconv.Itoa(i+1), "m"+strconv.Itoa(i))
	}
	for _, rc := range []*rawClient{a, b} {
		rc.do("flushall")
		rc.do(add...)
	}
	for _, r := range [][]string{
		{"0", "-1"}, {"0", "100"}, {"-inf", "+inf", "byscore"}, {"+inf", "-inf", "byscore", "rev"},
		{"+inf", "-inf", "byscore", "rev", "limit", "0", "150"}, {"-1", "0", "rev"}, {"-", "+", "bylex"},
	} {
		for _, cmd := range [][]string{append([]string{"zrangestore", "dst", "src"}, r...), {"zscore", "dst", "a"}, {"zscore", "dst", "b"}} {
			if got, want := a.do(cmd...), b.do(cmd...); got != want {
				t.Errorf("%q: ours %q, valkey-server %q", cmd, got, want)
			}
		}
	}
}
