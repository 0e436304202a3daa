package server

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/valkey-io/valkey-go"
)

// is sends args on rc and checks the reply.
func is(t *testing.T, rc *rawClient, want string, args ...string) {
	t.Helper()
	if got := rc.do(args...); got != want {
		t.Errorf("%q: %q, want %q", args, got, want)
	}
}

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
	{"return {tonumber('10', 2), tonumber(5), tonumber(' 0x1f '), tonumber('1e3'), tonumber('x'), tonumber('5.'), 7}"},
	{"return tonumber('1e400')"}, {"return tonumber(nil)"},
	// SELECT changes the script's database only.
	{"redis.call('select', 3) redis.call('set', 'dbk', 'x') return redis.call('dbsize')"}, {"return redis.call('exists', 'dbk')"},
	{"return redis.call('select', 99)"},
	// The bit library.
	{"return {bit.band(0xff, 0x0f, 7), bit.bor(1, 2, 4), bit.bxor(5, 3), bit.bnot(0), bit.tobit(2^32 + 5), bit.tobit(2.5), bit.tobit(3.5)}"},
	{"return {bit.lshift(1, 31), bit.rshift(-1, 28), bit.arshift(-256, 4), bit.rol(0x12345678, 8), bit.ror(0x12345678, 8), bit.bswap(0x12345678)}"},
	{"return {bit.tohex(255), bit.tohex(-1, -4), bit.tohex(0x1234, 2), bit.tohex(1, 20), bit.lshift(1, 33)}"},
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

// TestScriptClients: go-redis's Script.Run (EVALSHA, then EVAL on
// NOSCRIPT) and valkey-go's Lua helper, in RESP2 and RESP3.
func TestScriptClients(t *testing.T) {
	_, addr := startServer(t, nil)
	ctx := ctxT(t)
	const src = "redis.call('incrby', KEYS[1], ARGV[1]) return {redis.call('get', KEYS[1]), ARGV[2]}"
	for _, protocol := range []int{2, 3} {
		c := goRedis(t, addr, protocol)
		c.ScriptFlush(ctx)
		s := redis.NewScript(src)
		for i := 1; i <= 2; i++ { // NOSCRIPT, then cached
			v, err := s.Run(ctx, c, []string{"gr"}, 10, "x").Result()
			if err != nil {
				t.Fatalf("RESP%d go-redis Script.Run %d: %v", protocol, i, err)
			}
			if got := fmt.Sprint(v); got != fmt.Sprintf("[%d x]", 10*(i+2*(protocol-2))) {
				t.Errorf("RESP%d go-redis Script.Run %d = %v", protocol, i, got)
			}
		}
		if ex := c.ScriptExists(ctx, s.Hash()).Val(); len(ex) != 1 || !ex[0] {
			t.Errorf("RESP%d SCRIPT EXISTS after Script.Run = %v", protocol, ex)
		}
		ro := redis.NewScript("return redis.call('get', KEYS[1])")
		if v, err := ro.RunRO(ctx, c, []string{"gr"}).Result(); err != nil || v != fmt.Sprint(20*(protocol-1)) {
			t.Errorf("RESP%d go-redis Script.RunRO = %v, %v", protocol, v, err)
		}

		vc := valkeyGo(t, addr, protocol == 2)
		vc.Do(ctx, vc.B().ScriptFlush().Build())
		ls := valkey.NewLuaScript(src)
		for i := 1; i <= 2; i++ {
			arr, err := ls.Exec(ctx, vc, []string{"vk" + fmt.Sprint(protocol)}, []string{"5", "y"}).ToArray()
			if err != nil || len(arr) != 2 {
				t.Fatalf("RESP%d valkey-go LuaScript.Exec %d: %v, %v", protocol, i, arr, err)
			}
			if n, _ := arr[0].ToString(); n != fmt.Sprint(5*i) {
				t.Errorf("RESP%d valkey-go LuaScript.Exec %d = %q", protocol, i, n)
			}
		}
		if err := valkey.NewLuaScriptReadOnly("return redis.call('set', 'a', 'b')").Exec(ctx, vc, nil, nil).Error(); err == nil ||
			!strings.Contains(err.Error(), "Write commands are not allowed from read-only scripts.") {
			t.Errorf("RESP%d valkey-go ExecRO of a write: %v", protocol, err)
		}
	}
}

// TestScriptAtomic: a script's commands run with no other client's
// between them, on keys it declares and keys it does not.
func TestScriptAtomic(t *testing.T) {
	_, addr := startServer(t, nil)
	ctx := ctxT(t)
	// A read, then a write: two commands, one step only inside a script.
	const incr = "local v = tonumber(redis.call('get', KEYS[1]) or '0') redis.call('set', KEYS[1], v + 1) " +
		"local w = tonumber(redis.call('get', 'undeclared') or '0') redis.call('set', 'undeclared', w + 1) return v"
	const workers, each = 8, 200
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := goRedis(t, addr, 2+i%2)
			for range each {
				if i%2 == 0 {
					if err := c.Eval(ctx, incr, []string{"counter"}).Err(); err != nil {
						t.Error(err)
						return
					}
				} else if err := c.Incr(ctx, "undeclared").Err(); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	c := goRedis(t, addr, 2)
	if got := c.Get(ctx, "counter").Val(); got != strconv.Itoa(workers/2*each) {
		t.Errorf("counter = %s, want %d", got, workers/2*each)
	}
	if got := c.Get(ctx, "undeclared").Val(); got != strconv.Itoa(workers*each) {
		t.Errorf("undeclared = %s, want %d", got, workers*each)
	}
}

// TestScriptWatchTracking: a script's write makes a watcher's EXEC fail
// and sends a tracking client its invalidation, as the command would.
func TestScriptWatchTracking(t *testing.T) {
	_, addr := startServer(t, nil)
	w, other := dialRaw(t, addr), dialRaw(t, addr)
	is(t, w, "+OK\r\n", "watch", "wk")
	is(t, other, ":1\r\n", "eval", "return redis.call('incr', 'wk')", "0")
	is(t, w, "+OK\r\n", "multi")
	is(t, w, "+QUEUED\r\n", "get", "wk")
	is(t, w, "*-1\r\n", "exec")
	// An undeclared key too.
	is(t, w, "+OK\r\n", "watch", "wk")
	is(t, other, ":2\r\n", "eval", "return redis.call('incr', 'wk')", "1", "declared")
	is(t, w, "+OK\r\n", "multi")
	is(t, w, "*-1\r\n", "exec")

	tr := dialRaw(t, addr)
	tr.do("hello", "3")
	is(t, tr, "+OK\r\n", "client", "tracking", "on")
	is(t, tr, "$1\r\n2\r\n", "eval", "return redis.call('get', 'wk')", "0") // read by a script: tracked
	is(t, other, "+OK\r\n", "eval", "return redis.call('set', 'wk', 'x')", "0")
	if got := tr.reply(); got != ">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\nwk\r\n" {
		t.Errorf("invalidation after a script's SET: %q", got)
	}
}

// TestScriptKill: after the time limit, other clients get BUSY, and
// SCRIPT KILL stops the script.
func TestScriptKill(t *testing.T) {
	_, addr := startServer(t, &Options{ScriptTimeLimit: 50 * time.Millisecond, TCPEngine: TCPNetpoll})
	runner, other := dialRaw(t, addr), dialRaw(t, addr)
	is(t, other, "-NOTBUSY No scripts in execution right now.\r\n", "script", "kill")
	const loop = "local i = 0 while true do i = i + 1 end"
	runner.send(encode("eval", loop, "0"))
	for {
		got := other.do("ping")
		if got == "-"+msgBusyScript+"\r\n" {
			break
		}
		if got != "+PONG\r\n" {
			t.Fatalf("PING while a script runs: %q", got)
		}
	}
	is(t, other, "+OK\r\n", "script", "kill")
	want := "-ERR Script killed by user with SCRIPT KILL... script: " + sha1hex([]byte(loop)) + ", on @user_script:1.\r\n"
	if got := runner.reply(); got != want {
		t.Errorf("killed script's reply %q, want %q", got, want)
	}
	is(t, other, "+PONG\r\n", "ping")
	is(t, other, "-NOTBUSY No scripts in execution right now.\r\n", "script", "kill")
	is(t, runner, "+PONG\r\n", "ping")

	// A function: FUNCTION KILL, not SCRIPT KILL.
	is(t, runner, "$4\r\nspin\r\n", "function", "load", "#!lua name=spin\nredis.register_function('spin', function() "+loop+" end)")
	runner.send(encode("fcall", "spin", "0"))
	for {
		got := other.do("ping")
		if got == "-"+msgBusyFunction+"\r\n" {
			break
		}
		if got != "+PONG\r\n" {
			t.Fatalf("PING while a function runs: %q", got)
		}
	}
	is(t, other, "-"+msgBusyFunction+"\r\n", "script", "kill")
	is(t, other, "+OK\r\n", "function", "kill")
	want = "-ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:2.\r\n"
	if got := runner.reply(); got != want {
		t.Errorf("killed function's reply %q, want %q", got, want)
	}
}

// TestScriptCluster: on a cluster's node, a script's declared keys are
// routed as a command's, and its commands may touch only this node's keys,
// of one slot unless the script has no shebang (valkey's scriptVerifyClusterState).
func TestScriptCluster(t *testing.T) {
	ec := startCluster(t, 2)
	rc := dialRaw(t, ec.addrs[0])
	own, own2, other := keyIn(0), keyIn(1), keyIn(NumSlots-1)
	where := func(src string) string {
		return " script: " + sha1hex([]byte(src)) + ", on @user_script:" + strconv.Itoa(strings.Count(src, "\n")+1) + ".\r\n"
	}
	set := "return redis.call('set', KEYS[1], 'v')"
	is(t, rc, "+OK\r\n", "eval", set, "1", own)
	is(t, rc, "-MOVED 16383 "+ec.addrs[1]+"\r\n", "eval", set, "1", other)
	is(t, rc, "-CROSSSLOT Keys in request don't hash to the same slot\r\n", "eval", "return 1", "2", own, own2)
	get := "return redis.call('get', '" + other + "')"
	is(t, rc, "-ERR Script attempted to access a non local key in a cluster node"+where(get), "eval", get, "1", own)
	is(t, rc, "-ERR Script attempted to access a non local key in a cluster node"+where(get), "eval", get, "0")
	local := "return redis.call('get', '" + own2 + "')"
	is(t, rc, "$-1\r\n", "eval", local, "1", own) // no shebang: cross-slot keys allowed
	flagged := "#!lua\n" + local
	is(t, rc, "-ERR Script attempted to access keys that do not hash to the same slot"+where(flagged), "eval", flagged, "1", own)
	mset := "return redis.call('mset', '" + own + "', 1, '" + own2 + "', 2)"
	is(t, rc, "-ERR Command 'mset' in script attempted to access keys that don't hash to the same slot"+where(mset), "eval", mset, "0")
	is(t, rc, "-ERR Can not run script on cluster, 'no-cluster' flag is set.\r\n", "eval", "#!lua flags=no-cluster\nreturn 1", "0")
	is(t, rc, "-ERR SELECT is not allowed in cluster mode"+where("return redis.call('select', 1)"), "eval", "return redis.call('select', 1)", "0")
}

// BenchmarkEvalSha: a script of one GET (of a missing key), by SHA1.
func BenchmarkEvalSha(b *testing.B) {
	const src = "return redis.call('get', KEYS[1])"
	benchCommands(b, encode("script", "load", src), encode("evalsha", sha1hex([]byte(src)), "1", "k"), "$-1\r\n")
}

// TestFunctionMatchesValkey compares FUNCTION and FCALL with
// valkey-server's, in RESP2 and RESP3.
func TestFunctionMatchesValkey(t *testing.T) {
	theirs := testutil.ValkeyServer(t)
	_, ours := startServer(t, nil)
	lib := "#!lua name=mylib\n" +
		"redis.register_function('f1', function(keys, args) return {keys[1], args[1], #keys, #args} end)\n" +
		"redis.register_function{function_name='f2', callback=function(keys, args) return redis.call('set', keys[1], args[1]) end, flags={'no-writes'}, description='desc'}\n" +
		"redis.register_function{function_name='f3', callback=function(keys, args) return redis.call('incr', keys[1]) end}\n" +
		"redis.register_function('f4', function() return y end)\n" +
		"redis.register_function('f5', function() error('bad') end)\n"
	one := func(name, body string) string {
		return "#!lua name=" + name + "\nredis.register_function('" + name + "_f', function(keys, args) " + body + " end)"
	}
	for _, proto := range []string{"2", "3"} {
		a, b := dialRaw(t, ours), dialRaw(t, theirs)
		for _, rc := range []*rawClient{a, b} {
			rc.do("hello", proto)
			rc.do("flushall")
			rc.do("function", "flush")
		}
		for _, cmd := range [][]string{
			{"function", "load", lib}, {"function", "load", lib}, {"fcall", "f1", "1", "k", "a"}, {"fcall_ro", "f1", "2", "k", "j", "a", "b"},
			{"fcall", "f2", "1", "k", "a"}, {"fcall", "f3", "1", "n"}, {"fcall_ro", "f3", "1", "n"}, {"fcall", "f4", "0"}, {"fcall", "f5", "0"},
			{"fcall", "nosuch", "0"}, {"fcall", "f1", "-1"}, {"fcall", "f1", "5", "k"}, {"fcall", "f1", "x"},
			{"function", "load", "replace", one("mylib", "return 1")}, {"fcall", "f1", "0"}, {"fcall", "mylib_f", "0"},
			{"function", "load", one("other", "return 2")}, {"function", "list", "libraryname", "other"},
			{"function", "list", "withcode", "libraryname", "oth*"}, {"function", "list", "libraryname", "nosuch"},
			{"function", "load", "#!lua name=dup\nredis.register_function('mylib_f', function() return 1 end)"},
			{"function", "load", "return 1"}, {"function", "load", "#!lua"}, {"function", "load", "#!lua name=a b=c\n"},
			{"function", "load", "#!js name=a\n"}, {"function", "load", "#!lua name=a name=b\n"}, {"function", "load", "replace"},
			{"function", "load", "#!lua name=a-b\nreturn 1"}, {"function", "load", "#!lua name=x\nreturn 1"},
			{"function", "load", "#!lua name=x\nredis.register_function('f 1', function() return 1 end)"},
			{"function", "load", "#!lua name=x\nredis.call('ping')"}, {"function", "load", "#!lua name=x\nlocal a = b"},
			{"function", "load", "#!lua name=x\nredis.register_function('a', function() return 1 end)\nredis.register_function('a', function() return 1 end)"},
			{"function", "load", "#!lua name=x\nredis.register_function{function_name='a', callback=function() return 1 end, flags={'bad'}}"},
			{"function", "load", "#!lua name=x\nredis.register_function('a')"},
			{"function", "load", "#!lua name=x\nredis.register_function('a', function() return 1 end, 3)"},
			{"function", "load", "#!lua name=x\nredis.register_function{function_name='a', callback=function() return 1 end, other=1}"},
			{"function", "list", "x"}, {"function", "list", "libraryname"}, {"function", "list", "withcode", "withcode"},
			{"function", "delete", "nosuch"}, {"function", "delete", "other"}, {"fcall", "other_f", "0"},
			{"function", "flush", "x"}, {"function", "help"}, {"function", "flush"}, {"fcall", "mylib_f", "0"}, {"function", "list"},
			{"function", "load", "#!lua name=forever\nwhile true do end"},
			{"function", "load", "#!lua name=helper\nlocal function get(k) return redis.call('get', k) end\nredis.register_function('helper_f', function(keys) return get(keys[1]) end)"},
			{"fcall", "helper_f", "1", "k"},
			{"multi"}, {"function", "load", one("txlib", "return redis.call('incr', keys[1])")}, {"fcall", "txlib_f", "1", "tx"}, {"exec"},
		} {
			if got, want := a.do(cmd...), b.do(cmd...); got != want {
				t.Errorf("RESP%s %q: %s", proto, cmd, diff(got, want))
			}
		}
	}
}

// TestScriptUnkillable: SCRIPT KILL refuses a script that has written
// (its state is set here: a real one would never end).
func TestScriptUnkillable(t *testing.T) {
	srv, addr := startServer(t, nil)
	run := &scriptRun{c: &conn{}, cancel: func() { t.Error("a dirty script was cancelled") }}
	run.state.Store(runDirty)
	srv.scripts.running.Store(run)
	defer srv.scripts.running.Store(nil)
	rc := dialRaw(t, addr)
	is(t, rc, "-"+msgUnkillable+"\r\n", "script", "kill")
	is(t, rc, "-"+msgBusyScript+"\r\n", "function", "kill")
	fn := &scriptRun{c: &conn{}, fn: true, cancel: run.cancel}
	fn.state.Store(runDirty)
	srv.scripts.running.Store(fn)
	is(t, rc, "-"+msgBusyFunction+"\r\n", "script", "kill")
	is(t, rc, "-"+msgUnkillable+"\r\n", "function", "kill")
}
