package server

import (
	"strconv"
	"strings"
)

// KEYS and SCAN, and the glob patterns they match keys with.

// globMatch reports whether s matches the glob pattern p, as valkey's
// stringmatchlen does: * and ? , [abc], [^abc], [a-z] (either way round),
// and \ to quote the next character. A pattern unmatched at one place of a
// * is not tried at later ones once the rest failed everywhere, so a
// pattern of many *s costs no more than a few passes over s.
func globMatch(p, s string) bool {
	skip := false
	return globMatchAt(p, s, &skip, 0)
}

func globMatchAt(p, s string, skipLonger *bool, nesting int) bool {
	if nesting > 1000 { // valkey's protection against abusive patterns
		return false
	}
	// at is p[i], or 0 past its end (C's terminating NUL, which valkey's
	// loop reads).
	at := func(i int) byte {
		if i < len(p) {
			return p[i]
		}
		return 0
	}
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 0 && at(1) == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for len(s) > 0 {
				if globMatchAt(p[1:], s, skipLonger, nesting+1) {
					return true
				}
				if *skipLonger {
					return false
				}
				s = s[1:]
			}
			*skipLonger = true
			return false
		case '?':
			s = s[1:]
		case '[':
			p = p[1:]
			not := at(0) == '^'
			if not {
				p = p[1:]
			}
			match := false
			for {
				if at(0) == '\\' && len(p) >= 2 {
					p = p[1:]
					if p[0] == s[0] {
						match = true
					}
				} else if at(0) == ']' {
					break
				} else if len(p) == 0 {
					// An unclosed bracket: the outer step below must
					// leave p empty, as valkey's pattern-- does.
					p = "\x00"
					break
				} else if len(p) >= 3 && p[1] == '-' {
					lo, hi := p[0], p[2]
					if lo > hi {
						lo, hi = hi, lo
					}
					if s[0] >= lo && s[0] <= hi {
						match = true
					}
					p = p[2:]
				} else if p[0] == s[0] {
					match = true
				}
				p = p[1:]
			}
			if match == not {
				return false
			}
			s = s[1:]
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if p[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			break
		}
	}
	return len(p) == 0 && len(s) == 0
}

// KEYS pattern: the live keys of the database that match, in no order.
func cmdKeys(c *conn, args [][]byte) {
	pat := string(args[1])
	all := pat == "*"
	var keys []string
	now := nowMS()
	for i := range c.db.shards {
		s := &c.db.shards[i]
		s.rlock(c)
		for k, e := range s.m {
			if !e.expired(now) && (all || globMatch(pat, k)) {
				keys = append(keys, k)
			}
		}
		s.runlock(c)
	}
	c.addArray(len(keys))
	for _, k := range keys {
		c.addBulkString(k)
	}
}

// SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]. The cursor is
// the index of the next shard: a call returns the keys of whole shards,
// at least one, until it has count (10 by default) or more. So every key
// there from the first call to the last is returned once; one added or
// deleted meanwhile may or may not be, as in valkey.
func cmdScan(c *conn, args [][]byte) {
	cursor, err := strconv.ParseUint(string(args[1]), 10, 64)
	if err != nil {
		c.addError("ERR invalid cursor")
		return
	}
	count, pat, typ := 10, "*", kind(0)
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			if eqFold(args[i], "novalues") {
				c.addError("ERR NOVALUES option can only be used in HSCAN")
			} else if eqFold(args[i], "noscores") {
				c.addError("ERR NOSCORES option can only be used in ZSCAN")
			} else {
				c.addError(msgSyntax)
			}
			return
		}
		switch v := args[i+1]; {
		case eqFold(args[i], "count"):
			n, ok := parseInt(v)
			if !ok {
				c.addError(msgNotInteger)
				return
			}
			if n < 1 {
				c.addError(msgSyntax)
				return
			}
			count = int(min(n, 1<<30))
		case eqFold(args[i], "match"):
			pat = string(v)
		case eqFold(args[i], "type"):
			if typ = kindNamed(string(v)); typ == 0 {
				c.addError("ERR unknown type name '" + string(v) + "'")
				return
			}
		case eqFold(args[i], "novalues"):
			c.addError("ERR NOVALUES option can only be used in HSCAN")
			return
		case eqFold(args[i], "noscores"):
			c.addError("ERR NOSCORES option can only be used in ZSCAN")
			return
		default:
			c.addError(msgSyntax)
			return
		}
	}
	var keys []string
	now := nowMS()
	next := cursor
	for next < numShards && len(keys) < count {
		s := &c.db.shards[next]
		next++
		s.rlock(c)
		for k, e := range s.m {
			if !e.expired(now) && (typ == 0 || e.kind == typ) && (pat == "*" || globMatch(pat, k)) {
				keys = append(keys, k)
			}
		}
		s.runlock(c)
	}
	if next >= numShards {
		next = 0
	}
	c.addArray(2)
	c.addBulkString(strconv.FormatUint(next, 10))
	c.addArray(len(keys))
	for _, k := range keys {
		c.addBulkString(k)
	}
}

// kindNamed is the kind TYPE names name (in any case), or 0.
func kindNamed(name string) kind {
	for k := kindString; k <= kindStream; k++ {
		if strings.EqualFold(name, k.typeName()) {
			return k
		}
	}
	return 0
}
