package server

// OBJECT ENCODING, FREQ, IDLETIME, REFCOUNT and HELP, as valkey 8.0's
// object.c answers them with its default configuration. The keyspace
// stores values in Go's types, not valkey's encodings: ENCODING names the
// encoding valkey would use for the value as it is now, by valkey's
// default thresholds (hash-max-listpack-entries 512, set- and
// zset-max-listpack-entries 128, the -value ones 64, set-max-intset-entries 512, list-max-listpack-size -2: 8 KB).
// A string's encoding depends on the command that made it: the entry
// records what valkey would have (entry.enc). Valkey never converts a hash
// or set back to the smaller encoding when it shrinks; ENCODING follows
// their present state (a sorted set remembers its skip list), so it may
// name the smaller encoding where valkey keeps the larger. The server does not track access times: IDLETIME is 0.

var objectHelp = []string{
	"OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"ENCODING <key>",
	"    Return the kind of internal representation used in order to store the value",
	"    associated with a <key>.",
	"FREQ <key>",
	"    Return the access frequency index of the <key>. The returned integer is",
	"    proportional to the logarithm of the recent access frequency of the key.",
	"IDLETIME <key>",
	"    Return the idle time of the <key>, that is the approximated number of",
	"    seconds elapsed since the last access to the key.",
	"REFCOUNT <key>",
	"    Return the number of references of the value associated with the specified",
	"    <key>.",
	"HELP",
	"    Print this help.",
}

func cmdObjectHelp(c *conn, _ [][]byte) { c.addHelp(objectHelp) }

// OBJECT ENCODING | FREQ | IDLETIME | REFCOUNT key
func cmdObject(c *conn, args [][]byte) {
	sub, key := args[1], args[2]
	s := c.db.shard(key)
	s.rlock(c)
	defer s.runlock(c)
	e := s.get(key)
	if e == nil {
		c.addNull()
		return
	}
	switch {
	case eqFold(sub, "encoding"):
		c.addBulkString(encodingOf(e))
	case eqFold(sub, "refcount"):
		if n, ok := sharedInteger(e); ok && n >= 0 {
			c.addInt(2147483647) // valkey's shared integers
		} else {
			c.addInt(1)
		}
	case eqFold(sub, "idletime"):
		c.addInt(0)
	default: // FREQ
		c.addError("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
	}
}

// sharedInteger reports whether e is a string valkey stores as one of its
// shared integers (0 to 9999).
func sharedInteger(e *entry) (int64, bool) {
	if e.kind != kindString || e.enc != encByContent || len(e.str) > 20 {
		return 0, false
	}
	n, ok := parseInt(e.str)
	return n, ok && n >= 0 && n < 10000
}

// encodingOf is the encoding valkey would report for e's value.
func encodingOf(e *entry) string {
	small := func(n, limit int, each func(yield func([]byte) bool)) bool {
		if n > limit {
			return false
		}
		ok := true
		each(func(b []byte) bool {
			ok = len(b) <= 64
			return ok
		})
		return ok
	}
	switch o := e.obj.(type) {
	case nil:
		if e.enc == encRaw {
			return "raw"
		}
		if e.enc == encByContent && len(e.str) <= 20 {
			if _, ok := parseInt(e.str); ok {
				return "int"
			}
		}
		if len(e.str) <= 44 {
			return "embstr"
		}
		return "raw"
	case *list:
		size := 7 // a listpack's header and end
		for i := range o.len() {
			size += listpackEntrySize(o.at(i))
			if size > 8192 {
				return "quicklist"
			}
		}
		return "listpack"
	case hashValue:
		if small(len(o), 512, func(yield func([]byte) bool) {
			for f, v := range o {
				if !yield([]byte(f)) || !yield(v) {
					return
				}
			}
		}) {
			return "listpack"
		}
		return "hashtable"
	case setValue:
		ints := len(o) <= 512
		for m := range o {
			if !ints {
				break
			}
			_, ints = parseInt([]byte(m))
		}
		if ints {
			return "intset"
		}
		if small(len(o), 128, func(yield func([]byte) bool) {
			for m := range o {
				if !yield([]byte(m)) {
					return
				}
			}
		}) {
			return "listpack"
		}
		return "hashtable"
	case *zset:
		if o.skiplist {
			return "skiplist"
		}
		return "listpack"
	case *stream:
		return "stream"
	}
	return "unknown"
}

// listpackEntrySize is the bytes an element takes in a listpack: its
// encoding (an integer's, or a string's header and bytes) and back length.
func listpackEntrySize(b []byte) int {
	n := 0
	if v, ok := parseInt(b); ok && len(b) <= 20 {
		switch {
		case v >= 0 && v <= 127:
			n = 1
		case v >= -4096 && v <= 4095:
			n = 2
		case v >= -1<<15 && v < 1<<15:
			n = 3
		case v >= -1<<23 && v < 1<<23:
			n = 4
		case v >= -1<<31 && v < 1<<31:
			n = 5
		default:
			n = 9
		}
	} else {
		switch l := len(b); {
		case l < 64:
			n = 1 + l
		case l < 4096:
			n = 2 + l
		default:
			n = 5 + l
		}
	}
	switch {
	case n <= 127:
		return n + 1
	case n < 16383:
		return n + 2
	case n < 2097151:
		return n + 3
	case n < 268435455:
		return n + 4
	}
	return n + 5
}
