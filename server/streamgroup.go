package server

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Consumer groups of streams, as valkey 8.0's (t_stream.c): XGROUP, XACK,
// XPENDING, XCLAIM, XAUTOCLAIM and the bookkeeping XREADGROUP (xread.go)
// and XINFO (xinfo.go) share. As in valkey, the changes these make to a
// group (and XSETID's) do not touch the key: WATCH and client tracking do
// not see them.

// streamGroup is a consumer group: the last ID delivered, the logical
// read counter valkey 7 added (entriesRead, -1 when unknown), the pending
// entries list in order of ID and the consumers by name. A pending entry
// is in the group's PEL and in its consumer's: the same *pending.
type streamGroup struct {
	name        string
	last        streamID
	entriesRead int64
	pel         []*pending
	consumers   []*consumer
}

// invalidEntriesRead is valkey's SCG_INVALID_ENTRIES_READ.
const invalidEntriesRead = -1

type pending struct {
	id        streamID
	delivered int64 // Unix milliseconds of the last delivery
	count     int64 // deliveries
	owner     *consumer
}

type consumer struct {
	name   string
	seen   int64 // the last time it was seen (any attempt)
	active int64 // the last successful interaction, -1 for none
	pel    []*pending
}

// pelSearch returns the index in pel of the first entry at id or after,
// and whether it is id's.
func pelSearch(pel []*pending, id streamID) (int, bool) {
	i := sort.Search(len(pel), func(i int) bool { return !pel[i].id.less(id) })
	return i, i < len(pel) && pel[i].id == id
}

func pelInsert(pel []*pending, p *pending) []*pending {
	i, found := pelSearch(pel, p.id)
	if found {
		pel[i] = p
		return pel
	}
	return slices.Insert(pel, i, p)
}

func pelRemove(pel []*pending, id streamID) []*pending {
	if i, found := pelSearch(pel, id); found {
		return slices.Delete(pel, i, i+1)
	}
	return pel
}

// group returns the group named name, or nil.
func (st *stream) group(name []byte) *streamGroup {
	i, found := slices.BinarySearchFunc(st.groups, string(name), func(g *streamGroup, n string) int { return strings.Compare(g.name, n) })
	if !found {
		return nil
	}
	return st.groups[i]
}

// consumer returns the consumer named name, or nil.
func (g *streamGroup) consumer(name []byte) *consumer {
	i, found := slices.BinarySearchFunc(g.consumers, string(name), func(x *consumer, n string) int { return strings.Compare(x.name, n) })
	if !found {
		return nil
	}
	return g.consumers[i]
}

// createConsumer adds the consumer name, which must not be there.
func (g *streamGroup) createConsumer(name []byte, now int64) *consumer {
	cs := &consumer{name: string(name), seen: now, active: -1}
	i, _ := slices.BinarySearchFunc(g.consumers, cs.name, func(x *consumer, n string) int { return strings.Compare(x.name, n) })
	g.consumers = slices.Insert(g.consumers, i, cs)
	return cs
}

// lookupOrCreateConsumer is valkey's lookup, then streamCreateConsumer.
func (g *streamGroup) lookupOrCreateConsumer(name []byte, now int64) *consumer {
	if cs := g.consumer(name); cs != nil {
		return cs
	}
	return g.createConsumer(name, now)
}

// ack removes id from the group's PEL and its consumer's.
func (g *streamGroup) ack(p *pending) {
	g.pel = pelRemove(g.pel, p.id)
	if p.owner != nil {
		p.owner.pel = pelRemove(p.owner.pel, p.id)
	}
}

// give makes cs the owner of p.
func (p *pending) give(cs *consumer) {
	if p.owner == cs {
		return
	}
	if p.owner != nil {
		p.owner.pel = pelRemove(p.owner.pel, p.id)
	}
	cs.pel = pelInsert(cs.pel, p)
	p.owner = cs
}

// clone copies a stream with its groups, their PELs and consumers (COPY).
func (st *stream) clone() *stream {
	n := &stream{last: st.last, entries: slices.Clone(st.entries), first: st.first,
		maxDeleted: st.maxDeleted, added: st.added}
	for _, g := range st.groups {
		ng := &streamGroup{name: g.name, last: g.last, entriesRead: g.entriesRead}
		owners := map[*consumer]*consumer{}
		for _, cs := range g.consumers {
			ncs := &consumer{name: cs.name, seen: cs.seen, active: cs.active}
			owners[cs] = ncs
			ng.consumers = append(ng.consumers, ncs)
		}
		for _, p := range g.pel {
			np := &pending{id: p.id, delivered: p.delivered, count: p.count, owner: owners[p.owner]}
			ng.pel = append(ng.pel, np)
			if np.owner != nil {
				np.owner.pel = append(np.owner.pel, np)
			}
		}
		n.groups = append(n.groups, ng)
	}
	return n
}

// hasTombstones is valkey's streamRangeHasTombstones from start to the
// end of the stream.
func (st *stream) hasTombstones(start streamID) bool {
	if len(st.entries) == 0 || st.maxDeleted.isZero() || st.maxDeleted.less(st.first) {
		return false
	}
	return !st.maxDeleted.less(start)
}

// estimateRead is valkey's streamEstimateDistanceFromFirstEverEntry: the
// logical read counter of id, or invalidEntriesRead.
func (st *stream) estimateRead(id streamID) int64 {
	if st.added == 0 {
		return 0
	}
	if len(st.entries) == 0 && id.compare(st.last) < 1 {
		return int64(st.added)
	}
	switch id.compare(st.last) {
	case 0:
		return int64(st.added)
	case 1:
		return invalidEntriesRead
	}
	if st.maxDeleted.isZero() || st.maxDeleted.less(st.first) {
		switch id.compare(st.first) {
		case -1:
			return int64(st.added) - int64(len(st.entries))
		case 0:
			return int64(st.added) - int64(len(st.entries)) + 1
		}
	}
	return invalidEntriesRead
}

// lag is valkey's streamReplyWithCGLag: the group's lag, false if unknown.
func (st *stream) lag(g *streamGroup) (int64, bool) {
	if st.added == 0 {
		return 0, true
	}
	if g.entriesRead != invalidEntriesRead && !st.hasTombstones(g.last) {
		return int64(st.added) - g.entriesRead, true
	}
	if read := st.estimateRead(g.last); read != invalidEntriesRead {
		return int64(st.added) - read, true
	}
	return 0, false
}

// delivered moves the group past id, an entry it delivers for the first
// time, keeping its read counter as valkey's streamReplyWithRange does.
func (st *stream) delivered(g *streamGroup, id streamID) {
	if !g.last.less(id) {
		return
	}
	if g.entriesRead != invalidEntriesRead && !st.hasTombstones(id) {
		g.entriesRead++
	} else if st.added != 0 {
		g.entriesRead = st.estimateRead(id)
	}
	g.last = id
}

// msgNoKeyOrGroup is the NOGROUP error of XPENDING, XCLAIM and XAUTOCLAIM.
func msgNoKeyOrGroup(key, group []byte) string {
	return "NOGROUP No such key '" + string(key) + "' or consumer group '" + string(group) + "'"
}

// groupOrNoGroup returns the group named name of st, the stream under key
// (nil for none), or replies NOGROUP and returns nil.
func groupOrNoGroup(c *conn, key []byte, st *stream, name []byte) *streamGroup {
	var g *streamGroup
	if st != nil {
		g = st.group(name)
	}
	if g == nil {
		c.addError(msgNoKeyOrGroup(key, name))
	}
	return g
}

// groupForWrite returns the stream under key and its group named name for
// a command that changes them (XCLAIM, XAUTOCLAIM), or replies WRONGTYPE or
// NOGROUP and returns a nil group. The caller holds s's lock for writing.
func groupForWrite(c *conn, s *shard, key, name []byte) (*stream, *streamGroup) {
	e, err := s.collection(key, kindStream, false)
	if err != nil {
		c.addError(err.Error())
		return nil, nil
	}
	var st *stream
	if e != nil {
		st = e.obj.(*stream)
	}
	return st, groupOrNoGroup(c, key, st, name)
}

// subcommandSyntax is valkey's addReplySubcommandSyntaxError.
func subcommandSyntax(c *conn, args [][]byte) {
	c.addError("ERR unknown subcommand or wrong number of arguments for '" + string(args[1][:min(len(args[1]), 128)]) +
		"'. Try " + strings.ToUpper(string(args[0])) + " HELP.")
}

// XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD n], SETID key
// group id|$ [ENTRIESREAD n], DESTROY key group, CREATECONSUMER key group
// consumer, DELCONSUMER key group consumer: valkey's xgroupCommand.
func cmdXGroup(c *conn, args [][]byte) {
	sub := strings.ToLower(string(args[1]))
	mkstream := false
	entriesRead := int64(invalidEntriesRead)
	for i := 5; i < len(args); {
		switch {
		case sub == "create" && eqFold(args[i], "mkstream"):
			mkstream = true
			i++
		case (sub == "create" || sub == "setid") && eqFold(args[i], "entriesread") && i+1 < len(args):
			n, ok := parseInt(args[i+1])
			if !ok {
				c.addError(msgNotInteger)
				return
			}
			if n < 0 && n != invalidEntriesRead {
				c.addError("ERR value for ENTRIESREAD must be positive or -1")
				return
			}
			entriesRead = n
			i += 2
		default:
			subcommandSyntax(c, args)
			return
		}
	}
	key, name := args[2], args[3]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindStream, false)
	if err != nil {
		c.addError(err.Error())
		return
	}
	var st *stream
	var g *streamGroup
	if e != nil {
		st = e.obj.(*stream)
	}
	if !mkstream {
		if st == nil {
			c.addError("ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.")
			return
		}
		if g = st.group(name); g == nil && (sub == "setid" || sub == "createconsumer" || sub == "delconsumer") {
			c.addError("NOGROUP No such consumer group '" + string(name) + "' for key name '" + string(key) + "'")
			return
		}
	}
	now := nowMS()
	switch {
	case sub == "create" && len(args) <= 8:
		var id streamID
		if string(args[4]) == "$" {
			if st != nil {
				id = st.last
			}
		} else {
			var ok bool
			if id, ok = parseID(args[4], 0, true); !ok {
				c.addError(msgInvalidStreamID)
				return
			}
		}
		if st == nil { // MKSTREAM
			e, _ = s.collection(key, kindStream, true)
			st = e.obj.(*stream)
		}
		i, found := slices.BinarySearchFunc(st.groups, string(name), func(g *streamGroup, n string) int { return strings.Compare(g.name, n) })
		if found {
			c.addError("BUSYGROUP Consumer Group name already exists")
			return
		}
		st.groups = slices.Insert(st.groups, i, &streamGroup{name: string(name), last: id, entriesRead: entriesRead})
		c.addOK()
	case sub == "setid" && (len(args) == 5 || len(args) == 7):
		var id streamID
		if string(args[4]) == "$" {
			id = st.last
		} else {
			var ok bool
			if id, ok = parseID(args[4], 0, false); !ok {
				c.addError(msgInvalidStreamID)
				return
			}
		}
		g.last, g.entriesRead = id, entriesRead
		c.addOK()
	case sub == "destroy" && len(args) == 4:
		if g == nil {
			c.addInt(0)
			return
		}
		st.groups = slices.DeleteFunc(st.groups, func(x *streamGroup) bool { return x == g })
		// Its blocked XREADGROUP clients wake to NOGROUP; the key is
		// not modified (no WATCH or tracking), as valkey's.
		s.signalReady(key)
		c.addInt(1)
	case sub == "createconsumer" && len(args) == 5:
		if g.consumer(args[4]) != nil {
			c.addInt(0)
			return
		}
		g.createConsumer(args[4], now)
		c.addInt(1)
	case sub == "delconsumer" && len(args) == 5:
		cs := g.consumer(args[4])
		if cs == nil {
			c.addInt(0)
			return
		}
		for _, p := range cs.pel {
			g.pel = pelRemove(g.pel, p.id)
		}
		g.consumers = slices.DeleteFunc(g.consumers, func(x *consumer) bool { return x == cs })
		c.addInt(int64(len(cs.pel)))
	default:
		subcommandSyntax(c, args)
	}
}

func cmdXGroupHelp(c *conn, _ [][]byte) { c.addHelp(xgroupHelp) }

var xgroupHelp = []string{
	"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CREATE <key> <groupname> <id|$> [option]",
	"    Create a new consumer group. Options are:",
	"    * MKSTREAM",
	"      Create the empty stream if it does not exist.",
	"    * ENTRIESREAD entries_read",
	"      Set the group's entries_read counter (internal use).",
	"CREATECONSUMER <key> <groupname> <consumer>",
	"    Create a new consumer in the specified group.",
	"DELCONSUMER <key> <groupname> <consumer>",
	"    Remove the specified consumer.",
	"DESTROY <key> <groupname>",
	"    Remove the specified group.",
	"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
	"    Set the current group ID and entries_read counter.",
	"HELP",
	"    Print this help.",
}

// XACK key group id [id ...]: a missing key or group acknowledges none,
// before the IDs are looked at.
func cmdXAck(c *conn, args [][]byte) {
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	e, err := s.collection(key, kindStream, false)
	if err != nil {
		c.addError(err.Error())
		return
	}
	var g *streamGroup
	if e != nil {
		g = e.obj.(*stream).group(args[2])
	}
	if g == nil {
		c.addInt(0)
		return
	}
	ids, ok := parseIDs(c, args[3:])
	if !ok {
		return
	}
	n := 0
	for _, id := range ids {
		if i, found := pelSearch(g.pel, id); found {
			g.ack(g.pel[i])
			n++
		}
	}
	c.addInt(int64(n))
}

// XPENDING key group [[IDLE min-idle] start end count [consumer]], as
// valkey's xpendingCommand.
func cmdXPending(c *conn, args [][]byte) {
	if len(args) != 3 && (len(args) < 6 || len(args) > 9) {
		c.addError(msgSyntax)
		return
	}
	var start, end streamID
	var count, minIdle int64
	var consumerName []byte
	if len(args) >= 6 {
		at := 3
		if eqFold(args[3], "idle") {
			n, ok := parseInt(args[4])
			if !ok {
				c.addError(msgNotInteger)
				return
			}
			minIdle = n
			if len(args) < 8 {
				c.addError(msgSyntax)
				return
			}
			at += 2
		}
		n, ok := parseInt(args[at+2])
		if !ok {
			c.addError(msgNotInteger)
			return
		}
		count = max(n, 0)
		if start, ok = parseRangeID(c, args[at], 0, true); !ok {
			return
		}
		if end, ok = parseRangeID(c, args[at+1], math.MaxUint64, false); !ok {
			return
		}
		if at+3 < len(args) {
			consumerName = args[at+3]
		}
	}
	key := args[1]
	s := c.db.shard(key)
	s.rlock(c)
	defer s.runlock(c)
	st, wrong := streamForRead(c, s, key)
	if wrong {
		return
	}
	g := groupOrNoGroup(c, key, st, args[2])
	if g == nil {
		return
	}
	if len(args) == 3 {
		c.addArray(4)
		c.addInt(int64(len(g.pel)))
		if len(g.pel) == 0 {
			c.addNull()
			c.addNull()
			c.addNullArray()
			return
		}
		c.addID(g.pel[0].id)
		c.addID(g.pel[len(g.pel)-1].id)
		n := 0
		for _, cs := range g.consumers {
			if len(cs.pel) > 0 {
				n++
			}
		}
		c.addArray(n)
		for _, cs := range g.consumers {
			if len(cs.pel) > 0 {
				c.addArray(2)
				c.addBulkString(cs.name)
				c.addBulkString(strconv.Itoa(len(cs.pel)))
			}
		}
		return
	}
	pel := g.pel
	if consumerName != nil {
		cs := g.consumer(consumerName)
		if cs == nil {
			c.addArray(0)
			return
		}
		pel = cs.pel
	}
	now := nowMS()
	var out []*pending
	i, _ := pelSearch(pel, start)
	for ; count > 0 && i < len(pel) && !end.less(pel[i].id); i++ {
		p := pel[i]
		if minIdle != 0 && now-p.delivered < minIdle {
			continue
		}
		out = append(out, p)
		count--
	}
	c.addArray(len(out))
	for _, p := range out {
		c.addArray(4)
		c.addID(p.id)
		c.addBulkString(p.owner.name)
		c.addInt(max(now-p.delivered, 0))
		c.addInt(p.count)
	}
}

// parseIntOr parses an integer argument, or replies with ERR msg.
func parseIntOr(c *conn, b []byte, msg string) (int64, bool) {
	n, ok := parseInt(b)
	if !ok {
		c.addError("ERR " + msg)
	}
	return n, ok
}

// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME
// ms-unix-time] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID id], as
// valkey's xclaimCommand.
func cmdXClaim(c *conn, args [][]byte) {
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	st, g := groupForWrite(c, s, key, args[2])
	if g == nil {
		return
	}
	minIdle, ok := parseIntOr(c, args[4], "Invalid min-idle-time argument for XCLAIM")
	if !ok {
		return
	}
	minIdle = max(minIdle, 0)
	j := 5
	var ids []streamID
	for ; j < len(args); j++ {
		id, ok := parseID(args[j], 0, true)
		if !ok {
			break
		}
		ids = append(ids, id)
	}
	now := nowMS()
	retry, deliveryTime := int64(-1), int64(-1)
	force, justID := false, false
	var lastID streamID
	for ; j < len(args); j++ {
		more := j+1 < len(args)
		a := args[j]
		switch {
		case eqFold(a, "force"):
			force = true
		case eqFold(a, "justid"):
			justID = true
		case eqFold(a, "idle") && more:
			j++
			n, ok := parseIntOr(c, args[j], "Invalid IDLE option argument for XCLAIM")
			if !ok {
				return
			}
			deliveryTime = now - n
		case eqFold(a, "time") && more:
			j++
			n, ok := parseIntOr(c, args[j], "Invalid TIME option argument for XCLAIM")
			if !ok {
				return
			}
			deliveryTime = n
		case eqFold(a, "retrycount") && more:
			j++
			n, ok := parseIntOr(c, args[j], "Invalid RETRYCOUNT option argument for XCLAIM")
			if !ok {
				return
			}
			retry = n
		case eqFold(a, "lastid") && more:
			j++
			if lastID, ok = parseID(args[j], 0, true); !ok {
				c.addError(msgInvalidStreamID)
				return
			}
		default:
			c.addError("ERR Unrecognized XCLAIM option '" + string(a) + "'")
			return
		}
	}
	if g.last.less(lastID) {
		g.last = lastID
	}
	if deliveryTime < 0 || deliveryTime > now {
		deliveryTime = now
	}
	cs := g.lookupOrCreateConsumer(args[3], now)
	cs.seen = now
	var claimed []streamID
	for _, id := range ids {
		i, found := pelSearch(g.pel, id)
		if st.entry(id) == nil {
			if found {
				g.ack(g.pel[i])
			}
			continue
		}
		var p *pending
		if found {
			p = g.pel[i]
		} else if force {
			p = &pending{id: id, delivered: now, count: 1}
			g.pel = slices.Insert(g.pel, i, p)
		} else {
			continue
		}
		if p.owner != nil && minIdle != 0 && now-p.delivered < minIdle {
			continue
		}
		p.delivered = deliveryTime
		if retry >= 0 {
			p.count = retry
		} else if !justID {
			p.count++
		}
		p.give(cs)
		claimed = append(claimed, id)
		cs.active = now
	}
	c.addArray(len(claimed))
	for _, id := range claimed {
		if justID {
			c.addID(id)
		} else {
			c.addEntry(st.entry(id))
		}
	}
}

// XAUTOCLAIM key group consumer min-idle-time start [COUNT count]
// [JUSTID], as valkey's xautoclaimCommand: the cursor, the claimed
// entries, and the IDs of the pending entries no longer in the stream,
// which leave the PEL.
func cmdXAutoClaim(c *conn, args [][]byte) {
	minIdle, ok := parseIntOr(c, args[4], "Invalid min-idle-time argument for XAUTOCLAIM")
	if !ok {
		return
	}
	minIdle = max(minIdle, 0)
	start, ok := parseRangeID(c, args[5], 0, true)
	if !ok {
		return
	}
	count, justID := int64(100), false
	for j := 6; j < len(args); j++ {
		switch {
		case eqFold(args[j], "count") && j+1 < len(args):
			n, ok := parseInt(args[j+1])
			if !ok || n < 1 || n > math.MaxInt64/16 {
				c.addError("ERR COUNT must be > 0")
				return
			}
			count = n
			j++
		case eqFold(args[j], "justid"):
			justID = true
		default:
			c.addError(msgSyntax)
			return
		}
	}
	key := args[1]
	s := c.db.shard(key)
	s.lock(c)
	defer s.unlock(c)
	st, g := groupForWrite(c, s, key, args[2])
	if g == nil {
		return
	}
	now := nowMS()
	cs := g.lookupOrCreateConsumer(args[3], now)
	cs.seen = now
	attempts := count * 10
	var claimed, deleted []streamID
	i, _ := pelSearch(g.pel, start)
	for ; attempts > 0 && count > 0 && i < len(g.pel); attempts-- {
		p := g.pel[i]
		if st.entry(p.id) == nil {
			g.ack(p) // i now holds the next one
			deleted = append(deleted, p.id)
			count--
			continue
		}
		i++
		if minIdle != 0 && now-p.delivered < minIdle {
			continue
		}
		p.delivered = now
		if !justID {
			p.count++
		}
		p.give(cs)
		claimed = append(claimed, p.id)
		count--
		cs.active = now
	}
	var cursor streamID
	if i < len(g.pel) {
		cursor = g.pel[i].id
	}
	c.addArray(3)
	c.addID(cursor)
	c.addArray(len(claimed))
	for _, id := range claimed {
		if justID {
			c.addID(id)
		} else {
			c.addEntry(st.entry(id))
		}
	}
	c.addArray(len(deleted))
	for _, id := range deleted {
		c.addID(id)
	}
}
