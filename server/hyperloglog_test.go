package server

import (
	"strconv"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// pair is a client on our server and one on valkey-server, each in RESP
// proto, for tests that compare replies byte for byte.
type pair struct {
	t            *testing.T
	ours, theirs *rawClient
}

func newPair(t *testing.T, proto string) *pair {
	theirs := testutil.ValkeyServer(t)
	_, ours := startServer(t, nil)
	p := &pair{t: t, ours: dialRaw(t, ours), theirs: dialRaw(t, theirs)}
	p.same("hello", proto)
	p.same("flushall")
	return p
}

// same runs cmd on both servers and fails unless the replies are equal;
// it returns the reply.
func (p *pair) same(cmd ...string) string {
	p.t.Helper()
	got, want := p.ours.do(cmd...), p.theirs.do(cmd...)
	if cmd[0] == "hello" {
		return want
	}
	if got != want {
		if len(got) > 300 || len(want) > 300 {
			p.t.Errorf("%q: ours (%d bytes) differs from valkey-server's (%d bytes)", cmd, len(got), len(want))
		} else {
			p.t.Errorf("%q: ours %q, valkey-server %q", cmd, got, want)
		}
	}
	return want
}

// TestHLLBytes: the values of PFADD, PFMERGE and PFCOUNT are valkey's,
// byte for byte, through the sparse encoding, its promotion to dense at
// hll-sparse-max-bytes, and merges of sparse and dense values.
func TestHLLBytes(t *testing.T) {
	for _, proto := range []string{"2", "3"} {
		p := newPair(t, proto)
		p.same("pfadd", "h1")
		p.same("get", "h1")
		p.same("pfdebug", "encoding", "h1")
		p.same("pfdebug", "decode", "h1")
		// Grow h1 one element at a time past the promotion.
		promoted := false
		for i := 0; i < 3000 && !promoted; i++ {
			p.same("pfadd", "h1", "e"+strconv.Itoa(i), "f"+strconv.Itoa(i*7))
			if i%50 == 0 || i < 20 {
				p.same("get", "h1")
				p.same("pfcount", "h1")
				p.same("get", "h1") // the cached count
				p.same("pfdebug", "decode", "h1")
			}
			if p.same("pfdebug", "encoding", "h1") == "+dense\r\n" {
				promoted = true
				p.same("get", "h1")
			}
		}
		if !promoted {
			t.Fatal("h1 never became dense")
		}
		p.same("pfcount", "h1")
		// Merges: sparse into sparse, sparse and dense, into a new key and
		// an existing one.
		for i := range 40 {
			p.same("pfadd", "s1", "s"+strconv.Itoa(i))
			p.same("pfadd", "s2", "t"+strconv.Itoa(i*3))
		}
		p.same("pfmerge", "m1", "s1", "s2")
		p.same("get", "m1")
		p.same("pfmerge", "s1", "s2")
		p.same("get", "s1")
		p.same("pfmerge", "m2", "s1", "h1")
		p.same("get", "m2")
		p.same("pfmerge", "s2", "h1", "nokey")
		p.same("get", "s2")
		p.same("pfcount", "s1", "h1", "h2", "nokey")
		p.same("pfcount", "m2")
		p.same("pfdebug", "todense", "s1")
		p.same("pfdebug", "todense", "s1")
		p.same("get", "s1")
		p.same("pfdebug", "getreg", "s1")
		p.same("pfdebug", "getreg", "m1")
		p.same("get", "m1")
		// A value copied from valkey is a HyperLogLog here.
		p.same("set", "copy", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff")
		p.same("pfadd", "copy", "a")
		p.same("get", "copy")
		// Errors.
		p.same("set", "str", "hello")
		p.same("pfadd", "str", "a")
		p.same("pfcount", "str")
		p.same("pfcount", "str", "h1")
		p.same("pfmerge", "h1", "str")
		p.same("pfdebug", "encoding", "str")
		p.same("pfdebug", "encoding", "nokey")
		p.same("pfdebug", "bogus", "h1")
		p.same("pfdebug", "decode", "h1")
		p.same("lpush", "list", "a")
		p.same("pfadd", "list", "a")
		p.same("pfcount", "list", "h1")
		p.same("set", "short", "HYLL\x00")
		p.same("pfcount", "short")
		p.same("set", "baddense", "HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80xx")
		p.same("pfcount", "baddense")
		p.same("set", "badenc", "HYLL\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80")
		p.same("pfadd", "badenc", "a")
		// Sparse values that do not cover the registers exactly.
		p.same("set", "corrupt", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff\x00")
		p.same("pfcount", "corrupt")
		p.same("pfcount", "corrupt", "h1")
		p.same("pfmerge", "m3", "corrupt")
		p.same("pfadd", "corrupt", "a", "b")
		p.same("get", "corrupt")
		p.same("set", "corrupt2", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xfe")
		p.same("pfcount", "corrupt2")
		p.same("pfadd", "corrupt2", "a")
		p.same("pfdebug", "todense", "corrupt2")
		p.same("exists", "m3")
	}
}

func TestPFSelfTest(t *testing.T) {
	if testing.Short() || raceEnabled {
		// Ten million additions, computation alone: the race detector
		// makes it take longer than a reply may, and has nothing to find.
		t.Skip("ten million additions (-short, or the race detector)")
	}
	_, addr := startServer(t, nil)
	if got := dialRaw(t, addr).do("pfselftest"); got != "+OK\r\n" {
		t.Fatalf("PFSELFTEST: %q", got)
	}
}
