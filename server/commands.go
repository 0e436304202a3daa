package server

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// command is an entry of the command table.
type command struct {
	name string
	// arity counts the command name: n > 0 is exactly n arguments, n < 0
	// at least -n, as in valkey's command table.
	arity  int
	noAuth bool // allowed before AUTH
	run    func(c *conn, args [][]byte)
}

// commands maps lower-case names to commands; filled by init, since some
// commands (COMMAND) read it.
var commands map[string]*command

func init() {
	table := []command{
		// connection
		{name: "ping", arity: -1, run: cmdPing},
		{name: "echo", arity: 2, run: cmdEcho},
		{name: "hello", arity: -1, noAuth: true, run: cmdHello},
		{name: "auth", arity: -2, noAuth: true, run: cmdAuth},
		{name: "select", arity: 2, run: cmdSelect},
		{name: "quit", arity: -1, noAuth: true, run: cmdQuit},
		{name: "client", arity: -2, run: cmdClient},
		{name: "readonly", arity: 1, run: replyOK},
		{name: "readwrite", arity: 1, run: replyOK},
		// server
		{name: "flushall", arity: -1, run: cmdFlush},
		{name: "flushdb", arity: -1, run: cmdFlush},
		{name: "dbsize", arity: 1, run: cmdDBSize},
		{name: "swapdb", arity: 3, run: cmdSwapDB},
		{name: "config", arity: -2, run: cmdConfig},
		{name: "info", arity: -1, run: cmdInfo},
		{name: "command", arity: -1, run: cmdCommand},
		{name: "cluster", arity: -2, run: cmdCluster}, // cluster.go
		{name: "asking", arity: 1, run: cmdAsking},
		// keys
		{name: "del", arity: -2, run: cmdDel},
		{name: "unlink", arity: -2, run: cmdDel},
		{name: "exists", arity: -2, run: cmdExists},
		{name: "type", arity: 2, run: cmdType},
		{name: "move", arity: 3, run: cmdMove},
		{name: "keys", arity: 2, run: cmdKeys},
		{name: "scan", arity: -2, run: cmdScan},
		{name: "expire", arity: -3, run: cmdExpire},
		{name: "pexpire", arity: -3, run: cmdExpire},
		{name: "expireat", arity: -3, run: cmdExpire},
		{name: "pexpireat", arity: -3, run: cmdExpire},
		{name: "ttl", arity: 2, run: cmdTTL},
		{name: "pttl", arity: 2, run: cmdTTL},
		{name: "persist", arity: 2, run: cmdPersist},
		// strings
		{name: "get", arity: 2, run: cmdGet},
		{name: "getex", arity: -2, run: cmdGetEx},
		{name: "set", arity: -3, run: cmdSet},
		{name: "mget", arity: -2, run: cmdMGet},
		{name: "mset", arity: -3, run: cmdMSet},
		{name: "incr", arity: 2, run: cmdIncr},
		{name: "decr", arity: 2, run: cmdIncr},
		{name: "incrby", arity: 3, run: cmdIncr},
		{name: "decrby", arity: 3, run: cmdIncr},
		{name: "append", arity: 3, run: cmdAppend},
		{name: "strlen", arity: 2, run: cmdStrlen},
		// lists
		{name: "lpush", arity: -3, run: cmdPush},
		{name: "rpush", arity: -3, run: cmdPush},
		{name: "lpop", arity: -2, run: cmdPop},
		{name: "rpop", arity: -2, run: cmdPop},
		{name: "llen", arity: 2, run: cardinality(kindList, func(o any) int { return o.(*list).len() })},
		{name: "lrange", arity: 4, run: cmdLRange},
		// hashes
		{name: "hset", arity: -4, run: cmdHSet},
		{name: "hget", arity: 3, run: cmdHGet},
		{name: "hdel", arity: -3, run: cmdHDel},
		{name: "hlen", arity: 2, run: cardinality(kindHash, func(o any) int { return len(o.(hashValue)) })},
		{name: "hgetall", arity: 2, run: cmdHGetAll},
		// sets
		{name: "sadd", arity: -3, run: cmdSAdd},
		{name: "srem", arity: -3, run: cmdSRem},
		{name: "spop", arity: -2, run: cmdSPop},
		{name: "scard", arity: 2, run: cardinality(kindSet, func(o any) int { return len(o.(setValue)) })},
		{name: "sismember", arity: 3, run: cmdSIsMember},
		{name: "smembers", arity: 2, run: cmdSMembers},
		// sorted sets
		{name: "zadd", arity: -4, run: cmdZAdd},
		{name: "zscore", arity: 3, run: cmdZScore},
		{name: "zcard", arity: 2, run: cardinality(kindZSet, func(o any) int { return o.(*zset).len() })},
		{name: "zrem", arity: -3, run: cmdZRem},
		{name: "zpopmin", arity: -2, run: cmdZPopMin},
		{name: "zrange", arity: -4, run: cmdZRange},
		// streams
		{name: "xadd", arity: -5, run: cmdXAdd},
		{name: "xlen", arity: 2, run: cardinality(kindStream, func(o any) int { return len(o.(*stream).entries) })},
	}
	commands = make(map[string]*command, len(table))
	for i := range table {
		commands[table[i].name] = &table[i]
	}
}

// Replies shared by several commands.
const (
	msgSyntax     = "ERR syntax error"
	msgNotInteger = "ERR value is not an integer or out of range"
	msgNotFloat   = "ERR value is not a valid float"
	msgWrongType  = "WRONGTYPE Operation against a key holding the wrong kind of value"
)

var errWrongType = errors.New(msgWrongType)

func replyOK(c *conn, _ [][]byte) { c.addOK() }

// eqFold reports whether b equals the lower-case ASCII s, ignoring case.
func eqFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		ch := b[i]
		if 'A' <= ch && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		if ch != s[i] {
			return false
		}
	}
	return true
}

// leadingOptions reads the options at the start of args, any of names
// (lower case, matched ignoring case) in any order and number: given[i] is
// whether names[i] was, and n how many arguments were options.
func leadingOptions(args [][]byte, names ...string) (given [8]bool, n int) {
	for ; n < len(args); n++ {
		i := slices.IndexFunc(names, func(name string) bool { return eqFold(args[n], name) })
		if i < 0 {
			break
		}
		given[i] = true
	}
	return given, n
}

// --- connection ---

func cmdPing(c *conn, args [][]byte) {
	switch len(args) {
	case 1:
		c.out = append(c.out, "+PONG\r\n"...)
	case 2:
		c.addBulk(args[1])
	default:
		c.addError("ERR wrong number of arguments for 'ping' command")
	}
}

func cmdEcho(c *conn, args [][]byte) { c.addBulk(args[1]) }

func cmdQuit(c *conn, _ [][]byte) {
	c.addOK()
	c.quit = true
}

// checkPassword reports whether user and pass may log in: the default user,
// with Options.Password if one is set, any password if not.
func (c *conn) checkPassword(user, pass []byte) bool {
	if string(user) != "default" {
		return false
	}
	want := c.srv.opts.Password
	return want == "" || subtle.ConstantTimeCompare(pass, []byte(want)) == 1
}

const msgWrongPass = "WRONGPASS invalid username-password pair or user is disabled."

// AUTH [username] password
func cmdAuth(c *conn, args [][]byte) {
	switch {
	case len(args) > 3:
		c.addError(msgSyntax)
	case len(args) == 2 && c.srv.opts.Password == "":
		c.addError("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
	default:
		user, pass := []byte("default"), args[1]
		if len(args) == 3 {
			user, pass = args[1], args[2]
		}
		if !c.checkPassword(user, pass) {
			c.addError(msgWrongPass)
			return
		}
		c.authenticate()
		c.addOK()
	}
}

// HELLO [protover [AUTH username password] [SETNAME clientname]]
func cmdHello(c *conn, args [][]byte) {
	proto := c.proto
	if len(args) > 1 {
		v, ok := parseInt(args[1])
		if !ok {
			c.addError("ERR Protocol version is not an integer or out of range")
			return
		}
		if v < 2 || v > 3 {
			c.addError("NOPROTO unsupported protocol version")
			return
		}
		proto = int(v)
	}
	var user, pass, name []byte
	auth, setName := false, false
	for i := 2; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case eqFold(args[i], "auth") && more >= 2:
			auth, user, pass = true, args[i+1], args[i+2]
			i += 2
		case eqFold(args[i], "setname") && more >= 1:
			setName, name = true, args[i+1]
			i++
		default:
			c.addError("ERR Syntax error in HELLO option '" + string(args[i]) + "'")
			return
		}
	}
	if auth {
		if !c.checkPassword(user, pass) {
			c.addError(msgWrongPass)
			return
		}
		c.authenticate()
	}
	if !c.authed {
		c.addError("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO <proto> AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time")
		return
	}
	if setName {
		if !validName(name) {
			c.addError(msgBadName)
			return
		}
		c.name = string(name)
	}
	c.proto = proto
	// Clients pick features by server version; this server answers as the
	// valkey version whose behaviour it follows.
	c.addMap(7)
	c.addBulkString("server")
	c.addBulkString("valkey")
	c.addBulkString("version")
	c.addBulkString(valkeyVersion)
	c.addBulkString("proto")
	c.addInt(int64(c.proto))
	c.addBulkString("id")
	c.addInt(c.id)
	c.addBulkString("mode")
	c.addBulkString("standalone")
	c.addBulkString("role")
	c.addBulkString("master")
	c.addBulkString("modules")
	c.addArray(0)
}

const valkeyVersion = "8.0.0"

const msgBadName = "ERR Client names cannot contain spaces, newlines or special characters."

func validName(b []byte) bool {
	for _, ch := range b {
		if ch < '!' || ch > '~' {
			return false
		}
	}
	return true
}

// CLIENT subcommand ...: what clients send on connect, and a few more.
func cmdClient(c *conn, args [][]byte) {
	sub := args[1]
	n := len(args)
	switch {
	case eqFold(sub, "setname") && n == 3:
		if !validName(args[2]) {
			c.addError(msgBadName)
			return
		}
		c.name = string(args[2])
		c.addOK()
	case eqFold(sub, "getname") && n == 2:
		if c.name == "" {
			c.addNull()
		} else {
			c.addBulkString(c.name)
		}
	case eqFold(sub, "id") && n == 2:
		c.addInt(c.id)
	case eqFold(sub, "setinfo") && n == 4:
		switch {
		case eqFold(args[2], "lib-name"):
			c.libName = string(args[3])
		case eqFold(args[2], "lib-ver"):
			c.libVer = string(args[3])
		default:
			c.addError("ERR Unrecognized option '" + string(args[2]) + "'")
			return
		}
		c.addOK()
	case eqFold(sub, "info") && n == 2:
		c.addVerbatim(c.info() + "\n")
	case eqFold(sub, "tracking") && n >= 3:
		// Tracking needs invalidation messages pushed to the client, which
		// this server does not send: only OFF is accepted. (valkey-go with
		// its client-side cache enabled needs ON: use DisableCache.)
		if eqFold(args[2], "off") {
			c.addOK()
		} else if eqFold(args[2], "on") {
			c.addError("ERR client tracking is not supported by this server")
		} else {
			c.addError(msgSyntax)
		}
	case (eqFold(sub, "no-evict") || eqFold(sub, "no-touch")) && n == 3:
		if eqFold(args[2], "on") || eqFold(args[2], "off") {
			c.addOK()
		} else {
			c.addError(msgSyntax)
		}
	case eqFold(sub, "help") && n == 2:
		c.addArray(len(clientHelp))
		for _, l := range clientHelp {
			c.addSimple(l)
		}
	default:
		subcommandError(c, "client", args, clientSubs)
	}
}

var clientSubs = []string{"setname", "getname", "id", "setinfo", "info", "tracking", "no-evict", "no-touch", "help"}

var clientHelp = []string{
	"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"GETNAME", "ID", "INFO", "SETNAME <name>", "SETINFO <LIB-NAME|LIB-VER> <value>",
	"TRACKING OFF", "NO-EVICT (ON|OFF)", "NO-TOUCH (ON|OFF)", "HELP",
}

// subcommandError replies as valkey does to an unknown subcommand, or to a
// known one with the wrong number of arguments.
func subcommandError(c *conn, container string, args [][]byte, known []string) {
	sub := strings.ToLower(string(args[1]))
	for _, k := range known {
		if k == sub {
			c.addError("ERR wrong number of arguments for '" + container + "|" + sub + "' command")
			return
		}
	}
	c.addError("ERR unknown subcommand '" + string(args[1][:min(len(args[1]), 128)]) + "'. Try " + strings.ToUpper(container) + " HELP.")
}

// info is the line CLIENT INFO returns.
func (c *conn) info() string {
	return fmt.Sprintf("id=%d addr=%s laddr=%s name=%s db=%d resp=%d lib-name=%s lib-ver=%s",
		c.id, c.remoteAddr(), c.localAddr(), c.name, c.dbIndex, c.proto, c.libName, c.libVer)
}

// --- server ---

// configParams are the parameters CONFIG GET knows: what valkey-benchmark
// and clients ask for.
var configParams = []struct{ name, value string }{
	{"appendonly", "no"},
	{"databases", ""}, // from Options
	{"maxmemory", "0"},
	{"maxmemory-policy", "noeviction"},
	{"proto-max-bulk-len", ""}, // from Options
	{"client-query-buffer-limit", ""},
	{"requirepass", ""},
	{"save", ""},
}

// CONFIG GET pattern [pattern ...] | CONFIG SET (refused) | CONFIG RESETSTAT
func cmdConfig(c *conn, args [][]byte) {
	sub := args[1]
	switch {
	case eqFold(sub, "get") && len(args) >= 3:
		type kv struct{ k, v string }
		var found []kv
		for _, p := range configParams {
			for _, pat := range args[2:] {
				if ok, _ := path.Match(strings.ToLower(string(pat)), p.name); ok {
					found = append(found, kv{p.name, c.configValue(p.name, p.value)})
					break
				}
			}
		}
		c.addMap(len(found))
		for _, f := range found {
			c.addBulkString(f.k)
			c.addBulkString(f.v)
		}
	case eqFold(sub, "set") && len(args) >= 4:
		c.addError("ERR CONFIG SET is not supported by this server")
	case eqFold(sub, "resetstat") && len(args) == 2:
		c.addOK()
	default:
		subcommandError(c, "config", args, []string{"get", "set", "resetstat"})
	}
}

func (c *conn) configValue(name, value string) string {
	switch name {
	case "proto-max-bulk-len":
		return strconv.Itoa(c.srv.opts.MaxBulkLen)
	case "client-query-buffer-limit":
		return strconv.Itoa(c.srv.opts.MaxQueryBuffer)
	case "databases":
		return strconv.Itoa(len(c.srv.dbs))
	case "requirepass":
		return c.srv.opts.Password
	}
	return value
}

// INFO [section ...]: a short report, in valkey's format.
func cmdInfo(c *conn, _ [][]byte) {
	st := c.srv.Stats()
	var b strings.Builder
	fmt.Fprintf(&b, "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:%s\r\n", valkeyVersion)
	b.WriteString("implementation:rdmapool server\r\nredis_mode:standalone\r\n\r\n")
	fmt.Fprintf(&b, "# Clients\r\nconnected_clients:%d\r\n\r\n", st.Connections)
	fmt.Fprintf(&b, "# Stats\r\ntotal_connections_received:%d\r\ntotal_commands_processed:%d\r\n\r\n",
		st.TotalConnections, st.Commands+c.commands)
	b.WriteString("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n\r\n")
	c.srv.keyspaceInfo(&b)
	c.addVerbatim(b.String())
}

// COMMAND [COUNT | LIST | DOCS ... | INFO ...]: enough for clients that
// ask on connect; command metadata only on a cluster's node
// (cluster_command.go).
func cmdCommand(c *conn, args [][]byte) {
	if len(args) == 1 {
		addCommandInfos(c, nil) // cluster_command.go
		return
	}
	sub := args[1]
	switch {
	case eqFold(sub, "count") && len(args) == 2:
		c.addInt(int64(len(commands)))
	case eqFold(sub, "list") && len(args) == 2:
		names := make([]string, 0, len(commands))
		for n := range commands {
			names = append(names, n)
		}
		sort.Strings(names)
		c.addArray(len(names))
		for _, n := range names {
			c.addBulkString(n)
		}
	case eqFold(sub, "docs"):
		c.addMap(0)
	case eqFold(sub, "info"):
		addCommandInfos(c, args[2:])
	default:
		subcommandError(c, "command", args, []string{"count", "list"})
	}
}
