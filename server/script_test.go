package server

import (
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// diffScripts are scripts whose replies must equal valkey-server's, byte
// for byte: the conversions between RESP and Lua both ways, in RESP2 and
// RESP3, and the errors. Each is EVAL'd with its keys and arguments.
var diffScripts = [][]string{
	// Lua to RESP.
	{"return 1"}, {"return -7.9"}, {"return 3.99"}, {"return 'str'"}, {"return true"}, {"return false"}, {"return nil"},
	{"return {1, 2, 'three', {4, 5}, true, false}"}, {"return {1, 2, nil, 4}"}, {"return {}"},
	{"return {ok='FINE'}"}, {"return {err='MY own error'}"}, {"return {err='no code'}"}, {"return {ok='a\\r\\nb'}"},
	{"return {double=3.5}"}, {"return {double=1/0}"}, {"return {big_number='123456789012345678901234567890'}"},
	{"return {verbatim_string={format='txt', string='hello'}}"}, {"return {map={a=1}}"}, {"return {set={x=true}}"},
	{"return {map={}}"}, {"return {set={}}"}, {"return 1e300"}, {"return -1e300"}, {"return 0/0"},
	{"return {1, {2, {3, {4}}}}"}, {"return {ok=5}"}, {"return {err=5}"}, {"return {x=1}"},
	{"return redis.status_reply('PONG')"}, {"return redis.error_reply('MY boom')"}, {"return redis.error_reply('-X y')"},
	{"return redis.error_reply('nocode')"}, {"return redis.error_reply(1)"}, {"return redis.status_reply()"},
	{"redis.setresp(3) return true"}, {"redis.setresp(3) return false"}, {"redis.setresp(3) return nil"},
	// KEYS and ARGV.
	{"return KEYS", "2", "a", "b", "c"}, {"return ARGV", "1", "a", "b", "c"}, {"return {#KEYS, #ARGV}", "0"},
	{"return ARGV[1] .. KEYS[1]", "1", "k", "v"},
	// RESP to Lua, RESP2.
	{"return redis.call('set', KEYS[1], ARGV[1])", "1", "sk", "v"},
	{"return redis.call('get', 'sk')"}, {"return redis.call('get', 'nosuch')"}, {"return type(redis.call('get', 'nosuch'))"},
	{"return redis.call('incr', 'sn')"}, {"return redis.call('incrbyfloat', 'sf', '1.5')"},
	{"redis.call('del', 'sl') redis.call('rpush', 'sl', 'a', 'b', 'c') return redis.call('lrange', 'sl', 0, -1)"},
	{"return redis.call('ping')"}, {"local r = redis.call('ping') return type(r) .. r.ok"},
	{"local r = redis.pcall('incr', 'sl') return r"}, {"local r = redis.pcall('incr', 'sl') return type(r) .. r.err"},
	{"return redis.call('incr', 'sl')"}, {"return redis.pcall('nosuch')"}, {"return redis.call('nosuch')"},
	{"return redis.call('get')"}, {"return redis.call('multi')"}, {"return redis.call()"}, {"return redis.call({})"},
	{"return redis.call('set', 'n', 12345678)"}, {"return redis.call('set', 'n', 1.5)"}, {"return redis.call('get', 'n')"},
	{"return redis.call('set', 'n', 1e20)"}, {"return redis.call('get', 'n')"},
	{"return redis.call('client', 'nosuch')"}, {"return redis.call('client')"}, {"return redis.call('config', 'get', 'save')"},
	{"return server.call('ping')"}, {"return server.pcall('incr', 'sl')"},
	{"return redis.call('hset', 'sh', 'f', 'v')"}, {"return redis.call('hgetall', 'sh')"}, {"return redis.call('smembers', 'nosuch')"},
	{"return redis.call('zadd', 'sz', 1.5, 'm')"}, {"return redis.call('zscore', 'sz', 'm')"}, {"return redis.call('zrange', 'sz', 0, -1, 'withscores')"},
	{"return redis.call('exists', 'sk', 'sn', 'nosuch')"},
	// RESP to Lua, RESP3.
	{"redis.setresp(3) return redis.call('hgetall', 'sh')"}, {"redis.setresp(3) return redis.call('zscore', 'sz', 'm')"},
	{"redis.setresp(3) return redis.call('get', 'nosuch')"}, {"redis.setresp(3) return type(redis.call('get', 'nosuch'))"},
	{"redis.setresp(3) return redis.call('smembers', 'nosuch')"}, {"redis.setresp(3) local r = redis.call('zscore', 'sz', 'm') return {type(r), r.double}"},
	{"redis.setresp(3) local r = redis.call('hgetall', 'sh') return r.map.f"},
	{"redis.setresp(3) redis.call('sadd', 'ss', 'one') local r = redis.call('smembers', 'ss') return tostring(r.set.one)"},
	{"redis.setresp(3) return redis.call('zrange', 'sz', 0, -1, 'withscores')"},
	{"redis.setresp(4)"}, {"redis.setresp()"},
	// The sandbox and the API.
	{"x = 1"}, {"return y"}, {"redis = nil"}, {"redis.call = nil"}, {"string.x = 1"}, {"local t = {} t.x = 1 return t.x"},
	{"return redis.sha1hex('')"}, {"return redis.sha1hex('abc')"}, {"return redis.sha1hex()"},
	{"redis.log(redis.LOG_WARNING, 'x') return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING}"},
	{"redis.log(9, 'x')"}, {"redis.log(1)"}, {"redis.log('a', 'x')"},
	{"return {redis.REPL_NONE, redis.REPL_AOF, redis.REPL_REPLICA, redis.REPL_ALL}"}, {"redis.set_repl(9)"},
	{"return redis.replicate_commands()"}, {"return server == redis"},
	{"return type(os) .. type(string) .. type(table) .. type(math) .. type(loadstring) .. type(print) .. type(dofile)"},
	{"error('boom')"}, {"error({err='MY boom'})"}, {"error('boom', 0)"}, {"local ok, e = pcall(error, 'x', 0) return {tostring(ok), e}"},
	{"local ok, e = pcall(redis.call, 'nosuch') return {tostring(ok), e}"},
	{"local ok, e = pcall(function() error({err='T x'}) end) return e"},
	{"return string.format('%d %s', 5, 'x')"}, {"return table.concat({'a', 'b'}, ',')"},
	{"return _VERSION"}, {"return math.floor(2.5)"},
	// Shebang.
	{"#!lua\nreturn 1"}, {"#!lua flags=no-writes\nreturn redis.call('set', 'a', 'b')"}, {"#!lua flags=no-writes\nreturn redis.call('get', 'sk')"},
	{"#!lua flags=bad\nreturn 1"}, {"#!luax\nreturn 1"}, {"#!lua x=1\nreturn 1"}, {"#!lua flags=\nreturn 1"},
	{"#!lua flags=allow-oom,no-writes\nreturn 1"}, {"#!lua"},
	// Numkeys.
	{"return 1", "-1"}, {"return 1", "2", "a"}, {"return 1", "x"}, {"return 1", "99999999999999999999"},
}

// TestScriptMatchesValkey runs diffScripts with EVAL (then EVALSHA and
// EVAL_RO) on both servers, in RESP2 and RESP3.
func TestScriptMatchesValkey(t *testing.T) {
	theirs := testutil.ValkeyServer(t)
	_, ours := startServer(t, nil)
	for _, proto := range []string{"2", "3"} {
		a, b := dialRaw(t, ours), dialRaw(t, theirs)
		for _, rc := range []*rawClient{a, b} {
			rc.do("hello", proto)
			rc.do("flushall")
			rc.do("script", "flush")
		}
		for _, s := range diffScripts {
			numkeys := "0"
			var rest []string
			if len(s) > 1 {
				numkeys, rest = s[1], s[2:]
			}
			for _, cmd := range [][]string{
				append([]string{"eval", s[0], numkeys}, rest...),
				append([]string{"eval_ro", s[0], numkeys}, rest...),
				append([]string{"evalsha", sha1hex([]byte(s[0])), numkeys}, rest...),
				{"script", "exists", sha1hex([]byte(s[0]))},
			} {
				if got, want := a.do(cmd...), b.do(cmd...); got != want {
					t.Errorf("RESP%s %q: %s", proto, cmd, diff(got, want))
				}
			}
		}
		for _, cmd := range [][]string{
			{"evalsha", "nosuch", "0"}, {"evalsha", "0123456789012345678901234567890123456789", "0"},
			{"evalsha_ro", "nosuch", "0"}, {"script", "load", "return 1"}, {"script", "load", "#!lua flags=bad\nreturn 1"},
			{"evalsha", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", "0"}, {"script", "exists", "E0E1F9FABFC9D4800C877A703B823AC0578FF8DB", "x"},
			{"script", "show", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"}, {"script", "show", "x"},
			{"script", "flush", "x"}, {"script", "flush", "async", "x"}, {"script", "flush", "sync"},
			{"script", "exists", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"}, {"script", "flush"}, {"script", "flush", "ASYNC"},
			{"script", "kill"}, {"script", "help"}, {"script", "nosuch"}, {"script"}, {"script", "load"},
			{"eval", "return 1"}, {"command", "getkeys", "eval", "return 1", "2", "a", "b", "c"},
			{"command", "getkeys", "eval", "return 1", "0"}, {"command", "getkeysandflags", "evalsha_ro", "x", "1", "k"},
			{"multi"}, {"eval", "return redis.call('incr', 'tx')", "0"}, {"set", "tx", "5"}, {"eval", "return redis.call('incr', 'tx')", "0"}, {"exec"},
		} {
			if got, want := a.do(cmd...), b.do(cmd...); got != want {
				t.Errorf("RESP%s %q: %s", proto, cmd, diff(got, want))
			}
		}
	}
}
