package server

import (
	"slices"
	"strings"
)

// On a cluster's node, COMMAND and COMMAND INFO answer each command's
// arity, flags and key positions in valkey 5's form (six fields): what
// go-redis's ClusterClient reads to find a command's key, and logs about
// when it is missing. A standalone server answers an empty COMMAND and a
// null for each name, as it always has: its clients do not ask.

// readOnly are the commands with keys that only read them.
var readOnly = func() map[string]bool {
	m := map[string]bool{}
	for _, name := range strings.Fields(`get strlen llen lrange hget hlen hgetall scard sismember smembers
		zscore zcard zrange xlen type ttl pttl exists mget`) {
		m[name] = true
	}
	return m
}()

// addCommandInfos answers COMMAND INFO names, or COMMAND for every
// command when names is nil: a null for a name that is not a command.
func addCommandInfos(c *conn, names [][]byte) {
	switch {
	case c.srv.cluster == nil && names == nil:
		c.addArray(0)
		return
	case c.srv.cluster == nil:
		c.addArray(len(names))
		for range names {
			c.addNullArray()
		}
		return
	case names == nil:
		all := make([]string, 0, len(commands))
		for n := range commands {
			all = append(all, n)
		}
		slices.Sort(all)
		c.addArray(len(all))
		for _, n := range all {
			addCommandInfo(c, commands[n])
		}
		return
	}
	c.addArray(len(names))
	for _, n := range names {
		if cmd := commands[strings.ToLower(string(n))]; cmd != nil {
			addCommandInfo(c, cmd)
		} else {
			c.addNullArray()
		}
	}
}

func addCommandInfo(c *conn, cmd *command) {
	c.addArray(6)
	c.addBulkString(cmd.name)
	c.addInt(int64(cmd.arity))
	spec, keyed := keySpecs[cmd.name]
	switch {
	case !keyed:
		c.addArray(0)
	case readOnly[cmd.name]:
		c.addArray(1)
		c.addSimple("readonly")
	default:
		c.addArray(1)
		c.addSimple("write")
	}
	c.addInt(int64(spec.first))
	c.addInt(int64(spec.last))
	c.addInt(int64(spec.step))
}
