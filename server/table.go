package server

import (
	"fmt"
	"strings"
)

// The command table: one row per command and subcommand, as valkey 8.0's
// (src/commands/*.json) describes it. Everything the server says or
// decides about a command comes from its row: the arity check and the
// NOAUTH and MULTI checks (conn.exec), the keys that cluster routing and
// EXEC's locks look at (keysOf), COMMAND, COMMAND INFO, DOCS, COUNT, LIST
// and GETKEYS (cmdinfo.go). TestCommandTable checks every row is complete
// and TestCommandInfoMatchesValkey that each agrees with valkey-server's.

// command is a row of the command table.
type command struct {
	// name is the lower-case name; a subcommand's is "container|sub".
	name string
	// arity counts the command name: n > 0 is exactly n arguments, n < 0
	// at least -n, as in valkey's command table. A subcommand's counts
	// the container's name too.
	arity int
	flags cmdFlags
	acl   aclCats
	keys  keySpec
	// dbArgs is the first and last argument that is a database index
	// (SELECT, MOVE, SWAPDB; a last below 0 counts from the end, and
	// arguments there that are no index are passed over: COPY's DB may
	// come anywhere after its keys): a transaction makes those databases
	// when it queues the command, so that EXEC finds them all there
	// (multi.go).
	dbArgs [2]int8
	tips   string // valkey's command tips, space-separated
	doc    doc
	run    func(c *conn, args [][]byte) // nil for a container
	// anyKey: the command may touch keys it does not name (a script,
	// outside cluster mode): it, or the EXEC that runs it, holds every
	// shard's lock.
	anyKey bool
	// subs are a container's subcommands by lower-case name; parent is a
	// subcommand's container.
	subs   map[string]*command
	parent *command
}

// doc is what COMMAND DOCS says of a command beside its name.
type doc struct{ group, since, summary string }

// cmdFlags are valkey's command flags, in the order COMMAND INFO lists
// them (valkey's addReplyFlagsForCommand); those valkey hides are left out.
type cmdFlags uint32

const (
	fWrite cmdFlags = 1 << iota
	fReadonly
	fDenyOOM
	fModule
	fAdmin
	fPubsub
	fNoScript
	fBlocking
	fLoading
	fStale
	fSkipMonitor
	fSkipSlowlog
	fAsking
	fFast
	fNoAuth
	fNoMandatoryKeys
	fNoAsyncLoading
	fNoMulti
	fMovableKeys
	fAllowBusy
)

var flagNames = []string{"write", "readonly", "denyoom", "module", "admin", "pubsub", "noscript", "blocking",
	"loading", "stale", "skip_monitor", "skip_slowlog", "asking", "fast", "no_auth", "no_mandatory_keys",
	"no_async_loading", "no_multi", "movablekeys", "allow_busy"}

// aclCats are valkey's ACL categories, in its order (acl.c).
type aclCats uint32

const (
	cKeyspace aclCats = 1 << iota
	cRead
	cWrite
	cSet
	cSortedSet
	cList
	cHash
	cString
	cBitmap
	cHyperLogLog
	cGeo
	cStream
	cPubsub
	cAdmin
	cFast
	cSlow
	cBlocking
	cDangerous
	cConnection
	cTransaction
	cScripting
)

var aclNames = []string{"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
	"hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking", "dangerous", "connection",
	"transaction", "scripting"}

// keyFlags are the flags of a key specification, in valkey's order.
type keyFlags uint16

const (
	kRO keyFlags = 1 << iota
	kRW
	kOW
	kRM
	kAccess
	kUpdate
	kInsert
	kDelete
	kNotKey
	kIncomplete
	kVariableFlags
)

var keyFlagNames = []string{"RO", "RW", "OW", "RM", "access", "update", "insert", "delete", "not_key",
	"incomplete", "variable_flags"}

// names lists the names of the bits set in f, in the order of all.
func names[F ~uint16 | ~uint32](f F, all []string) []string {
	var out []string
	for i, n := range all {
		if f&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// keySpec says which arguments of a command are keys, in valkey's legacy
// form: from first to last (negative: counted from the end, -1 the last
// argument), every step-th; and how the command uses them. A command whose
// keys are used in different ways (RENAME reads and deletes its first,
// writes its second) chains a spec for each in then, in the order of
// valkey's key specs; COMMAND INFO's legacy range runs from the first's
// first key to the last's last. The zero value is a row that forgot its
// keys: a row without any says noKeys.
//
// A spec with a keyword (XREAD's STREAMS) is valkey's keyword search
// instead: the keys follow the first argument from first on that is the
// keyword (case-insensitively), and with a limit only the first
// 1/limit of the arguments after it are keys (last is then -1). COMMAND
// INFO's legacy range of such a command is 0 0 0 (its keys move).
type keySpec struct {
	first, last, step int
	flags             keyFlags
	notes             string
	none              bool
	// numkeys: valkey's keynum spec (EVAL, FCALL): the argument at first
	// counts the keys that follow it; last is unused and step is 1.
	numkeys bool
	// keyword, when set, makes a spec of valkey's keyword kind: its
	// keys begin after the first keyword (any case) at first or after it
	// (XREAD's STREAMS, GEORADIUS's STORE); last is then valkey's lastkey,
	// relative to that first key (-1: to the end), and limit, when not 0,
	// takes the first 1/limit of the arguments after the keyword.
	keyword string
	limit   int
	// find is how a spec that is none of those finds its keys: as a
	// range (the default), or not at all (SORT's BY and GET), or as SORT's
	// STORE.
	find keyFind
	then *keySpec
}

// keyFind is how a key spec finds its keys from its first argument.
type keyFind uint8

const (
	// findRange: from first to last, every step-th (valkey's index and
	// range spec).
	findRange keyFind = iota
	// findUnknown: keys named by the values of other keys (SORT's BY and
	// GET patterns), which no spec finds: EXEC locks every shard for such
	// a command.
	findUnknown
	// findSortStore: SORT's STORE destination, an unknown spec to
	// COMMAND INFO that valkey's sortGetKeys finds.
	findSortStore
)

var noKeys = keySpec{none: true}

// keyNum is a keynum spec: the argument at index counts the keys after it.
func keyNum(index int, flags keyFlags, notes ...string) keySpec {
	return keySpec{first: index, step: 1, flags: flags, numkeys: true, notes: strings.Join(notes, "")}
}

func keyRange(first, last, step int, flags keyFlags, notes ...string) keySpec {
	return keySpec{first: first, last: last, step: step, flags: flags, notes: strings.Join(notes, "")}
}

// keywordKeys is a keyword spec: the keys after keyword (searched from
// the argument startFrom on) up to lastKey relative to the first (-1: to
// the end), the first 1/limit of them when limit is not 0.
func keywordKeys(keyword string, startFrom, lastKey, limit int, flags keyFlags) keySpec {
	return keySpec{first: startFrom, last: lastKey, step: 1, limit: limit, keyword: keyword, flags: flags}
}

// keyUnknown is a key spec valkey says it cannot find (SORT's), found
// here as find says.
func keyUnknown(find keyFind, flags keyFlags, notes string) keySpec {
	return keySpec{first: 1, step: 1, flags: flags, find: find, notes: notes}
}

// readsUnknownKeys reports whether a command with key spec k may read
// keys none of its specs finds (SORT's BY and GET).
func (k keySpec) readsUnknownKeys() bool {
	for sp := &k; sp != nil; sp = sp.then {
		if sp.find == findUnknown {
			return true
		}
	}
	return false
}

// legacyRange is the first key, last key and step COMMAND INFO gives: of
// the range specs, as valkey's populateCommandLegacyRangeSpec; 0, 0, 0
// when the first spec is none.
func (k keySpec) legacyRange() (first, last, step int) {
	if !k.isRange() {
		return 0, 0, 0
	}
	first, last, step = k.first, k.last, k.step
	for sp := k.then; sp != nil; sp = sp.then {
		if sp.isRange() {
			last = sp.last
		}
	}
	return first, last, step
}

// isRange reports whether k is of valkey's index and range kind.
func (k keySpec) isRange() bool {
	return k.find == findRange && !k.numkeys && k.keyword == ""
}

// and returns k followed by the key spec next.
func (k keySpec) and(next keySpec) keySpec {
	if k.then != nil {
		next = k.then.and(next)
	}
	k.then = &next
	return k
}

// specs returns k and the specs chained to it.
func (k keySpec) specs() []keySpec {
	all := []keySpec{k}
	for n := k.then; n != nil; n = n.then {
		all = append(all, *n)
	}
	return all
}

// appendKeys appends the keys of a request with this key spec (and those
// chained to it) to dst: valkey's getKeysFromCommand.
func (k keySpec) appendKeys(dst [][]byte, args [][]byte) [][]byte {
	for sp := &k; sp != nil; sp = sp.then {
		if sp.none || sp.first >= len(args) {
			continue
		}
		switch sp.find {
		case findUnknown:
			continue
		case findSortStore:
			dst = appendSortStore(dst, args)
			continue
		}
		if sp.numkeys {
			n, ok := parseInt(args[sp.first])
			if ok && n > 0 && n <= int64(len(args)-sp.first-1) {
				dst = append(dst, args[sp.first+1:sp.first+1+int(n)]...)
			}
			continue
		}
		first, last := sp.first, sp.last
		if sp.keyword != "" {
			// As valkey's getKeysUsingKeySpecs: the search stops
			// before the last argument.
			first = 0
			for i := sp.first; i < len(args)-1; i++ {
				if eqFold(args[i], strings.ToLower(sp.keyword)) {
					first = i + 1
					break
				}
			}
			if first == 0 {
				continue
			}
			switch {
			case sp.limit > 0:
				last = first + (len(args)-first)/sp.limit - 1
			case last >= 0:
				last += first
			}
		}
		if last < 0 {
			last += len(args)
		}
		for i := first; i <= last && i < len(args); i += sp.step {
			dst = append(dst, args[i])
		}
	}
	return dst
}

// appendSortStore appends SORT's STORE destination, the last one, as
// valkey's sortGetKeys finds it: passing over LIMIT's two arguments and
// BY's and GET's one.
func appendSortStore(dst [][]byte, args [][]byte) [][]byte {
	var store []byte
	for i := 2; i < len(args); i++ {
		switch {
		case eqFold(args[i], "limit"):
			i += 2
		case eqFold(args[i], "get"), eqFold(args[i], "by"):
			i++
		case eqFold(args[i], "store") && i+1 < len(args):
			store = args[i+1]
		}
	}
	if store != nil {
		dst = append(dst, store)
	}
	return dst
}

// SORT's key specs' notes, as valkey's.
const (
	sortByGetNotes = "For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort"
	sortStoreNotes = "For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array"
)

// commands maps lower-case names to the top-level commands (COMMAND
// COUNT's); their subcommands hang from them. Filled by init: some
// commands (COMMAND) read it.
var commands map[string]*command

// commandTable returns the rows; see command.
func commandTable() []command {
	return []command{
		{name: "ping", arity: -1, flags: fFast, acl: cFast | cConnection, keys: noKeys, tips: "request_policy:all_shards response_policy:all_succeeded",
			doc: doc{"connection", "1.0.0", "Returns the server's liveliness response."}, run: cmdPing},
		{name: "echo", arity: 2, flags: fLoading | fStale | fFast, acl: cFast | cConnection, keys: noKeys,
			doc: doc{"connection", "1.0.0", "Returns the given string."}, run: cmdEcho},
		{name: "hello", arity: -1, flags: fNoScript | fLoading | fStale | fFast | fNoAuth | fAllowBusy, acl: cFast | cConnection, keys: noKeys,
			doc: doc{"connection", "6.0.0", "Handshakes with the server."}, run: cmdHello},
		{name: "auth", arity: -2, flags: fNoScript | fLoading | fStale | fFast | fNoAuth | fAllowBusy, acl: cFast | cConnection, keys: noKeys,
			doc: doc{"connection", "1.0.0", "Authenticates the connection."}, run: cmdAuth},
		{name: "select", arity: 2, flags: fLoading | fStale | fFast, acl: cFast | cConnection, keys: noKeys, dbArgs: [2]int8{1, 1},
			doc: doc{"connection", "1.0.0", "Changes the selected database."}, run: cmdSelect},
		{name: "quit", arity: -1, flags: fNoScript | fLoading | fStale | fFast | fNoAuth | fAllowBusy, acl: cFast | cConnection, keys: noKeys,
			doc: doc{"connection", "1.0.0", "Closes the connection."}, run: cmdQuit},
		{name: "client", arity: -2, flags: 0, acl: cSlow, keys: noKeys,
			doc: doc{"connection", "2.4.0", "A container for client connection commands."}},
		{name: "client|setname", arity: 3, flags: fNoScript | fLoading | fStale, acl: cSlow | cConnection, keys: noKeys, tips: "request_policy:all_nodes response_policy:all_succeeded",
			doc: doc{"connection", "2.6.9", "Sets the connection name."}, run: cmdClientSetName},
		{name: "client|getname", arity: 2, flags: fNoScript | fLoading | fStale, acl: cSlow | cConnection, keys: noKeys,
			doc: doc{"connection", "2.6.9", "Returns the name of the connection."}, run: cmdClientGetName},
		{name: "client|id", arity: 2, flags: fNoScript | fLoading | fStale, acl: cSlow | cConnection, keys: noKeys,
			doc: doc{"connection", "5.0.0", "Returns the unique client ID of the connection."}, run: cmdClientID},
		{name: "client|setinfo", arity: 4, flags: fNoScript | fLoading | fStale, acl: cSlow | cConnection, keys: noKeys, tips: "request_policy:all_nodes response_policy:all_succeeded",
			doc: doc{"connection", "7.2.0", "Sets information specific to the client or connection."}, run: cmdClientSetInfo},
		{name: "client|info", arity: 2, flags: fNoScript | fLoading | fStale, acl: cSlow | cConnection, keys: noKeys, tips: "nondeterministic_output",
			doc: doc{"connection", "6.2.0", "Returns information about the connection."}, run: cmdClientInfo},
		{name: "client|tracking", arity: -3, flags: fNoScript | fLoading | fStale, acl: cSlow | cConnection, keys: noKeys,
			doc: doc{"connection", "6.0.0", "Controls server-assisted client-side caching for the connection."}, run: cmdClientTracking},
		{name: "client|caching", arity: 3, flags: fNoScript | fLoading | fStale, acl: cSlow | cConnection, keys: noKeys,
			doc: doc{"connection", "6.0.0", "Instructs the server whether to track the keys in the next request."}, run: cmdClientCaching},
		{name: "client|trackinginfo", arity: 2, flags: fNoScript | fLoading | fStale, acl: cSlow | cConnection, keys: noKeys,
			doc: doc{"connection", "6.2.0", "Returns information about server-assisted client-side caching for the connection."}, run: cmdClientTrackingInfo},
		{name: "client|getredir", arity: 2, flags: fNoScript | fLoading | fStale, acl: cSlow | cConnection, keys: noKeys,
			doc: doc{"connection", "6.0.0", "Returns the client ID to which the connection's tracking notifications are redirected."}, run: cmdClientGetRedir},
		{name: "client|no-evict", arity: 3, flags: fAdmin | fNoScript | fLoading | fStale, acl: cAdmin | cSlow | cDangerous | cConnection, keys: noKeys,
			doc: doc{"connection", "7.0.0", "Sets the client eviction mode of the connection."}, run: cmdClientOnOff},
		{name: "client|no-touch", arity: 3, flags: fNoScript | fLoading | fStale, acl: cSlow | cConnection, keys: noKeys,
			doc: doc{"connection", "7.2.0", "Controls whether commands sent by the client affect the LRU/LFU of accessed keys."}, run: cmdClientOnOff},
		{name: "client|help", arity: 2, flags: fLoading | fStale, acl: cSlow | cConnection, keys: noKeys,
			doc: doc{"connection", "5.0.0", "Returns helpful text about the different subcommands."}, run: cmdClientHelp},
		{name: "readonly", arity: 1, flags: fLoading | fStale | fFast, acl: cFast | cConnection, keys: noKeys,
			doc: doc{"cluster", "3.0.0", "Enables read-only queries for a connection to a Valkey replica node."}, run: replyOK},
		{name: "readwrite", arity: 1, flags: fLoading | fStale | fFast, acl: cFast | cConnection, keys: noKeys,
			doc: doc{"cluster", "3.0.0", "Enables read-write queries for a connection to a Valkey replica node."}, run: replyOK},
		{name: "flushall", arity: -1, flags: fWrite, acl: cKeyspace | cWrite | cSlow | cDangerous, keys: noKeys, tips: "request_policy:all_shards response_policy:all_succeeded",
			doc: doc{"server", "1.0.0", "Removes all keys from all databases."}, run: cmdFlush},
		{name: "flushdb", arity: -1, flags: fWrite, acl: cKeyspace | cWrite | cSlow | cDangerous, keys: noKeys, tips: "request_policy:all_shards response_policy:all_succeeded",
			doc: doc{"server", "1.0.0", "Remove all keys from the current database."}, run: cmdFlush},
		{name: "dbsize", arity: 1, flags: fReadonly | fFast, acl: cKeyspace | cRead | cFast, keys: noKeys, tips: "request_policy:all_shards response_policy:agg_sum",
			doc: doc{"server", "1.0.0", "Returns the number of keys in the database."}, run: cmdDBSize},
		{name: "time", arity: 1, flags: fLoading | fStale | fFast, acl: cFast, keys: noKeys, tips: "nondeterministic_output",
			doc: doc{"server", "2.6.0", "Returns the server time."}, run: cmdTime},
		{name: "swapdb", arity: 3, flags: fWrite | fFast, acl: cKeyspace | cWrite | cFast | cDangerous, keys: noKeys, dbArgs: [2]int8{1, 2},
			doc: doc{"server", "4.0.0", "Swaps two databases."}, run: cmdSwapDB},
		{name: "config", arity: -2, flags: 0, acl: cSlow, keys: noKeys,
			doc: doc{"server", "2.0.0", "A container for server configuration commands."}},
		{name: "config|get", arity: -3, flags: fAdmin | fNoScript | fLoading | fStale, acl: cAdmin | cSlow | cDangerous, keys: noKeys,
			doc: doc{"server", "2.0.0", "Returns the effective values of configuration parameters."}, run: cmdConfigGet},
		{name: "config|set", arity: -4, flags: fAdmin | fNoScript | fLoading | fStale, acl: cAdmin | cSlow | cDangerous, keys: noKeys, tips: "request_policy:all_nodes response_policy:all_succeeded",
			doc: doc{"server", "2.0.0", "Sets configuration parameters in-flight."}, run: cmdConfigSet},
		{name: "config|resetstat", arity: 2, flags: fAdmin | fNoScript | fLoading | fStale, acl: cAdmin | cSlow | cDangerous, keys: noKeys, tips: "request_policy:all_nodes response_policy:all_succeeded",
			doc: doc{"server", "2.0.0", "Resets the server's statistics."}, run: replyOK},
		{name: "info", arity: -1, flags: fLoading | fStale, acl: cSlow | cDangerous, keys: noKeys, tips: "nondeterministic_output request_policy:all_shards response_policy:special",
			doc: doc{"server", "1.0.0", "Returns information and statistics about the server."}, run: cmdInfo},
		{name: "command", arity: -1, flags: fLoading | fStale, acl: cSlow | cConnection, keys: noKeys, tips: "nondeterministic_output_order",
			doc: doc{"server", "2.8.13", "Returns detailed information about all commands."}, run: cmdCommand},
		{name: "command|count", arity: 2, flags: fLoading | fStale, acl: cSlow | cConnection, keys: noKeys,
			doc: doc{"server", "2.8.13", "Returns a count of commands."}, run: cmdCommandCount},
		{name: "command|list", arity: -2, flags: fLoading | fStale, acl: cSlow | cConnection, keys: noKeys, tips: "nondeterministic_output_order",
			doc: doc{"server", "7.0.0", "Returns a list of command names."}, run: cmdCommandList},
		{name: "command|docs", arity: -2, flags: fLoading | fStale, acl: cSlow | cConnection, keys: noKeys, tips: "nondeterministic_output_order",
			doc: doc{"server", "7.0.0", "Returns documentary information about one, multiple or all commands."}, run: cmdCommandDocs},
		{name: "command|info", arity: -2, flags: fLoading | fStale, acl: cSlow | cConnection, keys: noKeys, tips: "nondeterministic_output_order",
			doc: doc{"server", "2.8.13", "Returns information about one, multiple or all commands."}, run: cmdCommandInfo},
		{name: "command|getkeys", arity: -3, flags: fLoading | fStale, acl: cSlow | cConnection, keys: noKeys,
			doc: doc{"server", "2.8.13", "Extracts the key names from an arbitrary command."}, run: cmdCommandGetKeys},
		{name: "command|getkeysandflags", arity: -3, flags: fLoading | fStale, acl: cSlow | cConnection, keys: noKeys,
			doc: doc{"server", "7.0.0", "Extracts the key names and access flags for an arbitrary command."}, run: cmdCommandGetKeys},
		{name: "command|help", arity: 2, flags: fLoading | fStale, acl: cSlow | cConnection, keys: noKeys,
			doc: doc{"server", "5.0.0", "Returns helpful text about the different subcommands."}, run: cmdCommandHelp},
		{name: "cluster", arity: -2, flags: 0, acl: cSlow, keys: noKeys,
			doc: doc{"cluster", "3.0.0", "A container for Cluster commands."}},
		{name: "cluster|myid", arity: 2, flags: fLoading | fStale, acl: cSlow, keys: noKeys,
			doc: doc{"cluster", "3.0.0", "Returns the ID of a node."}, run: cmdClusterMyID},
		{name: "cluster|keyslot", arity: 3, flags: fStale, acl: cSlow, keys: noKeys,
			doc: doc{"cluster", "3.0.0", "Returns the hash slot for a key."}, run: cmdClusterKeySlot},
		{name: "cluster|countkeysinslot", arity: 3, flags: fStale, acl: cSlow, keys: noKeys,
			doc: doc{"cluster", "3.0.0", "Returns the number of keys in a hash slot."}, run: cmdClusterCountKeysInSlot},
		{name: "cluster|getkeysinslot", arity: 4, flags: fStale, acl: cSlow, keys: noKeys, tips: "nondeterministic_output",
			doc: doc{"cluster", "3.0.0", "Returns the key names in a hash slot."}, run: cmdClusterGetKeysInSlot},
		{name: "cluster|info", arity: 2, flags: fLoading | fStale, acl: cSlow, keys: noKeys, tips: "nondeterministic_output",
			doc: doc{"cluster", "3.0.0", "Returns information about the state of a node."}, run: cmdClusterInfo},
		{name: "cluster|slots", arity: 2, flags: fLoading | fStale, acl: cSlow, keys: noKeys, tips: "nondeterministic_output",
			doc: doc{"cluster", "3.0.0", "Returns the mapping of cluster slots to nodes."}, run: cmdClusterSlots},
		{name: "cluster|shards", arity: 2, flags: fLoading | fStale, acl: cSlow, keys: noKeys, tips: "nondeterministic_output",
			doc: doc{"cluster", "7.0.0", "Returns the mapping of cluster slots to shards."}, run: cmdClusterShards},
		{name: "cluster|nodes", arity: 2, flags: fLoading | fStale, acl: cSlow, keys: noKeys, tips: "nondeterministic_output",
			doc: doc{"cluster", "3.0.0", "Returns the cluster configuration for a node."}, run: cmdClusterNodes},
		{name: "asking", arity: 1, flags: fFast, acl: cFast | cConnection, keys: noKeys,
			doc: doc{"cluster", "3.0.0", "Signals that a cluster client is following an -ASK redirect."}, run: cmdAsking},
		{name: "del", arity: -2, flags: fWrite, acl: cKeyspace | cWrite | cSlow, keys: keyRange(1, -1, 1, kRM|kDelete), tips: "request_policy:multi_shard response_policy:agg_sum",
			doc: doc{"generic", "1.0.0", "Deletes one or more keys."}, run: cmdDel},
		{name: "unlink", arity: -2, flags: fWrite | fFast, acl: cKeyspace | cWrite | cFast, keys: keyRange(1, -1, 1, kRM|kDelete), tips: "request_policy:multi_shard response_policy:agg_sum",
			doc: doc{"generic", "4.0.0", "Asynchronously deletes one or more keys."}, run: cmdDel},
		{name: "exists", arity: -2, flags: fReadonly | fFast, acl: cKeyspace | cRead | cFast, keys: keyRange(1, -1, 1, kRO), tips: "request_policy:multi_shard response_policy:agg_sum",
			doc: doc{"generic", "1.0.0", "Determines whether one or more keys exist."}, run: cmdExists},
		{name: "type", arity: 2, flags: fReadonly | fFast, acl: cKeyspace | cRead | cFast, keys: keyRange(1, 1, 1, kRO),
			doc: doc{"generic", "1.0.0", "Determines the type of value stored at a key."}, run: cmdType},
		{name: "move", arity: 3, flags: fWrite | fFast, acl: cKeyspace | cWrite | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kUpdate), dbArgs: [2]int8{2, 2},
			doc: doc{"generic", "1.0.0", "Moves a key to another database."}, run: cmdMove},
		{name: "keys", arity: 2, flags: fReadonly, acl: cKeyspace | cRead | cSlow | cDangerous, keys: noKeys, tips: "request_policy:all_shards nondeterministic_output_order",
			doc: doc{"generic", "1.0.0", "Returns all key names that match a pattern."}, run: cmdKeys},
		{name: "scan", arity: -2, flags: fReadonly, acl: cKeyspace | cRead | cSlow, keys: noKeys, tips: "nondeterministic_output request_policy:special response_policy:special",
			doc: doc{"generic", "2.8.0", "Iterates over the key names in the database."}, run: cmdScan},
		{name: "expire", arity: -3, flags: fWrite | fFast, acl: cKeyspace | cWrite | cFast, keys: keyRange(1, 1, 1, kRW|kUpdate),
			doc: doc{"generic", "1.0.0", "Sets the expiration time of a key in seconds."}, run: cmdExpire},
		{name: "pexpire", arity: -3, flags: fWrite | fFast, acl: cKeyspace | cWrite | cFast, keys: keyRange(1, 1, 1, kRW|kUpdate),
			doc: doc{"generic", "2.6.0", "Sets the expiration time of a key in milliseconds."}, run: cmdExpire},
		{name: "expireat", arity: -3, flags: fWrite | fFast, acl: cKeyspace | cWrite | cFast, keys: keyRange(1, 1, 1, kRW|kUpdate),
			doc: doc{"generic", "1.2.0", "Sets the expiration time of a key to a Unix timestamp."}, run: cmdExpire},
		{name: "pexpireat", arity: -3, flags: fWrite | fFast, acl: cKeyspace | cWrite | cFast, keys: keyRange(1, 1, 1, kRW|kUpdate),
			doc: doc{"generic", "2.6.0", "Sets the expiration time of a key to a Unix milliseconds timestamp."}, run: cmdExpire},
		{name: "ttl", arity: 2, flags: fReadonly | fFast, acl: cKeyspace | cRead | cFast, keys: keyRange(1, 1, 1, kRO|kAccess), tips: "nondeterministic_output",
			doc: doc{"generic", "1.0.0", "Returns the expiration time in seconds of a key."}, run: cmdTTL},
		{name: "pttl", arity: 2, flags: fReadonly | fFast, acl: cKeyspace | cRead | cFast, keys: keyRange(1, 1, 1, kRO|kAccess), tips: "nondeterministic_output",
			doc: doc{"generic", "2.6.0", "Returns the expiration time in milliseconds of a key."}, run: cmdTTL},
		{name: "persist", arity: 2, flags: fWrite | fFast, acl: cKeyspace | cWrite | cFast, keys: keyRange(1, 1, 1, kRW|kUpdate),
			doc: doc{"generic", "2.2.0", "Removes the expiration time of a key."}, run: cmdPersist},
		{name: "touch", arity: -2, flags: fReadonly | fFast, acl: cKeyspace | cRead | cFast, keys: keyRange(1, -1, 1, kRO), tips: "request_policy:multi_shard response_policy:agg_sum",
			doc: doc{"generic", "3.2.1", "Returns the number of existing keys out of those specified after updating the time they were last accessed."}, run: cmdTouch},
		{name: "expiretime", arity: 2, flags: fReadonly | fFast, acl: cKeyspace | cRead | cFast, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"generic", "7.0.0", "Returns the expiration time of a key as a Unix timestamp."}, run: cmdExpireTime},
		{name: "pexpiretime", arity: 2, flags: fReadonly | fFast, acl: cKeyspace | cRead | cFast, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"generic", "7.0.0", "Returns the expiration time of a key as a Unix milliseconds timestamp."}, run: cmdExpireTime},
		{name: "rename", arity: 3, flags: fWrite, acl: cKeyspace | cWrite | cSlow, keys: keyRange(1, 1, 1, kRW|kAccess|kDelete).and(keyRange(2, 2, 1, kOW|kUpdate)),
			doc: doc{"generic", "1.0.0", "Renames a key and overwrites the destination."}, run: cmdRename},
		{name: "renamenx", arity: 3, flags: fWrite | fFast, acl: cKeyspace | cWrite | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kDelete).and(keyRange(2, 2, 1, kOW|kInsert)),
			doc: doc{"generic", "1.0.0", "Renames a key only when the target key name doesn't exist."}, run: cmdRename},
		{name: "copy", arity: -3, flags: fWrite | fDenyOOM, acl: cKeyspace | cWrite | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess).and(keyRange(2, 2, 1, kOW|kUpdate)), dbArgs: [2]int8{4, -1},
			doc: doc{"generic", "6.2.0", "Copies the value of a key to a new key."}, run: cmdCopy},
		{name: "randomkey", arity: 1, flags: fReadonly, acl: cKeyspace | cRead | cSlow, keys: noKeys, tips: "request_policy:all_shards response_policy:special nondeterministic_output",
			doc: doc{"generic", "1.0.0", "Returns a random key name from the database."}, run: cmdRandomKey},
		{name: "get", arity: 2, flags: fReadonly | fFast, acl: cRead | cString | cFast, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"string", "1.0.0", "Returns the string value of a key."}, run: cmdGet},
		{name: "getex", arity: -2, flags: fWrite | fFast, acl: cWrite | cString | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kUpdate, "RW and UPDATE because it changes the TTL"),
			doc: doc{"string", "6.2.0", "Returns the string value of a key after setting its expiration time."}, run: cmdGetEx},
		{name: "set", arity: -3, flags: fWrite | fDenyOOM, acl: cWrite | cString | cSlow, keys: keyRange(1, 1, 1, kRW|kAccess|kUpdate|kVariableFlags, "RW and ACCESS due to the optional `GET` argument"),
			doc: doc{"string", "1.0.0", "Sets the string value of a key, ignoring its type. The key is created if it doesn't exist."}, run: cmdSet},
		{name: "mget", arity: -2, flags: fReadonly | fFast, acl: cRead | cString | cFast, keys: keyRange(1, -1, 1, kRO|kAccess), tips: "request_policy:multi_shard",
			doc: doc{"string", "1.0.0", "Atomically returns the string values of one or more keys."}, run: cmdMGet},
		{name: "mset", arity: -3, flags: fWrite | fDenyOOM, acl: cWrite | cString | cSlow, keys: keyRange(1, -1, 2, kOW|kUpdate), tips: "request_policy:multi_shard response_policy:all_succeeded",
			doc: doc{"string", "1.0.1", "Atomically creates or modifies the string values of one or more keys."}, run: cmdMSet},
		{name: "incr", arity: 2, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cString | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kUpdate),
			doc: doc{"string", "1.0.0", "Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."}, run: cmdIncr},
		{name: "decr", arity: 2, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cString | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kUpdate),
			doc: doc{"string", "1.0.0", "Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist."}, run: cmdIncr},
		{name: "incrby", arity: 3, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cString | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kUpdate),
			doc: doc{"string", "1.0.0", "Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist."}, run: cmdIncr},
		{name: "decrby", arity: 3, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cString | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kUpdate),
			doc: doc{"string", "1.0.0", "Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist."}, run: cmdIncr},
		{name: "append", arity: 3, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cString | cFast, keys: keyRange(1, 1, 1, kRW|kInsert),
			doc: doc{"string", "2.0.0", "Appends a string to the value of a key. Creates the key if it doesn't exist."}, run: cmdAppend},
		{name: "strlen", arity: 2, flags: fReadonly | fFast, acl: cRead | cString | cFast, keys: keyRange(1, 1, 1, kRO),
			doc: doc{"string", "2.2.0", "Returns the length of a string value."}, run: cmdStrlen},
		{name: "setex", arity: 4, flags: fWrite | fDenyOOM, acl: cWrite | cString | cSlow, keys: keyRange(1, 1, 1, kOW|kUpdate),
			doc: doc{"string", "2.0.0", "Sets the string value and expiration time of a key. Creates the key if it doesn't exist."}, run: cmdSetEx},
		{name: "psetex", arity: 4, flags: fWrite | fDenyOOM, acl: cWrite | cString | cSlow, keys: keyRange(1, 1, 1, kOW|kUpdate),
			doc: doc{"string", "2.6.0", "Sets both string value and expiration time in milliseconds of a key. The key is created if it doesn't exist."}, run: cmdSetEx},
		{name: "setnx", arity: 3, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cString | cFast, keys: keyRange(1, 1, 1, kOW|kInsert),
			doc: doc{"string", "1.0.0", "Set the string value of a key only when the key doesn't exist."}, run: cmdSetNX},
		{name: "getrange", arity: 4, flags: fReadonly, acl: cRead | cString | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"string", "2.4.0", "Returns a substring of the string stored at a key."}, run: cmdGetRange},
		{name: "substr", arity: 4, flags: fReadonly, acl: cRead | cString | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"string", "1.0.0", "Returns a substring from a string value."}, run: cmdGetRange},
		{name: "setrange", arity: 4, flags: fWrite | fDenyOOM, acl: cWrite | cString | cSlow, keys: keyRange(1, 1, 1, kRW|kUpdate),
			doc: doc{"string", "2.2.0", "Overwrites a part of a string value with another by an offset. Creates the key if it doesn't exist."}, run: cmdSetRange},
		{name: "getdel", arity: 2, flags: fWrite | fFast, acl: cWrite | cString | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kDelete),
			doc: doc{"string", "6.2.0", "Returns the string value of a key after deleting the key."}, run: cmdGetDel},
		{name: "incrbyfloat", arity: 3, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cString | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kUpdate),
			doc: doc{"string", "2.6.0", "Increment the floating point value of a key by a number. Uses 0 as initial value if the key doesn't exist."}, run: cmdIncrByFloat},
		{name: "setbit", arity: 4, flags: fWrite | fDenyOOM, acl: cWrite | cBitmap | cSlow, keys: keyRange(1, 1, 1, kRW|kAccess|kUpdate),
			doc: doc{"bitmap", "2.2.0", "Sets or clears the bit at offset of the string value. Creates the key if it doesn't exist."}, run: cmdSetBit},
		{name: "getbit", arity: 3, flags: fReadonly | fFast, acl: cRead | cBitmap | cFast, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"bitmap", "2.2.0", "Returns a bit value by offset."}, run: cmdGetBit},
		{name: "bitcount", arity: -2, flags: fReadonly, acl: cRead | cBitmap | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"bitmap", "2.6.0", "Counts the number of set bits (population counting) in a string."}, run: cmdBitCount},
		{name: "bitpos", arity: -3, flags: fReadonly, acl: cRead | cBitmap | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"bitmap", "2.8.7", "Finds the first set (1) or clear (0) bit in a string."}, run: cmdBitPos},
		// HyperLogLog, bitfields, LCS, GETSET, MSETNX, OBJECT, GEO.
		{name: "pfadd", arity: -2, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cHyperLogLog | cFast, keys: keyRange(1, 1, 1, kRW|kInsert),
			doc: doc{"hyperloglog", "2.8.9", "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist."}, run: cmdPFAdd},
		{name: "pfcount", arity: -2, flags: fReadonly, acl: cRead | cHyperLogLog | cSlow,
			keys: keyRange(1, -1, 1, kRW|kAccess, "RW because it may change the internal representation of the key, and propagate to replicas"),
			doc:  doc{"hyperloglog", "2.8.9", "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s)."}, run: cmdPFCount},
		{name: "pfmerge", arity: -2, flags: fWrite | fDenyOOM, acl: cWrite | cHyperLogLog | cSlow,
			keys: keyRange(1, 1, 1, kRW|kAccess|kInsert).and(keyRange(2, -1, 1, kRO|kAccess)),
			doc:  doc{"hyperloglog", "2.8.9", "Merges one or more HyperLogLog values into a single key."}, run: cmdPFMerge},
		{name: "pfdebug", arity: 3, flags: fWrite | fDenyOOM | fAdmin, acl: cWrite | cHyperLogLog | cAdmin | cSlow | cDangerous, keys: keyRange(2, 2, 1, kRW|kAccess),
			doc: doc{"hyperloglog", "2.8.9", "Internal commands for debugging HyperLogLog values."}, run: cmdPFDebug},
		{name: "pfselftest", arity: 1, flags: fAdmin, acl: cHyperLogLog | cAdmin | cSlow | cDangerous, keys: noKeys,
			doc: doc{"hyperloglog", "2.8.9", "An internal command for testing HyperLogLog values."}, run: cmdPFSelfTest},
		{name: "bitop", arity: -4, flags: fWrite | fDenyOOM, acl: cWrite | cBitmap | cSlow,
			keys: keyRange(2, 2, 1, kOW|kUpdate).and(keyRange(3, -1, 1, kRO|kAccess)),
			doc:  doc{"bitmap", "2.6.0", "Performs bitwise operations on multiple strings, and stores the result."}, run: cmdBitOp},
		{name: "bitfield", arity: -2, flags: fWrite | fDenyOOM, acl: cWrite | cBitmap | cSlow,
			keys: keyRange(1, 1, 1, kRW|kAccess|kUpdate|kVariableFlags, "This command allows both access and modification of the key"),
			doc:  doc{"bitmap", "3.2.0", "Performs arbitrary bitfield integer operations on strings."}, run: cmdBitfield},
		{name: "bitfield_ro", arity: -2, flags: fReadonly | fFast, acl: cRead | cBitmap | cFast, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"bitmap", "6.0.0", "Performs arbitrary read-only bitfield integer operations on strings."}, run: cmdBitfield},
		{name: "lcs", arity: -3, flags: fReadonly, acl: cRead | cString | cSlow, keys: keyRange(1, 2, 1, kRO|kAccess),
			doc: doc{"string", "7.0.0", "Finds the longest common substring."}, run: cmdLCS},
		{name: "getset", arity: 3, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cString | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kUpdate),
			doc: doc{"string", "1.0.0", "Returns the previous string value of a key after setting it to a new value."}, run: cmdGetSet},
		{name: "msetnx", arity: -3, flags: fWrite | fDenyOOM, acl: cWrite | cString | cSlow, keys: keyRange(1, -1, 2, kOW|kInsert),
			doc: doc{"string", "1.0.1", "Atomically modifies the string values of one or more keys only when all keys don't exist."}, run: cmdMSetNX},
		{name: "object", arity: -2, flags: 0, acl: cSlow, keys: noKeys,
			doc: doc{"generic", "2.2.3", "A container for object introspection commands."}},
		{name: "object|refcount", arity: 3, flags: fReadonly, acl: cKeyspace | cRead | cSlow, keys: keyRange(2, 2, 1, kRO), tips: "nondeterministic_output",
			doc: doc{"generic", "2.2.3", "Returns the reference count of a value of a key."}, run: cmdObject},
		{name: "object|encoding", arity: 3, flags: fReadonly, acl: cKeyspace | cRead | cSlow, keys: keyRange(2, 2, 1, kRO), tips: "nondeterministic_output",
			doc: doc{"generic", "2.2.3", "Returns the internal encoding of an object."}, run: cmdObject},
		{name: "object|idletime", arity: 3, flags: fReadonly, acl: cKeyspace | cRead | cSlow, keys: keyRange(2, 2, 1, kRO), tips: "nondeterministic_output",
			doc: doc{"generic", "2.2.3", "Returns the time since the last access to an object."}, run: cmdObject},
		{name: "object|freq", arity: 3, flags: fReadonly, acl: cKeyspace | cRead | cSlow, keys: keyRange(2, 2, 1, kRO), tips: "nondeterministic_output",
			doc: doc{"generic", "4.0.0", "Returns the logarithmic access frequency counter of an object."}, run: cmdObject},
		{name: "object|help", arity: 2, flags: fLoading | fStale, acl: cKeyspace | cSlow, keys: noKeys,
			doc: doc{"generic", "6.2.0", "Returns helpful text about the different subcommands."}, run: cmdObjectHelp},
		{name: "geoadd", arity: -5, flags: fWrite | fDenyOOM, acl: cWrite | cGeo | cSlow, keys: keyRange(1, 1, 1, kRW|kUpdate),
			doc: doc{"geo", "3.2.0", "Adds one or more members to a geospatial index. The key is created if it doesn't exist."}, run: cmdGeoAdd},
		{name: "geodist", arity: -4, flags: fReadonly, acl: cRead | cGeo | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"geo", "3.2.0", "Returns the distance between two members of a geospatial index."}, run: cmdGeoDist},
		{name: "geohash", arity: -2, flags: fReadonly, acl: cRead | cGeo | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"geo", "3.2.0", "Returns members from a geospatial index as geohash strings."}, run: cmdGeoHash},
		{name: "geopos", arity: -2, flags: fReadonly, acl: cRead | cGeo | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"geo", "3.2.0", "Returns the longitude and latitude of members from a geospatial index."}, run: cmdGeoPos},
		{name: "geosearch", arity: -7, flags: fReadonly, acl: cRead | cGeo | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"geo", "6.2.0", "Queries a geospatial index for members inside an area of a box or a circle."}, run: cmdGeoSearch},
		{name: "geosearchstore", arity: -8, flags: fWrite | fDenyOOM, acl: cWrite | cGeo | cSlow,
			keys: keyRange(1, 1, 1, kOW|kUpdate).and(keyRange(2, 2, 1, kRO|kAccess)),
			doc:  doc{"geo", "6.2.0", "Queries a geospatial index for members inside an area of a box or a circle, optionally stores the result."}, run: cmdGeoSearchStore},
		{name: "georadius", arity: -6, flags: fWrite | fDenyOOM | fMovableKeys, acl: cWrite | cGeo | cSlow,
			keys: keyRange(1, 1, 1, kRO|kAccess).and(keywordKeys("STORE", 6, 0, 0, kOW|kUpdate).and(keywordKeys("STOREDIST", 6, 0, 0, kOW|kUpdate))),
			doc:  doc{"geo", "3.2.0", "Queries a geospatial index for members within a distance from a coordinate, optionally stores the result."}, run: cmdGeoRadius},
		{name: "georadiusbymember", arity: -5, flags: fWrite | fDenyOOM | fMovableKeys, acl: cWrite | cGeo | cSlow,
			keys: keyRange(1, 1, 1, kRO|kAccess).and(keywordKeys("STORE", 5, 0, 0, kOW|kUpdate).and(keywordKeys("STOREDIST", 5, 0, 0, kOW|kUpdate))),
			doc:  doc{"geo", "3.2.0", "Queries a geospatial index for members within a distance from a member, optionally stores the result."}, run: cmdGeoRadiusByMember},
		{name: "georadius_ro", arity: -6, flags: fReadonly, acl: cRead | cGeo | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"geo", "3.2.10", "Returns members from a geospatial index that are within a distance from a coordinate."}, run: cmdGeoRadiusRO},
		{name: "georadiusbymember_ro", arity: -5, flags: fReadonly, acl: cRead | cGeo | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"geo", "3.2.10", "Returns members from a geospatial index that are within a distance from a member."}, run: cmdGeoRadiusByMemberRO},
		{name: "lpush", arity: -3, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cList | cFast, keys: keyRange(1, 1, 1, kRW|kInsert),
			doc: doc{"list", "1.0.0", "Prepends one or more elements to a list. Creates the key if it doesn't exist."}, run: cmdPush},
		{name: "rpush", arity: -3, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cList | cFast, keys: keyRange(1, 1, 1, kRW|kInsert),
			doc: doc{"list", "1.0.0", "Appends one or more elements to a list. Creates the key if it doesn't exist."}, run: cmdPush},
		{name: "lpop", arity: -2, flags: fWrite | fFast, acl: cWrite | cList | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kDelete),
			doc: doc{"list", "1.0.0", "Returns the first elements in a list after removing it. Deletes the list if the last element was popped."}, run: cmdPop},
		{name: "rpop", arity: -2, flags: fWrite | fFast, acl: cWrite | cList | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kDelete),
			doc: doc{"list", "1.0.0", "Returns and removes the last elements of a list. Deletes the list if the last element was popped."}, run: cmdPop},
		{name: "llen", arity: 2, flags: fReadonly | fFast, acl: cRead | cList | cFast, keys: keyRange(1, 1, 1, kRO),
			doc: doc{"list", "1.0.0", "Returns the length of a list."}, run: cardinality(kindList, func(o any) int { return o.(*list).len() })},
		{name: "lrange", arity: 4, flags: fReadonly, acl: cRead | cList | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"list", "1.0.0", "Returns a range of elements from a list."}, run: cmdLRange},
		{name: "hset", arity: -4, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cHash | cFast, keys: keyRange(1, 1, 1, kRW|kUpdate),
			doc: doc{"hash", "2.0.0", "Creates or modifies the value of a field in a hash."}, run: cmdHSet},
		{name: "hget", arity: 3, flags: fReadonly | fFast, acl: cRead | cHash | cFast, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"hash", "2.0.0", "Returns the value of a field in a hash."}, run: cmdHGet},
		{name: "hdel", arity: -3, flags: fWrite | fFast, acl: cWrite | cHash | cFast, keys: keyRange(1, 1, 1, kRW|kDelete),
			doc: doc{"hash", "2.0.0", "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain."}, run: cmdHDel},
		{name: "hlen", arity: 2, flags: fReadonly | fFast, acl: cRead | cHash | cFast, keys: keyRange(1, 1, 1, kRO),
			doc: doc{"hash", "2.0.0", "Returns the number of fields in a hash."}, run: cardinality(kindHash, func(o any) int { return len(o.(hashValue)) })},
		{name: "hgetall", arity: 2, flags: fReadonly, acl: cRead | cHash | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess), tips: "nondeterministic_output_order",
			doc: doc{"hash", "2.0.0", "Returns all fields and values in a hash."}, run: cmdHGetAll},
		{name: "hmget", arity: -3, flags: fReadonly | fFast, acl: cRead | cHash | cFast, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"hash", "2.0.0", "Returns the values of all fields in a hash."}, run: cmdHMGet},
		{name: "hsetnx", arity: 4, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cHash | cFast, keys: keyRange(1, 1, 1, kRW|kInsert),
			doc: doc{"hash", "2.0.0", "Sets the value of a field in a hash only when the field doesn't exist."}, run: cmdHSetNX},
		{name: "hstrlen", arity: 3, flags: fReadonly | fFast, acl: cRead | cHash | cFast, keys: keyRange(1, 1, 1, kRO),
			doc: doc{"hash", "3.2.0", "Returns the length of the value of a field."}, run: cmdHStrlen},
		{name: "hincrby", arity: 4, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cHash | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kUpdate),
			doc: doc{"hash", "2.0.0", "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist."}, run: cmdHIncrBy},
		{name: "hincrbyfloat", arity: 4, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cHash | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kUpdate),
			doc: doc{"hash", "2.6.0", "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist."}, run: cmdHIncrByFloat},
		{name: "sadd", arity: -3, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cSet | cFast, keys: keyRange(1, 1, 1, kRW|kInsert),
			doc: doc{"set", "1.0.0", "Adds one or more members to a set. Creates the key if it doesn't exist."}, run: cmdSAdd},
		{name: "srem", arity: -3, flags: fWrite | fFast, acl: cWrite | cSet | cFast, keys: keyRange(1, 1, 1, kRW|kDelete),
			doc: doc{"set", "1.0.0", "Removes one or more members from a set. Deletes the set if the last member was removed."}, run: cmdSRem},
		{name: "spop", arity: -2, flags: fWrite | fFast, acl: cWrite | cSet | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kDelete), tips: "nondeterministic_output",
			doc: doc{"set", "1.0.0", "Returns one or more random members from a set after removing them. Deletes the set if the last member was popped."}, run: cmdSPop},
		{name: "scard", arity: 2, flags: fReadonly | fFast, acl: cRead | cSet | cFast, keys: keyRange(1, 1, 1, kRO),
			doc: doc{"set", "1.0.0", "Returns the number of members in a set."}, run: cardinality(kindSet, func(o any) int { return len(o.(setValue)) })},
		{name: "sismember", arity: 3, flags: fReadonly | fFast, acl: cRead | cSet | cFast, keys: keyRange(1, 1, 1, kRO),
			doc: doc{"set", "1.0.0", "Determines whether a member belongs to a set."}, run: cmdSIsMember},
		{name: "smembers", arity: 2, flags: fReadonly, acl: cRead | cSet | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess), tips: "nondeterministic_output_order",
			doc: doc{"set", "1.0.0", "Returns all members of a set."}, run: cmdSMembers},
		{name: "zadd", arity: -4, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cSortedSet | cFast, keys: keyRange(1, 1, 1, kRW|kUpdate),
			doc: doc{"sorted-set", "1.2.0", "Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist."}, run: cmdZAdd},
		{name: "zscore", arity: 3, flags: fReadonly | fFast, acl: cRead | cSortedSet | cFast, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"sorted-set", "1.2.0", "Returns the score of a member in a sorted set."}, run: cmdZScore},
		{name: "zcard", arity: 2, flags: fReadonly | fFast, acl: cRead | cSortedSet | cFast, keys: keyRange(1, 1, 1, kRO),
			doc: doc{"sorted-set", "1.2.0", "Returns the number of members in a sorted set."}, run: cardinality(kindZSet, func(o any) int { return o.(*zset).len() })},
		{name: "zrem", arity: -3, flags: fWrite | fFast, acl: cWrite | cSortedSet | cFast, keys: keyRange(1, 1, 1, kRW|kDelete),
			doc: doc{"sorted-set", "1.2.0", "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed."}, run: cmdZRem},
		{name: "zpopmin", arity: -2, flags: fWrite | fFast, acl: cWrite | cSortedSet | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kDelete),
			doc: doc{"sorted-set", "5.0.0", "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped."}, run: cmdZPopMin},
		{name: "zrange", arity: -4, flags: fReadonly, acl: cRead | cSortedSet | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"sorted-set", "1.2.0", "Returns members in a sorted set within a range of indexes."}, run: cmdZRange},
		{name: "zrevrange", arity: -4, flags: fReadonly, acl: cRead | cSortedSet | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"sorted-set", "1.2.0", "Returns members in a sorted set within a range of indexes in reverse order."}, run: zrangeAlias("rev")},
		{name: "zrangebyscore", arity: -4, flags: fReadonly, acl: cRead | cSortedSet | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"sorted-set", "1.0.5", "Returns members in a sorted set within a range of scores."}, run: zrangeAlias("byscore")},
		{name: "zrevrangebyscore", arity: -4, flags: fReadonly, acl: cRead | cSortedSet | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"sorted-set", "2.2.0", "Returns members in a sorted set within a range of scores in reverse order."}, run: zrangeAlias("byscore", "rev")},
		{name: "zrangebylex", arity: -4, flags: fReadonly, acl: cRead | cSortedSet | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"sorted-set", "2.8.9", "Returns members in a sorted set within a lexicographical range."}, run: zrangeAlias("bylex")},
		{name: "zrevrangebylex", arity: -4, flags: fReadonly, acl: cRead | cSortedSet | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"sorted-set", "2.8.9", "Returns members in a sorted set within a lexicographical range in reverse order."}, run: zrangeAlias("bylex", "rev")},
		{name: "zrangestore", arity: -5, flags: fWrite | fDenyOOM, acl: cWrite | cSortedSet | cSlow, keys: keyRange(1, 1, 1, kOW|kUpdate).and(keyRange(2, 2, 1, kRO|kAccess)),
			doc: doc{"sorted-set", "6.2.0", "Stores a range of members from sorted set in a key."}, run: cmdZRangeStore},
		{name: "zincrby", arity: 4, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cSortedSet | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kUpdate),
			doc: doc{"sorted-set", "1.2.0", "Increments the score of a member in a sorted set."}, run: cmdZIncrBy},
		{name: "zcount", arity: 4, flags: fReadonly | fFast, acl: cRead | cSortedSet | cFast, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"sorted-set", "2.0.0", "Returns the count of members in a sorted set that have scores within a range."}, run: cmdZCount},
		{name: "zlexcount", arity: 4, flags: fReadonly | fFast, acl: cRead | cSortedSet | cFast, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"sorted-set", "2.8.9", "Returns the number of members in a sorted set within a lexicographical range."}, run: cmdZCount},
		{name: "zremrangebyrank", arity: 4, flags: fWrite, acl: cWrite | cSortedSet | cSlow, keys: keyRange(1, 1, 1, kRW|kDelete),
			doc: doc{"sorted-set", "2.0.0", "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed."}, run: cmdZRemRange},
		{name: "zremrangebyscore", arity: 4, flags: fWrite, acl: cWrite | cSortedSet | cSlow, keys: keyRange(1, 1, 1, kRW|kDelete),
			doc: doc{"sorted-set", "1.2.0", "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed."}, run: cmdZRemRange},
		{name: "zremrangebylex", arity: 4, flags: fWrite, acl: cWrite | cSortedSet | cSlow, keys: keyRange(1, 1, 1, kRW|kDelete),
			doc: doc{"sorted-set", "2.8.9", "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed."}, run: cmdZRemRange},
		// Issue 35's collection commands beyond the first ones: lists,
		// hashes, sets and their algebra (setops.go), sorted sets'
		// algebra (zsetops.go), SCANs of a key (scan.go) and SORT (sort.go).
		{name: "lindex", arity: 3, flags: fReadonly, acl: cRead | cList | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"list", "1.0.0", "Returns an element from a list by its index."}, run: cmdLIndex},
		{name: "linsert", arity: 5, flags: fWrite | fDenyOOM, acl: cWrite | cList | cSlow, keys: keyRange(1, 1, 1, kRW|kInsert),
			doc: doc{"list", "2.2.0", "Inserts an element before or after another element in a list."}, run: cmdLInsert},
		{name: "lpos", arity: -3, flags: fReadonly, acl: cRead | cList | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"list", "6.0.6", "Returns the index of matching elements in a list."}, run: cmdLPos},
		{name: "lpushx", arity: -3, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cList | cFast, keys: keyRange(1, 1, 1, kRW|kInsert),
			doc: doc{"list", "2.2.0", "Prepends one or more elements to a list only when the list exists."}, run: cmdPushX},
		{name: "rpushx", arity: -3, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cList | cFast, keys: keyRange(1, 1, 1, kRW|kInsert),
			doc: doc{"list", "2.2.0", "Appends an element to a list only when the list exists."}, run: cmdPushX},
		{name: "lrem", arity: 4, flags: fWrite, acl: cWrite | cList | cSlow, keys: keyRange(1, 1, 1, kRW|kDelete),
			doc: doc{"list", "1.0.0", "Removes elements from a list. Deletes the list if the last element was removed."}, run: cmdLRem},
		{name: "lset", arity: 4, flags: fWrite | fDenyOOM, acl: cWrite | cList | cSlow, keys: keyRange(1, 1, 1, kRW|kUpdate),
			doc: doc{"list", "1.0.0", "Sets the value of an element in a list by its index."}, run: cmdLSet},
		{name: "ltrim", arity: 4, flags: fWrite, acl: cWrite | cList | cSlow, keys: keyRange(1, 1, 1, kRW|kDelete),
			doc: doc{"list", "1.0.0", "Removes elements from both ends a list. Deletes the list if all elements were trimmed."}, run: cmdLTrim},
		{name: "hexists", arity: 3, flags: fReadonly | fFast, acl: cRead | cHash | cFast, keys: keyRange(1, 1, 1, kRO),
			doc: doc{"hash", "2.0.0", "Determines whether a field exists in a hash."}, run: cmdHExists},
		{name: "hkeys", arity: 2, flags: fReadonly, acl: cRead | cHash | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess), tips: "nondeterministic_output_order",
			doc: doc{"hash", "2.0.0", "Returns all fields in a hash."}, run: cmdHKeysVals},
		{name: "hvals", arity: 2, flags: fReadonly, acl: cRead | cHash | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess), tips: "nondeterministic_output_order",
			doc: doc{"hash", "2.0.0", "Returns all values in a hash."}, run: cmdHKeysVals},
		{name: "hmset", arity: -4, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cHash | cFast, keys: keyRange(1, 1, 1, kRW|kUpdate),
			doc: doc{"hash", "2.0.0", "Sets the values of multiple fields."}, run: cmdHSet},
		{name: "hrandfield", arity: -2, flags: fReadonly, acl: cRead | cHash | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess), tips: "nondeterministic_output",
			doc: doc{"hash", "6.2.0", "Returns one or more random fields from a hash."}, run: cmdHRandField},
		{name: "hscan", arity: -3, flags: fReadonly, acl: cRead | cHash | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess), tips: "nondeterministic_output",
			doc: doc{"hash", "2.8.0", "Iterates over fields and values of a hash."}, run: cmdKeyScan(kindHash)},
		{name: "sdiff", arity: -2, flags: fReadonly, acl: cRead | cSet | cSlow, keys: keyRange(1, -1, 1, kRO|kAccess), tips: "nondeterministic_output_order",
			doc: doc{"set", "1.0.0", "Returns the difference of multiple sets."}, run: setAlgebra(setDiff, false)},
		{name: "sdiffstore", arity: -3, flags: fWrite | fDenyOOM, acl: cWrite | cSet | cSlow, keys: keyRange(1, 1, 1, kOW|kUpdate).and(keyRange(2, -1, 1, kRO|kAccess)),
			doc: doc{"set", "1.0.0", "Stores the difference of multiple sets in a key."}, run: setAlgebra(setDiff, true)},
		{name: "sinter", arity: -2, flags: fReadonly, acl: cRead | cSet | cSlow, keys: keyRange(1, -1, 1, kRO|kAccess), tips: "nondeterministic_output_order",
			doc: doc{"set", "1.0.0", "Returns the intersect of multiple sets."}, run: setAlgebra(setInter, false)},
		{name: "sintercard", arity: -3, flags: fReadonly | fMovableKeys, acl: cRead | cSet | cSlow, keys: keyNum(1, kRO|kAccess),
			doc: doc{"set", "7.0.0", "Returns the number of members of the intersect of multiple sets."}, run: cmdSInterCard},
		{name: "sinterstore", arity: -3, flags: fWrite | fDenyOOM, acl: cWrite | cSet | cSlow, keys: keyRange(1, 1, 1, kOW|kUpdate).and(keyRange(2, -1, 1, kRO|kAccess)),
			doc: doc{"set", "1.0.0", "Stores the intersect of multiple sets in a key."}, run: setAlgebra(setInter, true)},
		{name: "sunion", arity: -2, flags: fReadonly, acl: cRead | cSet | cSlow, keys: keyRange(1, -1, 1, kRO|kAccess), tips: "nondeterministic_output_order",
			doc: doc{"set", "1.0.0", "Returns the union of multiple sets."}, run: setAlgebra(setUnion, false)},
		{name: "sunionstore", arity: -3, flags: fWrite | fDenyOOM, acl: cWrite | cSet | cSlow, keys: keyRange(1, 1, 1, kOW|kUpdate).and(keyRange(2, -1, 1, kRO|kAccess)),
			doc: doc{"set", "1.0.0", "Stores the union of multiple sets in a key."}, run: setAlgebra(setUnion, true)},
		{name: "smismember", arity: -3, flags: fReadonly | fFast, acl: cRead | cSet | cFast, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"set", "6.2.0", "Determines whether multiple members belong to a set."}, run: cmdSMIsMember},
		{name: "smove", arity: 4, flags: fWrite | fFast, acl: cWrite | cSet | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kDelete).and(keyRange(2, 2, 1, kRW|kInsert)),
			doc: doc{"set", "1.0.0", "Moves a member from one set to another."}, run: cmdSMove},
		{name: "srandmember", arity: -2, flags: fReadonly, acl: cRead | cSet | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess), tips: "nondeterministic_output",
			doc: doc{"set", "1.0.0", "Get one or multiple random members from a set"}, run: cmdSRandMember},
		{name: "sscan", arity: -3, flags: fReadonly, acl: cRead | cSet | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess), tips: "nondeterministic_output",
			doc: doc{"set", "2.8.0", "Iterates over members of a set."}, run: cmdKeyScan(kindSet)},
		{name: "zdiff", arity: -3, flags: fReadonly | fMovableKeys, acl: cRead | cSortedSet | cSlow, keys: keyNum(1, kRO|kAccess),
			doc: doc{"sorted-set", "6.2.0", "Returns the difference between multiple sorted sets."}, run: zsetAlgebra(setDiff, false, false)},
		{name: "zdiffstore", arity: -4, flags: fWrite | fDenyOOM | fMovableKeys, acl: cWrite | cSortedSet | cSlow, keys: keyRange(1, 1, 1, kOW|kUpdate).and(keyNum(2, kRO|kAccess)),
			doc: doc{"sorted-set", "6.2.0", "Stores the difference of multiple sorted sets in a key."}, run: zsetAlgebra(setDiff, true, false)},
		{name: "zinter", arity: -3, flags: fReadonly | fMovableKeys, acl: cRead | cSortedSet | cSlow, keys: keyNum(1, kRO|kAccess),
			doc: doc{"sorted-set", "6.2.0", "Returns the intersect of multiple sorted sets."}, run: zsetAlgebra(setInter, false, false)},
		{name: "zintercard", arity: -3, flags: fReadonly | fMovableKeys, acl: cRead | cSortedSet | cSlow, keys: keyNum(1, kRO|kAccess),
			doc: doc{"sorted-set", "7.0.0", "Returns the number of members of the intersect of multiple sorted sets."}, run: zsetAlgebra(setInter, false, true)},
		{name: "zinterstore", arity: -4, flags: fWrite | fDenyOOM | fMovableKeys, acl: cWrite | cSortedSet | cSlow, keys: keyRange(1, 1, 1, kOW|kUpdate).and(keyNum(2, kRO|kAccess)),
			doc: doc{"sorted-set", "2.0.0", "Stores the intersect of multiple sorted sets in a key."}, run: zsetAlgebra(setInter, true, false)},
		{name: "zunion", arity: -3, flags: fReadonly | fMovableKeys, acl: cRead | cSortedSet | cSlow, keys: keyNum(1, kRO|kAccess),
			doc: doc{"sorted-set", "6.2.0", "Returns the union of multiple sorted sets."}, run: zsetAlgebra(setUnion, false, false)},
		{name: "zunionstore", arity: -4, flags: fWrite | fDenyOOM | fMovableKeys, acl: cWrite | cSortedSet | cSlow, keys: keyRange(1, 1, 1, kOW|kUpdate).and(keyNum(2, kRO|kAccess)),
			doc: doc{"sorted-set", "2.0.0", "Stores the union of multiple sorted sets in a key."}, run: zsetAlgebra(setUnion, true, false)},
		{name: "zmscore", arity: -3, flags: fReadonly | fFast, acl: cRead | cSortedSet | cFast, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"sorted-set", "6.2.0", "Returns the score of one or more members in a sorted set."}, run: cmdZMScore},
		{name: "zrandmember", arity: -2, flags: fReadonly, acl: cRead | cSortedSet | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess), tips: "nondeterministic_output",
			doc: doc{"sorted-set", "6.2.0", "Returns one or more random members from a sorted set."}, run: cmdZRandMember},
		{name: "zrank", arity: -3, flags: fReadonly | fFast, acl: cRead | cSortedSet | cFast, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"sorted-set", "2.0.0", "Returns the index of a member in a sorted set ordered by ascending scores."}, run: cmdZRank},
		{name: "zrevrank", arity: -3, flags: fReadonly | fFast, acl: cRead | cSortedSet | cFast, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"sorted-set", "2.0.0", "Returns the index of a member in a sorted set ordered by descending scores."}, run: cmdZRank},
		{name: "zscan", arity: -3, flags: fReadonly, acl: cRead | cSortedSet | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess), tips: "nondeterministic_output",
			doc: doc{"sorted-set", "2.8.0", "Iterates over members and scores of a sorted set."}, run: cmdKeyScan(kindZSet)},
		{name: "sort", arity: -2, flags: fWrite | fDenyOOM | fMovableKeys, acl: cWrite | cSet | cSortedSet | cList | cSlow | cDangerous,
			keys: keyRange(1, 1, 1, kRO|kAccess).and(keyUnknown(findUnknown, kRO|kAccess, sortByGetNotes)).and(keyUnknown(findSortStore, kOW|kUpdate, sortStoreNotes)),
			doc:  doc{"generic", "1.0.0", "Sorts the elements in a list, a set, or a sorted set, optionally storing the result."}, run: cmdSort},
		{name: "sort_ro", arity: -2, flags: fReadonly | fMovableKeys, acl: cRead | cSet | cSortedSet | cList | cSlow | cDangerous,
			keys: keyRange(1, 1, 1, kRO|kAccess).and(keyUnknown(findUnknown, kRO|kAccess, sortByGetNotes)),
			doc:  doc{"generic", "7.0.0", "Returns the sorted elements of a list, a set, or a sorted set."}, run: cmdSort},
		{name: "xadd", arity: -5, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cStream | cFast, keys: keyRange(1, 1, 1, kRW|kUpdate, "UPDATE instead of INSERT because of the optional trimming feature"), tips: "nondeterministic_output",
			doc: doc{"stream", "5.0.0", "Appends a new message to a stream. Creates the key if it doesn't exist."}, run: cmdXAdd},
		{name: "xlen", arity: 2, flags: fReadonly | fFast, acl: cRead | cStream | cFast, keys: keyRange(1, 1, 1, kRO),
			doc: doc{"stream", "5.0.0", "Return the number of messages in a stream."}, run: cardinality(kindStream, func(o any) int { return len(o.(*stream).entries) })},
		{name: "xrange", arity: -4, flags: fReadonly, acl: cRead | cStream | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"stream", "5.0.0", "Returns the messages from a stream within a range of IDs."}, run: cmdXRange},
		{name: "xrevrange", arity: -4, flags: fReadonly, acl: cRead | cStream | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess),
			doc: doc{"stream", "5.0.0", "Returns the messages from a stream within a range of IDs in reverse order."}, run: cmdXRange},
		{name: "xdel", arity: -3, flags: fWrite | fFast, acl: cWrite | cStream | cFast, keys: keyRange(1, 1, 1, kRW|kDelete),
			doc: doc{"stream", "5.0.0", "Returns the number of messages after removing them from a stream."}, run: cmdXDel},
		{name: "xtrim", arity: -4, flags: fWrite, acl: cWrite | cStream | cSlow, keys: keyRange(1, 1, 1, kRW|kDelete), tips: "nondeterministic_output",
			doc: doc{"stream", "5.0.0", "Deletes messages from the beginning of a stream."}, run: cmdXTrim},
		{name: "xsetid", arity: -3, flags: fWrite | fDenyOOM | fFast, acl: cWrite | cStream | cFast, keys: keyRange(1, 1, 1, kRW|kUpdate),
			doc: doc{"stream", "5.0.0", "An internal command for replicating stream values."}, run: cmdXSetID},
		{name: "xread", arity: -4, flags: fReadonly | fBlocking | fMovableKeys, acl: cRead | cStream | cSlow | cBlocking, keys: keywordKeys("STREAMS", 1, -1, 2, kRO|kAccess),
			doc: doc{"stream", "5.0.0", "Returns messages from multiple streams with IDs greater than the ones requested. Blocks until a message is available otherwise."}, run: cmdXRead},
		{name: "xreadgroup", arity: -7, flags: fWrite | fBlocking | fMovableKeys, acl: cWrite | cStream | cSlow | cBlocking, keys: keywordKeys("STREAMS", 4, -1, 2, kRO|kAccess),
			doc: doc{"stream", "5.0.0", "Returns new or historical messages from a stream for a consumer in a group. Blocks until a message is available otherwise."}, run: cmdXRead},
		{name: "xgroup", arity: -2, flags: 0, acl: cSlow, keys: noKeys,
			doc: doc{"stream", "5.0.0", "A container for consumer groups commands."}},
		{name: "xgroup|create", arity: -5, flags: fWrite | fDenyOOM, acl: cWrite | cStream | cSlow, keys: keyRange(2, 2, 1, kRW|kInsert),
			doc: doc{"stream", "5.0.0", "Creates a consumer group."}, run: cmdXGroup},
		{name: "xgroup|setid", arity: -5, flags: fWrite, acl: cWrite | cStream | cSlow, keys: keyRange(2, 2, 1, kRW|kUpdate),
			doc: doc{"stream", "5.0.0", "Sets the last-delivered ID of a consumer group."}, run: cmdXGroup},
		{name: "xgroup|destroy", arity: 4, flags: fWrite, acl: cWrite | cStream | cSlow, keys: keyRange(2, 2, 1, kRW|kDelete),
			doc: doc{"stream", "5.0.0", "Destroys a consumer group."}, run: cmdXGroup},
		{name: "xgroup|createconsumer", arity: 5, flags: fWrite | fDenyOOM, acl: cWrite | cStream | cSlow, keys: keyRange(2, 2, 1, kRW|kInsert),
			doc: doc{"stream", "6.2.0", "Creates a consumer in a consumer group."}, run: cmdXGroup},
		{name: "xgroup|delconsumer", arity: 5, flags: fWrite, acl: cWrite | cStream | cSlow, keys: keyRange(2, 2, 1, kRW|kDelete),
			doc: doc{"stream", "5.0.0", "Deletes a consumer from a consumer group."}, run: cmdXGroup},
		{name: "xgroup|help", arity: 2, flags: fLoading | fStale, acl: cStream | cSlow, keys: noKeys,
			doc: doc{"stream", "5.0.0", "Returns helpful text about the different subcommands."}, run: cmdXGroupHelp},
		{name: "xack", arity: -4, flags: fWrite | fFast, acl: cWrite | cStream | cFast, keys: keyRange(1, 1, 1, kRW|kUpdate),
			doc: doc{"stream", "5.0.0", "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream."}, run: cmdXAck},
		{name: "xpending", arity: -3, flags: fReadonly, acl: cRead | cStream | cSlow, keys: keyRange(1, 1, 1, kRO|kAccess), tips: "nondeterministic_output",
			doc: doc{"stream", "5.0.0", "Returns the information and entries from a stream consumer group's pending entries list."}, run: cmdXPending},
		{name: "xclaim", arity: -6, flags: fWrite | fFast, acl: cWrite | cStream | cFast, keys: keyRange(1, 1, 1, kRW|kUpdate), tips: "nondeterministic_output",
			doc: doc{"stream", "5.0.0", "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member."}, run: cmdXClaim},
		{name: "xautoclaim", arity: -6, flags: fWrite | fFast, acl: cWrite | cStream | cFast, keys: keyRange(1, 1, 1, kRW|kDelete), tips: "nondeterministic_output",
			doc: doc{"stream", "6.2.0", "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member."}, run: cmdXAutoClaim},
		{name: "xinfo", arity: -2, flags: 0, acl: cSlow, keys: noKeys,
			doc: doc{"stream", "5.0.0", "A container for stream introspection commands."}},
		{name: "xinfo|stream", arity: -3, flags: fReadonly, acl: cRead | cStream | cSlow, keys: keyRange(2, 2, 1, kRO|kAccess),
			doc: doc{"stream", "5.0.0", "Returns information about a stream."}, run: cmdXInfoStream},
		{name: "xinfo|groups", arity: 3, flags: fReadonly, acl: cRead | cStream | cSlow, keys: keyRange(2, 2, 1, kRO|kAccess),
			doc: doc{"stream", "5.0.0", "Returns a list of the consumer groups of a stream."}, run: cmdXInfoGroups},
		{name: "xinfo|consumers", arity: 4, flags: fReadonly, acl: cRead | cStream | cSlow, keys: keyRange(2, 2, 1, kRO|kAccess), tips: "nondeterministic_output",
			doc: doc{"stream", "5.0.0", "Returns a list of the consumers in a consumer group."}, run: cmdXInfoConsumers},
		{name: "xinfo|help", arity: 2, flags: fLoading | fStale, acl: cStream | cSlow, keys: noKeys,
			doc: doc{"stream", "5.0.0", "Returns helpful text about the different subcommands."}, run: cmdXInfoHelp},
		{name: "multi", arity: 1, flags: fNoScript | fLoading | fStale | fFast | fNoMulti | fAllowBusy, acl: cFast | cTransaction, keys: noKeys,
			doc: doc{"transactions", "1.2.0", "Starts a transaction."}, run: cmdMulti},
		{name: "exec", arity: 1, flags: fNoScript | fLoading | fStale | fSkipSlowlog, acl: cSlow | cTransaction, keys: noKeys,
			doc: doc{"transactions", "1.2.0", "Executes all commands in a transaction."}, run: cmdExec},
		{name: "discard", arity: 1, flags: fNoScript | fLoading | fStale | fFast | fAllowBusy, acl: cFast | cTransaction, keys: noKeys,
			doc: doc{"transactions", "2.0.0", "Discards a transaction."}, run: cmdDiscard},
		{name: "watch", arity: -2, flags: fNoScript | fLoading | fStale | fFast | fNoMulti | fAllowBusy, acl: cFast | cTransaction, keys: keyRange(1, -1, 1, kRO),
			doc: doc{"transactions", "2.2.0", "Monitors changes to keys to determine the execution of a transaction."}, run: cmdWatch},
		{name: "unwatch", arity: 1, flags: fNoScript | fLoading | fStale | fFast | fAllowBusy, acl: cFast | cTransaction, keys: noKeys,
			doc: doc{"transactions", "2.2.0", "Forgets about watched keys of a transaction."}, run: cmdUnwatch},
		{name: "reset", arity: 1, flags: fNoScript | fLoading | fStale | fFast | fNoAuth | fAllowBusy, acl: cFast | cConnection, keys: noKeys,
			doc: doc{"connection", "6.2.0", "Resets the connection."}, run: cmdReset},
		{name: "subscribe", arity: -2, flags: fPubsub | fNoScript | fLoading | fStale, acl: cPubsub | cSlow, keys: noKeys,
			doc: doc{"pubsub", "2.0.0", "Listens for messages published to channels."}, run: subscribeRun(kindChannel)},
		{name: "psubscribe", arity: -2, flags: fPubsub | fNoScript | fLoading | fStale, acl: cPubsub | cSlow, keys: noKeys,
			doc: doc{"pubsub", "2.0.0", "Listens for messages published to channels that match one or more patterns."}, run: subscribeRun(kindPattern)},
		{name: "ssubscribe", arity: -2, flags: fPubsub | fNoScript | fLoading | fStale, acl: cPubsub | cSlow, keys: keyRange(1, -1, 1, kNotKey),
			doc: doc{"pubsub", "7.0.0", "Listens for messages published to shard channels."}, run: subscribeRun(kindShard)},
		{name: "unsubscribe", arity: -1, flags: fPubsub | fNoScript | fLoading | fStale, acl: cPubsub | cSlow, keys: noKeys,
			doc: doc{"pubsub", "2.0.0", "Stops listening to messages posted to channels."}, run: unsubscribeRun(kindChannel)},
		{name: "punsubscribe", arity: -1, flags: fPubsub | fNoScript | fLoading | fStale, acl: cPubsub | cSlow, keys: noKeys,
			doc: doc{"pubsub", "2.0.0", "Stops listening to messages published to channels that match one or more patterns."}, run: unsubscribeRun(kindPattern)},
		{name: "sunsubscribe", arity: -1, flags: fPubsub | fNoScript | fLoading | fStale, acl: cPubsub | cSlow, keys: keyRange(1, -1, 1, kNotKey),
			doc: doc{"pubsub", "7.0.0", "Stops listening to messages posted to shard channels."}, run: unsubscribeRun(kindShard)},
		{name: "publish", arity: 3, flags: fPubsub | fLoading | fStale | fFast, acl: cPubsub | cFast, keys: noKeys,
			doc: doc{"pubsub", "2.0.0", "Posts a message to a channel."}, run: cmdPublish},
		{name: "spublish", arity: 3, flags: fPubsub | fLoading | fStale | fFast, acl: cPubsub | cFast, keys: keyRange(1, 1, 1, kNotKey),
			doc: doc{"pubsub", "7.0.0", "Post a message to a shard channel"}, run: cmdPublish},
		{name: "pubsub", arity: -2, flags: 0, acl: cSlow, keys: noKeys,
			doc: doc{"pubsub", "2.8.0", "A container for Pub/Sub commands."}},
		{name: "pubsub|channels", arity: -2, flags: fPubsub | fLoading | fStale, acl: cPubsub | cSlow, keys: noKeys,
			doc: doc{"pubsub", "2.8.0", "Returns the active channels."}, run: cmdPubsubChannels},
		{name: "pubsub|numsub", arity: -2, flags: fPubsub | fLoading | fStale, acl: cPubsub | cSlow, keys: noKeys,
			doc: doc{"pubsub", "2.8.0", "Returns a count of subscribers to channels."}, run: cmdPubsubNumsub},
		{name: "pubsub|numpat", arity: 2, flags: fPubsub | fLoading | fStale, acl: cPubsub | cSlow, keys: noKeys,
			doc: doc{"pubsub", "2.8.0", "Returns a count of unique pattern subscriptions."}, run: cmdPubsubNumpat},
		{name: "pubsub|shardchannels", arity: -2, flags: fPubsub | fLoading | fStale, acl: cPubsub | cSlow, keys: noKeys,
			doc: doc{"pubsub", "7.0.0", "Returns the active shard channels."}, run: cmdPubsubChannels},
		{name: "pubsub|shardnumsub", arity: -2, flags: fPubsub | fLoading | fStale, acl: cPubsub | cSlow, keys: noKeys,
			doc: doc{"pubsub", "7.0.0", "Returns the count of subscribers of shard channels."}, run: cmdPubsubNumsub},
		{name: "pubsub|help", arity: 2, flags: fLoading | fStale, acl: cSlow, keys: noKeys,
			doc: doc{"pubsub", "6.2.0", "Returns helpful text about the different subcommands."}, run: cmdPubsubHelp},
		// Pops across keys, and the blocking commands (pops.go, blocking.go).
		{name: "lmove", arity: 5, flags: fWrite | fDenyOOM, acl: cWrite | cList | cSlow, keys: keyRange(1, 1, 1, kRW|kAccess|kDelete).and(keyRange(2, 2, 1, kRW|kInsert)),
			doc: doc{"list", "6.2.0", "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved."}, run: cmdLMove},
		{name: "rpoplpush", arity: 3, flags: fWrite | fDenyOOM, acl: cWrite | cList | cSlow, keys: keyRange(1, 1, 1, kRW|kAccess|kDelete).and(keyRange(2, 2, 1, kRW|kInsert)),
			doc: doc{"list", "1.2.0", "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped."}, run: cmdLMove},
		{name: "lmpop", arity: -4, flags: fWrite | fMovableKeys, acl: cWrite | cList | cSlow, keys: keyNum(1, kRW|kAccess|kDelete),
			doc: doc{"list", "7.0.0", "Returns multiple elements from a list after removing them. Deletes the list if the last element was popped."}, run: cmdLMPop},
		{name: "blpop", arity: -3, flags: fWrite | fBlocking, acl: cWrite | cList | cSlow | cBlocking, keys: keyRange(1, -2, 1, kRW|kAccess|kDelete),
			doc: doc{"list", "2.0.0", "Removes and returns the first element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped."}, run: cmdBPop},
		{name: "brpop", arity: -3, flags: fWrite | fBlocking, acl: cWrite | cList | cSlow | cBlocking, keys: keyRange(1, -2, 1, kRW|kAccess|kDelete),
			doc: doc{"list", "2.0.0", "Removes and returns the last element in a list. Blocks until an element is available otherwise. Deletes the list if the last element was popped."}, run: cmdBPop},
		{name: "blmove", arity: 6, flags: fWrite | fDenyOOM | fBlocking, acl: cWrite | cList | cSlow | cBlocking, keys: keyRange(1, 1, 1, kRW|kAccess|kDelete).and(keyRange(2, 2, 1, kRW|kInsert)),
			doc: doc{"list", "6.2.0", "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available otherwise. Deletes the list if the last element was moved."}, run: cmdLMove},
		{name: "brpoplpush", arity: 4, flags: fWrite | fDenyOOM | fBlocking, acl: cWrite | cList | cSlow | cBlocking, keys: keyRange(1, 1, 1, kRW|kAccess|kDelete).and(keyRange(2, 2, 1, kRW|kInsert)),
			doc: doc{"list", "2.2.0", "Pops an element from a list, pushes it to another list and returns it. Block until an element is available otherwise. Deletes the list if the last element was popped."}, run: cmdLMove},
		{name: "blmpop", arity: -5, flags: fWrite | fBlocking | fMovableKeys, acl: cWrite | cList | cSlow | cBlocking, keys: keyNum(2, kRW|kAccess|kDelete),
			doc: doc{"list", "7.0.0", "Pops the first element from one of multiple lists. Blocks until an element is available otherwise. Deletes the list if the last element was popped."}, run: cmdLMPop},
		{name: "zpopmax", arity: -2, flags: fWrite | fFast, acl: cWrite | cSortedSet | cFast, keys: keyRange(1, 1, 1, kRW|kAccess|kDelete),
			doc: doc{"sorted-set", "5.0.0", "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped."}, run: cmdZPopMax},
		{name: "zmpop", arity: -4, flags: fWrite | fMovableKeys, acl: cWrite | cSortedSet | cSlow, keys: keyNum(1, kRW|kAccess|kDelete),
			doc: doc{"sorted-set", "7.0.0", "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped."}, run: cmdZMPop},
		{name: "bzpopmin", arity: -3, flags: fWrite | fBlocking | fFast, acl: cWrite | cSortedSet | cFast | cBlocking, keys: keyRange(1, -2, 1, kRW|kAccess|kDelete),
			doc: doc{"sorted-set", "5.0.0", "Removes and returns the member with the lowest score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped."}, run: cmdBZPop},
		{name: "bzpopmax", arity: -3, flags: fWrite | fBlocking | fFast, acl: cWrite | cSortedSet | cFast | cBlocking, keys: keyRange(1, -2, 1, kRW|kAccess|kDelete),
			doc: doc{"sorted-set", "5.0.0", "Removes and returns the member with the highest score from one or more sorted sets. Blocks until a member available otherwise.  Deletes the sorted set if the last element was popped."}, run: cmdBZPop},
		{name: "bzmpop", arity: -5, flags: fWrite | fBlocking | fMovableKeys, acl: cWrite | cSortedSet | cSlow | cBlocking, keys: keyNum(2, kRW|kAccess|kDelete),
			doc: doc{"sorted-set", "7.0.0", "Removes and returns a member by score from one or more sorted sets. Blocks until a member is available otherwise. Deletes the sorted set if the last element was popped."}, run: cmdZMPop},
		{name: "client|kill", arity: -3, flags: fAdmin | fNoScript | fLoading | fStale, acl: cAdmin | cSlow | cDangerous | cConnection, keys: noKeys,
			doc: doc{"connection", "2.4.0", "Terminates open connections."}, run: cmdClientKill},
		{name: "client|unblock", arity: -3, flags: fAdmin | fNoScript | fLoading | fStale, acl: cAdmin | cSlow | cDangerous | cConnection, keys: noKeys,
			doc: doc{"connection", "5.0.0", "Unblocks a client blocked by a blocking command from a different connection."}, run: cmdClientUnblock},
		// CLIENT LIST (clientlist.go) and server commands (servercmds.go).
		{name: "client|list", arity: -2, flags: fAdmin | fNoScript | fLoading | fStale, acl: cAdmin | cSlow | cDangerous | cConnection, keys: noKeys, tips: "nondeterministic_output",
			doc: doc{"connection", "2.4.0", "Lists open connections."}, run: cmdClientList},
		{name: "client|reply", arity: 3, flags: fNoScript | fLoading | fStale, acl: cSlow | cConnection, keys: noKeys,
			doc: doc{"connection", "3.2.0", "Instructs the server whether to reply to commands."}, run: cmdClientReply},
		{name: "lastsave", arity: 1, flags: fLoading | fStale | fFast, acl: cAdmin | cFast | cDangerous, keys: noKeys, tips: "nondeterministic_output",
			doc: doc{"server", "1.0.0", "Returns the Unix timestamp of the last successful save to disk."}, run: cmdLastSave}, // nothing is saved: the server's start time
		{name: "role", arity: 1, flags: fNoScript | fLoading | fStale | fFast, acl: cAdmin | cFast | cDangerous, keys: noKeys,
			doc: doc{"server", "2.8.12", "Returns the replication role."}, run: cmdRole},
		{name: "wait", arity: 3, flags: fBlocking, acl: cSlow | cBlocking | cConnection, keys: noKeys, tips: "request_policy:all_shards response_policy:agg_min",
			doc: doc{"generic", "3.0.0", "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed."}, run: cmdWait},
		{name: "lolwut", arity: -1, flags: fReadonly | fFast, acl: cRead | cFast, keys: noKeys,
			doc: doc{"server", "5.0.0", "Displays computer art and the server version"}, run: cmdLolwut},
		{name: "latency", arity: -2, flags: 0, acl: cSlow, keys: noKeys,
			doc: doc{"server", "2.8.13", "A container for latency diagnostics commands."}}, // no latency monitor: never a sample
		{name: "latency|latest", arity: 2, flags: fAdmin | fNoScript | fLoading | fStale, acl: cAdmin | cSlow | cDangerous, keys: noKeys, tips: "nondeterministic_output request_policy:all_nodes response_policy:special",
			doc: doc{"server", "2.8.13", "Returns the latest latency samples for all events."}, run: cmdLatencyEmpty},
		{name: "latency|history", arity: 3, flags: fAdmin | fNoScript | fLoading | fStale, acl: cAdmin | cSlow | cDangerous, keys: noKeys, tips: "nondeterministic_output request_policy:all_nodes response_policy:special",
			doc: doc{"server", "2.8.13", "Returns timestamp-latency samples for an event."}, run: cmdLatencyEmpty},
		{name: "latency|reset", arity: -2, flags: fAdmin | fNoScript | fLoading | fStale, acl: cAdmin | cSlow | cDangerous, keys: noKeys, tips: "request_policy:all_nodes response_policy:agg_sum",
			doc: doc{"server", "2.8.13", "Resets the latency data for one or more events."}, run: cmdLatencyReset},
		{name: "latency|help", arity: 2, flags: fLoading | fStale, acl: cSlow, keys: noKeys,
			doc: doc{"server", "2.8.13", "Returns helpful text about the different subcommands."}, run: cmdLatencyHelp},
		{name: "slowlog", arity: -2, flags: 0, acl: cSlow, keys: noKeys,
			doc: doc{"server", "2.2.12", "A container for slow log commands."}}, // no slow log kept yet: always empty
		{name: "slowlog|get", arity: -2, flags: fAdmin | fLoading | fStale, acl: cAdmin | cSlow | cDangerous, keys: noKeys, tips: "request_policy:all_nodes nondeterministic_output",
			doc: doc{"server", "2.2.12", "Returns the slow log's entries."}, run: cmdSlowlogGet},
		{name: "slowlog|len", arity: 2, flags: fAdmin | fLoading | fStale, acl: cAdmin | cSlow | cDangerous, keys: noKeys, tips: "request_policy:all_nodes response_policy:agg_sum nondeterministic_output",
			doc: doc{"server", "2.2.12", "Returns the number of entries in the slow log."}, run: cmdSlowlogLen},
		{name: "slowlog|reset", arity: 2, flags: fAdmin | fLoading | fStale, acl: cAdmin | cSlow | cDangerous, keys: noKeys, tips: "request_policy:all_nodes response_policy:all_succeeded",
			doc: doc{"server", "2.2.12", "Clears all entries from the slow log."}, run: replyOK},
		{name: "slowlog|help", arity: 2, flags: fLoading | fStale, acl: cSlow, keys: noKeys,
			doc: doc{"server", "6.2.0", "Show helpful text about the different subcommands"}, run: cmdSlowlogHelp},
		{name: "memory", arity: -2, flags: 0, acl: cSlow, keys: noKeys,
			doc: doc{"server", "4.0.0", "A container for memory diagnostics commands."}},
		{name: "memory|usage", arity: -3, flags: fReadonly, acl: cRead | cSlow, keys: keyRange(2, 2, 1, kRO),
			doc: doc{"server", "4.0.0", "Estimates the memory usage of a key."}, run: cmdMemoryUsage},
		{name: "memory|help", arity: 2, flags: fLoading | fStale, acl: cSlow, keys: noKeys,
			doc: doc{"server", "4.0.0", "Returns helpful text about the different subcommands."}, run: cmdMemoryHelp},
		{name: "debug", arity: -2, flags: fAdmin | fNoScript | fLoading | fStale, acl: cAdmin | cSlow | cDangerous, keys: noKeys,
			doc: doc{"server", "1.0.0", "A container for debugging commands."}, run: cmdDebug}, // SLEEP and SET-ACTIVE-EXPIRE only
		// Scripting (script.go).
		{name: "eval", arity: -3, flags: fNoScript | fStale | fSkipMonitor | fNoMandatoryKeys | fMovableKeys, acl: cSlow | cScripting,
			keys: keyNum(2, kRW|kAccess|kUpdate, "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE"), anyKey: true,
			doc: doc{"scripting", "2.6.0", "Executes a server-side Lua script."}, run: cmdEval},
		{name: "evalsha", arity: -3, flags: fNoScript | fStale | fSkipMonitor | fNoMandatoryKeys | fMovableKeys, acl: cSlow | cScripting,
			keys: keyNum(2, kRW|kAccess|kUpdate), anyKey: true,
			doc: doc{"scripting", "2.6.0", "Executes a server-side Lua script by SHA1 digest."}, run: cmdEval},
		{name: "eval_ro", arity: -3, flags: fReadonly | fNoScript | fStale | fSkipMonitor | fNoMandatoryKeys | fMovableKeys, acl: cSlow | cScripting,
			keys: keyNum(2, kRO|kAccess, "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS"), anyKey: true,
			doc: doc{"scripting", "7.0.0", "Executes a read-only server-side Lua script."}, run: cmdEval},
		{name: "evalsha_ro", arity: -3, flags: fReadonly | fNoScript | fStale | fSkipMonitor | fNoMandatoryKeys | fMovableKeys, acl: cSlow | cScripting,
			keys: keyNum(2, kRO|kAccess), anyKey: true,
			doc: doc{"scripting", "7.0.0", "Executes a read-only server-side Lua script by SHA1 digest."}, run: cmdEval},
		{name: "script", arity: -2, flags: 0, acl: cSlow, keys: noKeys,
			doc: doc{"scripting", "2.6.0", "A container for Lua scripts management commands."}},
		{name: "script|load", arity: 3, flags: fNoScript | fStale, acl: cSlow | cScripting, keys: noKeys, tips: "request_policy:all_nodes response_policy:all_succeeded",
			doc: doc{"scripting", "2.6.0", "Loads a server-side Lua script to the script cache."}, run: cmdScriptLoad},
		{name: "script|exists", arity: -3, flags: fNoScript, acl: cSlow | cScripting, keys: noKeys, tips: "request_policy:all_shards response_policy:agg_logical_and",
			doc: doc{"scripting", "2.6.0", "Determines whether server-side Lua scripts exist in the script cache."}, run: cmdScriptExists},
		{name: "script|flush", arity: -2, flags: fNoScript, acl: cSlow | cScripting, keys: noKeys, tips: "request_policy:all_nodes response_policy:all_succeeded",
			doc: doc{"scripting", "2.6.0", "Removes all server-side Lua scripts from the script cache."}, run: cmdScriptFlush},
		{name: "script|kill", arity: 2, flags: fNoScript | fAllowBusy, acl: cSlow | cScripting, keys: noKeys, tips: "request_policy:all_shards response_policy:one_succeeded",
			doc: doc{"scripting", "2.6.0", "Terminates a server-side Lua script during execution."}, run: cmdScriptKill},
		{name: "script|show", arity: 3, flags: fNoScript, acl: cSlow | cScripting, keys: noKeys,
			doc: doc{"scripting", "8.0.0", "Show server-side Lua script in the script cache."}, run: cmdScriptShow},
		{name: "script|help", arity: 2, flags: fLoading | fStale, acl: cSlow | cScripting, keys: noKeys,
			doc: doc{"scripting", "5.0.0", "Returns helpful text about the different subcommands."}, run: cmdScriptHelp},
		{name: "fcall", arity: -3, flags: fNoScript | fStale | fSkipMonitor | fNoMandatoryKeys | fMovableKeys, acl: cSlow | cScripting,
			keys: keyNum(2, kRW|kAccess|kUpdate, "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE"), anyKey: true,
			doc: doc{"scripting", "7.0.0", "Invokes a function."}, run: cmdFcall},
		{name: "fcall_ro", arity: -3, flags: fReadonly | fNoScript | fStale | fSkipMonitor | fNoMandatoryKeys | fMovableKeys, acl: cSlow | cScripting,
			keys: keyNum(2, kRO|kAccess, "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS"), anyKey: true,
			doc: doc{"scripting", "7.0.0", "Invokes a read-only function."}, run: cmdFcall},
		{name: "function", arity: -2, flags: 0, acl: cSlow, keys: noKeys,
			doc: doc{"scripting", "7.0.0", "A container for function commands."}},
		{name: "function|load", arity: -3, flags: fWrite | fDenyOOM | fNoScript, acl: cWrite | cSlow | cScripting, keys: noKeys, tips: "request_policy:all_shards response_policy:all_succeeded",
			doc: doc{"scripting", "7.0.0", "Creates a library."}, run: cmdFunctionLoad},
		{name: "function|delete", arity: 3, flags: fWrite | fNoScript, acl: cWrite | cSlow | cScripting, keys: noKeys, tips: "request_policy:all_shards response_policy:all_succeeded",
			doc: doc{"scripting", "7.0.0", "Deletes a library and its functions."}, run: cmdFunctionDelete},
		{name: "function|flush", arity: -2, flags: fWrite | fNoScript, acl: cWrite | cSlow | cScripting, keys: noKeys, tips: "request_policy:all_shards response_policy:all_succeeded",
			doc: doc{"scripting", "7.0.0", "Deletes all libraries and functions."}, run: cmdFunctionFlush},
		{name: "function|list", arity: -2, flags: fNoScript, acl: cSlow | cScripting, keys: noKeys, tips: "nondeterministic_output_order",
			doc: doc{"scripting", "7.0.0", "Returns information about all libraries."}, run: cmdFunctionList},
		{name: "function|kill", arity: 2, flags: fNoScript | fAllowBusy, acl: cSlow | cScripting, keys: noKeys, tips: "request_policy:all_shards response_policy:one_succeeded",
			doc: doc{"scripting", "7.0.0", "Terminates a function during execution."}, run: cmdScriptKill},
		{name: "function|help", arity: 2, flags: fLoading | fStale, acl: cSlow | cScripting, keys: noKeys,
			doc: doc{"scripting", "7.0.0", "Returns helpful text about the different subcommands."}, run: cmdFunctionHelp},
	}
}

func init() {
	table := commandTable()
	commands = make(map[string]*command, len(table))
	for i := range table {
		cmd := &table[i]
		container, sub, isSub := strings.Cut(cmd.name, "|")
		if !isSub {
			commands[cmd.name] = cmd
			continue
		}
		parent := commands[container]
		if parent == nil {
			panic(fmt.Sprintf("server: subcommand %s before its container", cmd.name))
		}
		if parent.subs == nil {
			parent.subs = map[string]*command{}
		}
		parent.subs[sub] = cmd
		cmd.parent = parent
	}
}

// lookupCommand finds the command a request names: a container's
// subcommand by its second argument. Unlike conn.lookup it allocates;
// it is for COMMAND's own arguments.
func lookupCommand(name string) *command {
	name = strings.ToLower(name)
	container, sub, isSub := strings.Cut(name, "|")
	cmd := commands[container]
	if isSub && cmd != nil {
		return cmd.subs[sub]
	}
	return cmd
}
