package server

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
)

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
	if c.proto == 2 && c.subs.subscribed() && len(args) <= 2 {
		c.pingSubscribed(args)
		return
	}
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
	// Its subscriptions end now, not once the connection has closed: a
	// client that has read the reply and the close finds none left, as
	// valkey unsubscribes a client before it closes its socket (and sends
	// it nothing after QUIT's reply).
	if c.subs.subscribed() {
		c.dropSubs()
	}
}

// RESET: the connection as it was when it opened, as valkey's
// clearClientConnectionState: no transaction, watch or subscription,
// database 0, RESP2, no name, and not authenticated if a password is set.
func cmdReset(c *conn, _ [][]byte) {
	c.discard()
	c.tx.multi = false
	c.dropSubs()
	c.endTracking()
	c.db, c.dbIndex = c.srv.ks, 0
	c.setProto(2)
	c.name = ""
	c.asking = false
	c.replyOff, c.replySkipNext, c.mute = false, false, false // RESET's own reply is sent
	if c.srv.opts.Password != "" {
		c.authed = false
		c.rd.setAuthed(false)
	}
	c.addSimple("RESET")
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
	c.setProto(proto)
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

// CLIENT SETNAME name, GETNAME, ID, SETINFO, INFO, TRACKING, NO-EVICT,
// NO-TOUCH, HELP: what clients send on connect, and a few more.
func cmdClientSetName(c *conn, args [][]byte) {
	if !validName(args[2]) {
		c.addError(msgBadName)
		return
	}
	c.name = string(args[2])
	c.addOK()
}

func cmdClientGetName(c *conn, _ [][]byte) {
	if c.name == "" {
		c.addNull()
	} else {
		c.addBulkString(c.name)
	}
}

func cmdClientID(c *conn, _ [][]byte) { c.addInt(c.id) }

func cmdClientSetInfo(c *conn, args [][]byte) {
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
}

func cmdClientInfo(c *conn, _ [][]byte) { c.addVerbatim(c.info() + "\n") }

// CLIENT NO-EVICT / NO-TOUCH ON|OFF: accepted, with no effect.
func cmdClientOnOff(c *conn, args [][]byte) {
	if eqFold(args[2], "on") || eqFold(args[2], "off") {
		c.addOK()
	} else {
		c.addError(msgSyntax)
	}
}

// CLIENT KILL addr, CLIENT KILL [ID id] [TYPE type] [USER user] [ADDR
// addr] [LADDR addr] [SKIPME yes|no] [MAXAGE seconds], as valkey's: the
// old form may kill the caller and answers OK or "No such client", the
// new one skips the caller unless SKIPME no and counts. A connection is
// closed as the pub/sub limit closes one (closeAsync); the caller's own
// after its reply.
func cmdClientKill(c *conn, args [][]byte) {
	var addr, laddr *string
	var id, maxAge int64
	typ := ""
	skipMe := len(args) != 3
	if len(args) == 3 {
		a := string(args[2])
		addr = &a
	}
	for i := 2; len(args) > 3 && i < len(args); i += 2 {
		if i+1 >= len(args) {
			c.addError(msgSyntax)
			return
		}
		v := args[i+1]
		switch {
		case eqFold(args[i], "id"):
			n, ok := parseInt(v)
			if !ok || n < 1 {
				c.addError("ERR client-id should be greater than 0")
				return
			}
			id = n
		case eqFold(args[i], "maxage"):
			n, ok := parseInt(v)
			if !ok {
				c.addError("ERR maxage is not an integer or out of range")
				return
			}
			if n <= 0 {
				c.addError("ERR maxage should be greater than 0")
				return
			}
			maxAge = n
		case eqFold(args[i], "type"):
			switch t := strings.ToLower(string(v)); t {
			case "normal", "pubsub", "master", "replica", "slave":
				typ = t
			default:
				c.addError("ERR Unknown client type '" + string(v) + "'")
				return
			}
		case eqFold(args[i], "addr"):
			a := string(v)
			addr = &a
		case eqFold(args[i], "laddr"):
			a := string(v)
			laddr = &a
		case eqFold(args[i], "user"):
			if string(v) != "default" {
				c.addError("ERR No such user '" + string(v) + "'")
				return
			}
		case eqFold(args[i], "skipme") && eqFold(v, "yes"):
			skipMe = true
		case eqFold(args[i], "skipme") && eqFold(v, "no"):
			skipMe = false
		default:
			c.addError(msgSyntax)
			return
		}
	}
	now := time.Now().Unix()
	var victims []*conn
	self := false
	c.srv.mu.Lock()
	for o := range c.srv.conns {
		switch {
		case addr != nil && o.remoteAddr().String() != *addr,
			laddr != nil && o.localAddr().String() != *laddr,
			id != 0 && o.id != id,
			typ != "" && typ != o.clientType(),
			o == c && skipMe,
			maxAge != 0 && now-o.created.Unix() < maxAge:
			continue
		}
		if o == c {
			self = true
		} else {
			victims = append(victims, o)
		}
	}
	c.srv.mu.Unlock()
	for _, o := range victims {
		o.closeAsync()
	}
	killed := len(victims)
	if self {
		killed++
	}
	switch {
	case len(args) != 3:
		c.addInt(int64(killed))
	case killed == 0:
		c.addError("ERR No such client")
	default:
		c.addOK()
	}
	if self {
		c.quit = true // after the reply
	}
}

// clientType is CLIENT KILL TYPE's class of o: pubsub while it has a
// subscription (read from the hub, under its lock: o's own fields are its
// goroutine's), else normal.
func (o *conn) clientType() string {
	h := o.srv.hub
	h.mu.RLock()
	defer h.mu.RUnlock()
	for _, m := range []map[string]map[*conn]struct{}{h.channels, h.patterns, h.shard} {
		for _, set := range m {
			if _, ok := set[o]; ok {
				return "pubsub"
			}
		}
	}
	return "normal"
}

func cmdClientHelp(c *conn, _ [][]byte) { c.addHelp(clientHelp) }

// addHelp replies with a HELP subcommand's lines.
func (c *conn) addHelp(lines []string) {
	c.addArray(len(lines))
	for _, l := range lines {
		c.addSimple(l)
	}
}

var clientHelp = []string{
	"CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"GETNAME", "ID", "INFO", "SETNAME <name>", "SETINFO <LIB-NAME|LIB-VER> <value>",
	"TRACKING OFF", "NO-EVICT (ON|OFF)", "NO-TOUCH (ON|OFF)",
	"LIST [TYPE <type>] [ID <id> ...]", "KILL <ip:port> | KILL <option> [value] ... <option> [value]", "UNBLOCK <clientid> [TIMEOUT|ERROR]", "HELP",
}

// info is the line CLIENT INFO returns.
func (c *conn) info() string {
	return c.clientLine(c.view(), time.Now()) // clientlist.go
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
	{"client-output-buffer-limit", ""}, // pubsub's from Options.PubsubLimit
	{"requirepass", ""},
	{"save", ""},
}

// CONFIG GET pattern [pattern ...]
func cmdConfigGet(c *conn, args [][]byte) {
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
}

// CONFIG SET is refused: the configuration is Options.
func cmdConfigSet(c *conn, _ [][]byte) {
	c.addError("ERR CONFIG SET is not supported by this server")
}

func (c *conn) configValue(name, value string) string {
	switch name {
	case "proto-max-bulk-len":
		return strconv.Itoa(c.srv.opts.MaxBulkLen)
	case "client-query-buffer-limit":
		return strconv.Itoa(c.srv.opts.MaxQueryBuffer)
	case "databases":
		return strconv.Itoa(len(c.srv.dbs))
	case "client-output-buffer-limit":
		l := c.srv.opts.PubsubLimit
		return fmt.Sprintf("normal 0 0 0 slave 268435456 67108864 60 pubsub %d %d %d", max(l.Hard, 0), max(l.Soft, 0), l.SoftSeconds)
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
	fmt.Fprintf(&b, "# Clients\r\nconnected_clients:%d\r\nblocked_clients:%d\r\n\r\n", st.Connections, c.srv.blockedClients.Load())
	fmt.Fprintf(&b, "# Stats\r\ntotal_connections_received:%d\r\ntotal_commands_processed:%d\r\n\r\n",
		st.TotalConnections, st.Commands+c.commands)
	b.WriteString("# Replication\r\nrole:master\r\nconnected_slaves:0\r\n\r\n")
	c.srv.keyspaceInfo(c, &b)
	c.addVerbatim(b.String())
}
