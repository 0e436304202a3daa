package server

import (
	"slices"
	"strings"
)

// COMMAND and its subcommands answer from the command table (table.go)
// in valkey 8.0's form.

// sortedCommands returns the top-level commands by name (valkey's order
// is its hash table's; clients do not rely on one).
func sortedCommands() []*command {
	all := make([]*command, 0, len(commands))
	for _, cmd := range commands {
		all = append(all, cmd)
	}
	slices.SortFunc(all, func(a, b *command) int { return strings.Compare(a.name, b.name) })
	return all
}

// sortedSubs returns cmd's subcommands by name.
func (cmd *command) sortedSubs() []*command {
	subs := make([]*command, 0, len(cmd.subs))
	for _, s := range cmd.subs {
		subs = append(subs, s)
	}
	slices.SortFunc(subs, func(a, b *command) int { return strings.Compare(a.name, b.name) })
	return subs
}

// COMMAND: every command's info.
func cmdCommand(c *conn, _ [][]byte) {
	all := sortedCommands()
	c.addArray(len(all))
	for _, cmd := range all {
		c.addCommandInfo(cmd)
	}
}

func cmdCommandCount(c *conn, _ [][]byte) { c.addInt(int64(len(commands))) }

// COMMAND INFO [name ...]: a null for a name that is no command.
func cmdCommandInfo(c *conn, args [][]byte) {
	if len(args) == 2 {
		cmdCommand(c, args)
		return
	}
	c.addArray(len(args) - 2)
	for _, name := range args[2:] {
		if cmd := lookupCommand(string(name)); cmd != nil {
			c.addCommandInfo(cmd)
		} else {
			c.addNull()
		}
	}
}

// addCommandInfo is valkey's addReplyCommandInfo: name, arity, flags,
// first key, last key, step, ACL categories, tips, key specs,
// subcommands.
func (c *conn) addCommandInfo(cmd *command) {
	k := cmd.keys
	specs := k.specs()
	c.addArray(10)
	c.addBulkString(cmd.name)
	c.addInt(int64(cmd.arity))
	c.addSimpleSet(names(cmd.flags, flagNames), "")
	first, last, step := k.legacyRange()
	c.addInt(int64(first))
	c.addInt(int64(last))
	c.addInt(int64(step))
	c.addSimpleSet(names(cmd.acl, aclNames), "@")
	tips := strings.Fields(cmd.tips)
	c.addSet(len(tips))
	for _, t := range tips {
		c.addBulkString(t)
	}
	if k.none {
		c.addSet(0)
	} else {
		c.addSet(len(specs))
		for _, sp := range specs {
			c.addKeySpec(sp)
		}
	}
	if cmd.subs == nil {
		c.addSet(0)
		return
	}
	c.addArray(len(cmd.subs))
	for _, sub := range cmd.sortedSubs() {
		c.addCommandInfo(sub)
	}
}

// addSimpleSet replies with a set of simple strings, each with prefix.
func (c *conn) addSimpleSet(items []string, prefix string) {
	c.addSet(len(items))
	for _, s := range items {
		c.addSimple(prefix + s)
	}
}

// addKeySpec is one of valkey's key specs: of the index and range kinds
// that k, a legacy range, makes; index and keynum; or unknown.
func (c *conn) addKeySpec(k keySpec) {
	if k.notes != "" {
		c.addMap(4)
		c.addBulkString("notes")
		c.addBulkString(k.notes)
	} else {
		c.addMap(3)
	}
	c.addBulkString("flags")
	c.addSimpleSet(names(k.flags, keyFlagNames), "")
	c.addBulkString("begin_search")
	c.addMap(2)
	c.addBulkString("type")
	if k.find == findUnknown || k.find == findSortStore {
		c.addBulkString("unknown")
		c.addBulkString("spec")
		c.addMap(0)
		c.addBulkString("find_keys")
		c.addMap(2)
		c.addBulkString("type")
		c.addBulkString("unknown")
		c.addBulkString("spec")
		c.addMap(0)
		return
	}
	if k.keyword != "" {
		c.addBulkString("keyword")
		c.addBulkString("spec")
		c.addMap(2)
		c.addBulkString("keyword")
		c.addBulkString(k.keyword)
		c.addBulkString("startfrom")
		c.addInt(int64(k.first))
	} else {
		c.addBulkString("index")
		c.addBulkString("spec")
		c.addMap(1)
		c.addBulkString("index")
		c.addInt(int64(k.first))
	}
	c.addBulkString("find_keys")
	c.addMap(2)
	c.addBulkString("type")
	if k.numkeys {
		c.addBulkString("keynum")
		c.addBulkString("spec")
		c.addMap(3)
		c.addBulkString("keynumidx")
		c.addInt(0)
		c.addBulkString("firstkey")
		c.addInt(1)
		c.addBulkString("keystep")
		c.addInt(1)
		return
	}
	c.addBulkString("range")
	c.addBulkString("spec")
	c.addMap(3)
	lastKey := k.last // relative to the first key, or to the end
	if lastKey >= 0 && k.keyword == "" {
		lastKey -= k.first
	}
	c.addBulkString("lastkey")
	c.addInt(int64(lastKey))
	c.addBulkString("keystep")
	c.addInt(int64(k.step))
	c.addBulkString("limit")
	c.addInt(int64(k.limit))
}

// COMMAND DOCS [name ...]: a map from name to docs, without the names
// that are no command.
func cmdCommandDocs(c *conn, args [][]byte) {
	var found []*command
	if len(args) == 2 {
		found = sortedCommands()
	}
	for _, name := range args[2:] {
		if cmd := lookupCommand(string(name)); cmd != nil {
			found = append(found, cmd)
		}
	}
	c.addMap(len(found))
	for _, cmd := range found {
		c.addBulkString(cmd.name)
		c.addCommandDocs(cmd)
	}
}

// addCommandDocs is a short form of valkey's addReplyCommandDocs: the
// summary, since and group, and the subcommands'; no arguments.
func (c *conn) addCommandDocs(cmd *command) {
	n := 3
	if cmd.subs != nil {
		n++
	}
	c.addMap(n)
	c.addBulkString("summary")
	c.addBulkString(cmd.doc.summary)
	c.addBulkString("since")
	c.addBulkString(cmd.doc.since)
	c.addBulkString("group")
	c.addBulkString(cmd.doc.group)
	if cmd.subs != nil {
		c.addBulkString("subcommands")
		c.addMap(len(cmd.subs))
		for _, sub := range cmd.sortedSubs() {
			c.addBulkString(sub.name)
			c.addCommandDocs(sub)
		}
	}
}

// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]:
// the names of the commands and subcommands.
func cmdCommandList(c *conn, args [][]byte) {
	keep := func(*command) bool { return true }
	for i := 2; i < len(args); i += 3 {
		// As valkey: FILTERBY and its two arguments must end the request.
		if !eqFold(args[i], "filterby") || len(args)-1-i != 2 {
			c.addError(msgSyntax)
			return
		}
		arg := string(args[i+2])
		switch {
		case eqFold(args[i+1], "module"):
			keep = func(*command) bool { return false } // no modules here
		case eqFold(args[i+1], "aclcat"):
			cat := aclCats(0)
			if j := slices.Index(aclNames, strings.ToLower(arg)); j >= 0 {
				cat = 1 << j
			}
			keep = func(cmd *command) bool { return cmd.acl&cat != 0 }
		case eqFold(args[i+1], "pattern"):
			pattern := strings.ToLower(arg)
			keep = func(cmd *command) bool { return globMatch(pattern, cmd.name) }
		default:
			c.addError(msgSyntax)
			return
		}
	}
	var list []string
	for _, cmd := range sortedCommands() {
		if keep(cmd) {
			list = append(list, cmd.name)
		}
		for _, sub := range cmd.sortedSubs() {
			if keep(sub) {
				list = append(list, sub.name)
			}
		}
	}
	c.addArray(len(list))
	for _, n := range list {
		c.addBulkString(n)
	}
}

// COMMAND GETKEYS command [arg ...], COMMAND GETKEYSANDFLAGS: the keys of
// a request, as the table's key positions find them.
func cmdCommandGetKeys(c *conn, args [][]byte) {
	withFlags := eqFold(args[1], "getkeysandflags")
	req := args[2:]
	cmd := lookupCommand(string(req[0]))
	if cmd != nil && cmd.subs != nil && len(req) > 1 {
		cmd = cmd.subs[strings.ToLower(string(req[1]))]
	}
	switch {
	case cmd == nil:
		c.addError("ERR Invalid command specified")
		return
	case cmd.keys.none || cmd.keys.first == 0:
		c.addError("ERR The command has no key arguments")
		return
	case cmd.arity > 0 && len(req) != cmd.arity || len(req) < -cmd.arity:
		c.addError("ERR Invalid number of arguments specified for command")
		return
	}
	keys := cmd.keys.appendKeys(nil, req)
	if len(keys) == 0 && cmd.flags&fNoMandatoryKeys == 0 { // valkey's CMD_NO_MANDATORY_KEYS (EVAL, FCALL)
		c.addError("ERR Invalid arguments specified for command")
		return
	}
	// Each key's flags are its spec's: the specs in turn, as many keys as
	// each finds.
	var flags []keyFlags
	for _, sp := range cmd.keys.specs() {
		sp.then = nil
		for range sp.appendKeys(nil, req) {
			flags = append(flags, sp.flags)
		}
	}
	c.addArray(len(keys))
	for i, k := range keys {
		if withFlags {
			c.addArray(2)
			c.addBulk(k)
			c.addSimpleSet(names(flags[i], keyFlagNames), "")
		} else {
			c.addBulk(k)
		}
	}
}

func cmdCommandHelp(c *conn, _ [][]byte) { c.addHelp(commandHelp) }

var commandHelp = []string{
	"COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"(no subcommand)",
	"    Return details about all commands.",
	"COUNT",
	"    Return the total number of commands in this server.",
	"LIST",
	"    Return a list of all commands in this server.",
	"INFO [<command-name> ...]",
	"    Return details about multiple commands.",
	"    If no command names are given, documentation details for all",
	"    commands are returned.",
	"DOCS [<command-name> ...]",
	"    Return documentation details about multiple commands.",
	"    If no command names are given, documentation details for all",
	"    commands are returned.",
	"GETKEYS <full-command>",
	"    Return the keys from a full command.",
	"GETKEYSANDFLAGS <full-command>",
	"    Return the keys and the access flags from a full command.",
	"HELP",
	"    Print this help.",
}
