package server

// XINFO STREAM, GROUPS, CONSUMERS and HELP, as valkey 8.0's xinfoCommand.
// radix-tree-keys and radix-tree-nodes describe valkey's encoding: here
// they are what valkey would show for entries in nodes of 100 (its
// stream-node-max-entries), an estimate.

// xinfoStream returns the stream under key for XINFO, or replies with the
// error ("no such key", WRONGTYPE).
func xinfoStream(c *conn, s *shard, key []byte) *stream {
	st, wrong := streamForRead(c, s, key)
	if st == nil && !wrong {
		c.addError("ERR no such key")
	}
	return st
}

// XINFO STREAM key [FULL [COUNT count]]
func cmdXInfoStream(c *conn, args [][]byte) {
	s := c.db.shard(args[2])
	s.rlock(c)
	defer s.runlock(c)
	st := xinfoStream(c, s, args[2])
	if st == nil {
		return
	}
	full, count := len(args) > 3, int64(10)
	if full {
		opts := args[3:]
		if len(opts) != 1 && len(opts) != 3 || !eqFold(opts[0], "full") || len(opts) == 3 && !eqFold(opts[1], "count") {
			subcommandSyntax(c, args)
			return
		}
		if len(opts) == 3 {
			n, ok := parseInt(opts[2])
			if !ok {
				c.addError(msgNotInteger)
				return
			}
			if n < 0 {
				n = 10
			}
			count = n
		}
	}
	if full {
		c.addMap(9)
	} else {
		c.addMap(10)
	}
	nodes := (len(st.entries) + 99) / 100
	c.addBulkString("length")
	c.addInt(int64(len(st.entries)))
	c.addBulkString("radix-tree-keys")
	c.addInt(int64(nodes))
	c.addBulkString("radix-tree-nodes")
	c.addInt(int64(nodes + 1))
	c.addBulkString("last-generated-id")
	c.addID(st.last)
	c.addBulkString("max-deleted-entry-id")
	c.addID(st.maxDeleted)
	c.addBulkString("entries-added")
	c.addInt(int64(st.added))
	c.addBulkString("recorded-first-entry-id")
	c.addID(st.first)
	if !full {
		c.addBulkString("groups")
		c.addInt(int64(len(st.groups)))
		c.addBulkString("first-entry")
		if len(st.entries) == 0 {
			c.addNull()
		} else {
			c.addEntry(&st.entries[0])
		}
		c.addBulkString("last-entry")
		if len(st.entries) == 0 {
			c.addNull()
		} else {
			c.addEntry(&st.entries[len(st.entries)-1])
		}
		return
	}
	limit := func(n int) int {
		if count > 0 && int64(n) > count {
			return int(count)
		}
		return n
	}
	c.addBulkString("entries")
	st.replyRange(c, streamID{}, maxStreamID, count, false)
	c.addBulkString("groups")
	c.addArray(len(st.groups))
	for _, g := range st.groups {
		c.addMap(7)
		c.addBulkString("name")
		c.addBulkString(g.name)
		c.addBulkString("last-delivered-id")
		c.addID(g.last)
		c.addBulkString("entries-read")
		c.addEntriesRead(g)
		c.addBulkString("lag")
		c.addLag(st, g)
		c.addBulkString("pel-count")
		c.addInt(int64(len(g.pel)))
		c.addBulkString("pending")
		c.addArray(limit(len(g.pel)))
		for _, p := range g.pel[:limit(len(g.pel))] {
			c.addArray(4)
			c.addID(p.id)
			c.addBulkString(p.owner.name)
			c.addInt(p.delivered)
			c.addInt(p.count)
		}
		c.addBulkString("consumers")
		c.addArray(len(g.consumers))
		for _, cs := range g.consumers {
			c.addMap(5)
			c.addBulkString("name")
			c.addBulkString(cs.name)
			c.addBulkString("seen-time")
			c.addInt(cs.seen)
			c.addBulkString("active-time")
			c.addInt(cs.active)
			c.addBulkString("pel-count")
			c.addInt(int64(len(cs.pel)))
			c.addBulkString("pending")
			c.addArray(limit(len(cs.pel)))
			for _, p := range cs.pel[:limit(len(cs.pel))] {
				c.addArray(3)
				c.addID(p.id)
				c.addInt(p.delivered)
				c.addInt(p.count)
			}
		}
	}
}

func (c *conn) addEntriesRead(g *streamGroup) {
	if g.entriesRead == invalidEntriesRead {
		c.addNull()
	} else {
		c.addInt(g.entriesRead)
	}
}

func (c *conn) addLag(st *stream, g *streamGroup) {
	if lag, ok := st.lag(g); ok {
		c.addInt(lag)
	} else {
		c.addNull()
	}
}

// XINFO GROUPS key
func cmdXInfoGroups(c *conn, args [][]byte) {
	s := c.db.shard(args[2])
	s.rlock(c)
	defer s.runlock(c)
	st := xinfoStream(c, s, args[2])
	if st == nil {
		return
	}
	c.addArray(len(st.groups))
	for _, g := range st.groups {
		c.addMap(6)
		c.addBulkString("name")
		c.addBulkString(g.name)
		c.addBulkString("consumers")
		c.addInt(int64(len(g.consumers)))
		c.addBulkString("pending")
		c.addInt(int64(len(g.pel)))
		c.addBulkString("last-delivered-id")
		c.addID(g.last)
		c.addBulkString("entries-read")
		c.addEntriesRead(g)
		c.addBulkString("lag")
		c.addLag(st, g)
	}
}

// XINFO CONSUMERS key group
func cmdXInfoConsumers(c *conn, args [][]byte) {
	s := c.db.shard(args[2])
	s.rlock(c)
	defer s.runlock(c)
	st := xinfoStream(c, s, args[2])
	if st == nil {
		return
	}
	g := st.group(args[3])
	if g == nil {
		c.addError("NOGROUP No such consumer group '" + string(args[3]) + "' for key name '" + string(args[2]) + "'")
		return
	}
	now := nowMS()
	c.addArray(len(g.consumers))
	for _, cs := range g.consumers {
		inactive := int64(-1)
		if cs.active != -1 {
			inactive = now - cs.active
		}
		c.addMap(4)
		c.addBulkString("name")
		c.addBulkString(cs.name)
		c.addBulkString("pending")
		c.addInt(int64(len(cs.pel)))
		c.addBulkString("idle")
		c.addInt(max(now-cs.seen, 0))
		c.addBulkString("inactive")
		c.addInt(inactive)
	}
}

func cmdXInfoHelp(c *conn, _ [][]byte) { c.addHelp(xinfoHelp) }

var xinfoHelp = []string{
	"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CONSUMERS <key> <groupname>",
	"    Show consumers of <groupname>.",
	"GROUPS <key>",
	"    Show the stream consumer groups.",
	"STREAM <key> [FULL [COUNT <count>]",
	"    Show information about the stream.",
	"HELP",
	"    Print this help.",
}
