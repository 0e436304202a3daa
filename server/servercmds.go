package server

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Server commands answered honestly for a server with no persistence and
// no replication: LASTSAVE, ROLE, WAIT, LOLWUT.

// LASTSAVE: nothing is ever saved, so the server's start time, when the
// data set was (empty and) "saved" last.
func cmdLastSave(c *conn, _ [][]byte) { c.addInt(c.srv.started.Unix()) }

// ROLE: a master with no replicas: master, offset 0, no replica.
func cmdRole(c *conn, _ [][]byte) {
	c.addArray(3)
	c.addBulkString("master")
	c.addInt(0)
	c.addArray(0)
}

// WAIT numreplicas timeout: no replica ever acknowledges, so 0. valkey
// answers at once for numreplicas 0; for more it would block until the
// timeout (forever for 0): this server answers 0 at once.
func cmdWait(c *conn, args [][]byte) {
	if _, ok := parseInt(args[1]); !ok {
		c.addError(msgNotInteger)
		return
	}
	t, ok := parseInt(args[2])
	switch {
	case !ok:
		c.addError("ERR timeout is not an integer or out of range")
	case t < 0:
		c.addError("ERR timeout is negative")
	default:
		c.addInt(0)
	}
}

// LOLWUT [VERSION v]: valkey 8.0 answers its default version with the
// line below; versions 5 and 6 draw art before it, which this server
// leaves out: it answers the line for every version.
func cmdLolwut(c *conn, args [][]byte) {
	for i := 1; i < len(args); i++ {
		if eqFold(args[i], "version") && i+1 < len(args) {
			if _, ok := parseInt(args[i+1]); !ok {
				c.addError(msgNotInteger)
				return
			}
			i++
		}
	}
	c.addVerbatim("Redis ver. " + valkeyVersion + "\n")
}

// LATENCY LATEST|HISTORY|RESET|HELP: this server has no latency monitor,
// so there is never a sample: empty lists, and RESET resets 0 events.
func cmdLatencyEmpty(c *conn, _ [][]byte) { c.addArray(0) }

func cmdLatencyReset(c *conn, _ [][]byte) { c.addInt(0) }

func cmdLatencyHelp(c *conn, _ [][]byte) { c.addHelp(latencyHelp) }

var latencyHelp = []string{
	"LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"HISTORY <event>", "    Return time-latency samples for the <event> class.",
	"LATEST", "    Return the latest latency samples for all events.",
	"RESET [<event> ...]", "    Reset latency data of one or more <event> classes.", "    (default: reset all data for all event classes)",
	"HELP", "    Print this help.",
}

// SLOWLOG GET [count]|LEN|RESET|HELP: no slow log is kept yet, so it is
// always empty.
func cmdSlowlogGet(c *conn, args [][]byte) {
	if len(args) > 2 {
		if n, ok := parseInt(args[2]); !ok || n < -1 {
			c.addError("ERR count should be greater than or equal to -1")
			return
		}
	}
	c.addArray(0)
}

func cmdSlowlogLen(c *conn, _ [][]byte) { c.addInt(0) }

func cmdSlowlogHelp(c *conn, _ [][]byte) { c.addHelp(slowlogHelp) }

var slowlogHelp = []string{
	"SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"GET [<count>]", "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
	"    Entries are made of:", "    id, timestamp, time in microseconds, arguments array, client IP and port,", "    client name",
	"LEN", "    Return the length of the slowlog.", "RESET", "    Reset the slowlog.", "HELP", "    Print this help.",
}

// MEMORY USAGE key [SAMPLES count]: the estimate the keyspace keeps for
// what a key frees (keyBytes, the name, entry.bytes, which samples a
// collection's elements itself: count is checked and not otherwise used).
func cmdMemoryUsage(c *conn, args [][]byte) {
	for i := 3; i < len(args); i += 2 {
		if !eqFold(args[i], "samples") || i+1 >= len(args) {
			c.addError(msgSyntax)
			return
		}
		n, ok := parseInt(args[i+1])
		if !ok {
			c.addError(msgNotInteger)
			return
		}
		if n < 0 {
			c.addError(msgSyntax)
			return
		}
	}
	key := args[2]
	s := c.db.shard(key)
	s.rlock(c)
	defer s.runlock(c)
	e := s.get(key)
	if e == nil {
		c.addNull()
		return
	}
	c.addInt(keyBytes + int64(len(key)) + e.bytes())
}

// DEBUG SLEEP seconds | SET-ACTIVE-EXPIRE 0|1, as valkey's (its numbers
// parsed leniently, as atoi and strtod do: what is not a number is 0).
// SLEEP holds the connection's goroutine, or its event loop with the
// TCPEngine's loops (valkey stalls its whole server).
func cmdDebug(c *conn, args [][]byte) {
	switch {
	case len(args) == 3 && eqFold(args[1], "sleep"):
		f, _ := strconv.ParseFloat(strings.TrimSpace(string(args[2])), 64)
		if f > 0 && !math.IsInf(f, 0) {
			time.Sleep(time.Duration(f * float64(time.Second)))
		}
		c.addOK()
	case len(args) == 3 && eqFold(args[1], "set-active-expire"):
		n, _ := strconv.Atoi(leadingInt(string(args[2])))
		c.srv.noActiveExpire.Store(n == 0)
		c.addOK()
	default:
		c.addError("ERR unknown subcommand or wrong number of arguments for '" + string(args[1]) + "'. Try DEBUG HELP.")
	}
}

// leadingInt is the optional sign and digits s starts with, as atoi reads.
func leadingInt(s string) string {
	s = strings.TrimLeft(s, " \t\n")
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

func cmdMemoryHelp(c *conn, _ [][]byte) { c.addHelp(memoryHelp) }

// memoryHelp is valkey's text for the subcommands this server has.
var memoryHelp = []string{
	"MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"USAGE <key> [SAMPLES <count>]",
	"    Return memory in bytes used by <key> and its value. Nested values are",
	"    sampled up to <count> times (default: 5, 0 means sample all).",
	"HELP", "    Print this help.",
}
