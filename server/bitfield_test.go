package server

import (
	"strconv"
	"testing"
)

// TestBitfieldOverflow: BITFIELD's GET, SET and INCRBY on signed and
// unsigned fields of every width class, under WRAP, SAT and FAIL, and its
// errors, as valkey-server replies.
func TestBitfieldOverflow(t *testing.T) {
	for _, proto := range []string{"2", "3"} {
		p := newPair(t, proto)
		for _, typ := range []string{"i1", "i5", "i8", "i63", "i64", "u1", "u5", "u8", "u63"} {
			for _, ow := range []string{"wrap", "sat", "fail"} {
				for _, v := range []string{"0", "1", "-1", "15", "16", "-16", "-17", "127", "128", "255", "256",
					"9223372036854775807", "-9223372036854775808", "4611686018427387904"} {
					p.same("bitfield", "bf", "overflow", ow, "set", typ, "3", v, "get", typ, "3")
					p.same("bitfield", "bf", "overflow", ow, "incrby", typ, "3", v, "get", typ, "3")
					p.same("bitfield", "bf", "overflow", ow, "incrby", typ, "#2", v)
				}
				p.same("get", "bf")
			}
		}
		p.same("bitfield", "bf", "get", "u8", "0", "get", "i64", "60", "get", "u63", "#1000")
		p.same("bitfield_ro", "bf", "get", "u8", "0", "get", "i16", "#3")
		p.same("bitfield", "new", "overflow", "fail", "incrby", "u2", "10", "5")
		p.same("get", "new")
		p.same("bitfield", "none")
		p.same("exists", "none")
		for _, bad := range [][]string{
			{"get", "u64", "0"}, {"get", "i65", "0"}, {"get", "x8", "0"}, {"get", "", "0"}, {"get", "u08", "0"},
			{"get", "u8", "-1"}, {"get", "u8", "#-1"}, {"get", "u8", "x"}, {"get", "u8", "4294967296"},
			{"get", "u8", "#9223372036854775807"}, {"set", "u8", "0", "x"}, {"overflow", "bogus"},
			{"bogus"}, {"get", "u8"}, {"set", "u8", "0"}, {"incrby", "i8", "0", "1.5"},
		} {
			p.same(append([]string{"bitfield", "bf"}, bad...)...)
			p.same(append([]string{"bitfield_ro", "bf"}, bad...)...)
		}
		p.same("bitfield_ro", "bf", "set", "u8", "0", "1")
		p.same("lpush", "list", "a")
		p.same("bitfield", "list", "get", "u8", "0")
		p.same("bitfield", "list", "set", "u8", "0", "1")
		p.same("bitfield_ro", "list", "get", "u8", "0")
	}
}

// TestBitOpLCS: BITOP, LCS, GETSET, MSETNX and OBJECT against
// valkey-server.
func TestBitOpLCS(t *testing.T) {
	for _, proto := range []string{"2", "3"} {
		p := newPair(t, proto)
		p.same("set", "a", "foobar")
		p.same("set", "b", "abcdefghijklmnopqrstuvwxyz0123456789")
		p.same("set", "c", "\xff\x00\x0f")
		for _, op := range []string{"and", "OR", "xor", "not", "bogus"} {
			p.same("bitop", op, "d", "a", "b", "c", "none")
			p.same("get", "d")
			p.same("bitop", op, "d", "c")
			p.same("get", "d")
			p.same("bitop", op, "d", "none")
			p.same("exists", "d")
		}
		p.same("lpush", "l", "x")
		p.same("bitop", "and", "d", "a", "l")
		p.same("bitop", "and", "l", "a")
		p.same("type", "l")
		p.same("set", "s1", "ohmytext")
		p.same("set", "s2", "mynewtext")
		p.same("set", "s3", "ACCGGTCGAGTGCGCGGAAGCCGGCCGAAACCGGTCGAGTGCGCGGAAGCCGG")
		p.same("set", "s4", "GTCGTTCGGAATGCCGTTGCTCTGTAAAGTCGTTCGGAATGCCGTTGCTC")
		for _, k := range [][2]string{{"s1", "s2"}, {"s3", "s4"}, {"s1", "none"}, {"none", "s2"}, {"s2", "s2"}} {
			p.same("lcs", k[0], k[1])
			p.same("lcs", k[0], k[1], "len")
			p.same("lcs", k[0], k[1], "idx")
			p.same("lcs", k[0], k[1], "IDX", "withmatchlen")
			p.same("lcs", k[0], k[1], "idx", "minmatchlen", "2", "withmatchlen")
			p.same("lcs", k[0], k[1], "idx", "minmatchlen", "-3")
		}
		p.same("lcs", "s1", "s2", "len", "idx")
		p.same("lcs", "s1", "s2", "minmatchlen")
		p.same("lcs", "s1", "s2", "minmatchlen", "x")
		p.same("lcs", "s1", "s2", "bogus")
		p.same("lcs", "s1", "l", "bogus")
		p.same("getset", "g", "1")
		p.same("expire", "g", "100")
		p.same("getset", "g", "2")
		p.same("ttl", "g")
		p.same("getset", "l", "2")
		p.same("msetnx", "m1", "1", "m2", "2")
		p.same("msetnx", "m2", "1", "m3", "2")
		p.same("exists", "m3")
		p.same("msetnx", "m4", "1", "m4", "2")
		p.same("get", "m4")
		p.same("msetnx", "m5", "1", "m6")
		for _, v := range []string{"1", "9999", "10000", "-1", "12345678901234567890", "x", "0123",
			"a23456789012345678901234567890123456789012345", "a2345678901234567890123456789012345678901234"} {
			p.same("set", "e", v)
			p.same("object", "encoding", "e")
			p.same("object", "refcount", "e")
		}
		// Valkey's encoding of a string depends on the command that made it.
		for _, cmd := range [][]string{{"setbit", "e", "0", "0"}, {"append", "e", "1"}, {"setrange", "e", "0", "1"},
			{"setrange", "e", "0", ""}, {"incrbyfloat", "e", "1"}, {"incr", "e"}, {"bitfield", "e", "get", "u8", "0"},
			{"bitfield", "e", "overflow", "fail", "incrby", "u1", "0", "5"}, {"getset", "e", "3"}, {"setnx", "e", "4"},
			{"msetnx", "e", "5"}, {"pfadd", "e", "a"}, {"pfcount", "e"}} {
			p.same("set", "e", "5")
			p.same(cmd...)
			p.same("object", "encoding", "e")
			p.same("copy", "e", "e2", "replace")
			p.same("object", "encoding", "e2")
			p.same("del", "e")
			p.same(cmd...)
			p.same("object", "encoding", "e")
		}
		p.same("set", "e", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff")
		p.same("object", "encoding", "e")
		p.same("pfcount", "e")
		p.same("object", "encoding", "e")
		p.same("object", "encoding", "none")
		p.same("object", "freq", "e")
		p.same("object", "freq", "none")
		p.same("object", "idletime", "none")
		p.same("object", "help")
		p.same("object", "bogus", "e")
		p.same("object", "encoding")
		for i := range 130 {
			p.same("hset", "h", "f"+strconv.Itoa(i), "v")
			p.same("sadd", "si", strconv.Itoa(i*1000))
			p.same("sadd", "ss", "m"+strconv.Itoa(i))
			p.same("zadd", "z", strconv.Itoa(i), "m"+strconv.Itoa(i))
			p.same("rpush", "l", "elementnumber"+strconv.Itoa(i))
			if i%16 == 0 || i > 125 {
				for _, k := range []string{"h", "si", "ss", "z", "l"} {
					p.same("object", "encoding", k)
				}
			}
		}
		for i := range 600 {
			p.same("sadd", "si2", strconv.Itoa(i))
		}
		p.same("object", "encoding", "si2")
		p.same("hset", "hl", "f", "a2345678901234567890123456789012345678901234567890123456789012345")
		p.same("object", "encoding", "hl")
		p.same("xadd", "x", "1-1", "f", "v")
		p.same("object", "encoding", "x")
	}
}
