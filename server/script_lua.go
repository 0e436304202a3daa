package server

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The Lua side of scripting: the sandboxed state, the server.* API and
// the conversions between RESP and Lua values, as valkey 8.0's
// script_lua.c.
//
// RESP to Lua (a command's reply to server.call): an integer is a number,
// a bulk string a string, a null bulk or null array false, an array a
// table, a status {ok=s}, an error {err="CODE msg"}; in RESP3 (after
// server.setresp(3)) a map is {map={k=v...}}, a set {set={m=true...}}, a
// null nil, a boolean a boolean, a double {double=n}, a big number
// {big_number=s}, a verbatim string {verbatim_string={format=f,
// string=s}}; an attribute is dropped.
//
// Lua to RESP (a script's result): a string is a bulk string, a number
// an integer (truncated), a boolean :1 or null when the script's
// protocol is 2, else a RESP3 boolean; a table with a string err field
// an error, ok a status, a number double a double, a string big_number a
// big number, verbatim_string a verbatim string, a table map a map, set a
// set; any other table an array up to its first nil; anything else null.

// luaVM is a Lua state with valkey's sandbox, reused by one script run
// after another.
type luaVM struct {
	L       *lua.LState
	globals *lua.LTable   // the proxy the scripts see as _G
	real    *lua.LTable   // the globals behind it
	proxies []*lua.LTable // every read-only proxy, cleared after a run
	errh    *lua.LFunction
	fns     map[*lua.FunctionProto]*lua.LFunction
	cur     *scriptRun
	keys    [][]byte    // scratch for server.call's arguments
	empty   *lua.LTable // KEYS and ARGV between runs
	apiReal *lua.LTable // the server table behind its proxy
}

// luaGlobals are the globals valkey's allow lists keep from the base
// library.
var luaGlobals = []string{"xpcall", "tostring", "getfenv", "setmetatable", "next", "assert", "tonumber",
	"rawequal", "collectgarbage", "getmetatable", "rawset", "pcall", "type", "select", "unpack", "gcinfo",
	"pairs", "rawget", "loadstring", "ipairs", "_VERSION", "setfenv", "load", "error", "newproxy"}

func newLuaVM() *luaVM {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}, {lua.CoroutineLibName, lua.OpenCoroutine}, {lua.OsLibName, lua.OpenOs}} {
		L.Push(L.NewFunction(lib.fn))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	vm := &luaVM{L: L, fns: map[*lua.FunctionProto]*lua.LFunction{}}
	g := L.G.Global
	real := L.NewTable()
	for _, name := range luaGlobals {
		if v := g.RawGetString(name); v != lua.LNil {
			real.RawSetString(name, v)
		}
	}
	real.RawSetString("pcall", L.NewFunction(vm.pcall))
	real.RawSetString("tonumber", L.NewFunction(luaToNumber(g.RawGetString("tonumber"))))
	for _, name := range []string{"string", "table", "math", "coroutine"} {
		real.RawSetString(name, vm.readonly(g.RawGetString(name).(*lua.LTable)))
	}
	os := L.NewTable()
	if osLib, ok := g.RawGetString("os").(*lua.LTable); ok {
		os.RawSetString("clock", osLib.RawGetString("clock"))
	} else {
		os.RawSetString("clock", L.NewFunction(func(L *lua.LState) int { L.Push(lua.LNumber(0)); return 1 }))
	}
	real.RawSetString("os", vm.readonly(os))
	real.RawSetString("bit", vm.readonly(luaBitLib(L)))
	vm.apiReal = vm.api()
	api := vm.readonly(vm.apiReal)
	real.RawSetString("server", api)
	real.RawSetString("redis", api)
	// A global that is not there is an error.
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.ToString(2))
		return 0
	}))
	L.SetMetatable(real, mt)
	vm.real = real
	vm.globals = vm.readonly(real)
	real.RawSetString("_G", vm.globals)
	L.G.Global = vm.globals
	L.Env = vm.globals
	vm.errh = L.NewFunction(vm.errorHandler)
	vm.empty = vm.readonly(L.NewTable())
	vm.reset()
	return vm
}

// readonly returns a proxy of t that refuses new fields, as valkey's
// read-only tables.
func (vm *luaVM) readonly(t *lua.LTable) *lua.LTable {
	L := vm.L
	p := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	}))
	mt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(p, mt)
	vm.proxies = append(vm.proxies, p)
	return p
}

// api is the server (and redis) table.
func (vm *luaVM) api() *lua.LTable {
	L := vm.L
	t := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":               func(L *lua.LState) int { return vm.call(L, true) },
		"pcall":              func(L *lua.LState) int { return vm.call(L, false) },
		"log":                vm.log,
		"setresp":            vm.setresp,
		"sha1hex":            luaSha1hex,
		"error_reply":        luaErrorReply,
		"status_reply":       luaStatusReply,
		"set_repl":           luaSetRepl,
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"breakpoint":         func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"debug":              func(L *lua.LState) int { return 0 },
	}
	for name, fn := range fns {
		t.RawSetString(name, L.NewFunction(fn))
	}
	for name, v := range map[string]lua.LValue{
		"LOG_DEBUG": lua.LNumber(0), "LOG_VERBOSE": lua.LNumber(1), "LOG_NOTICE": lua.LNumber(2), "LOG_WARNING": lua.LNumber(3),
		"REPL_NONE": lua.LNumber(0), "REPL_AOF": lua.LNumber(1), "REPL_SLAVE": lua.LNumber(2), "REPL_REPLICA": lua.LNumber(2), "REPL_ALL": lua.LNumber(3),
		"REDIS_VERSION": lua.LString("7.2.4"), "REDIS_VERSION_NUM": lua.LNumber(0x070204),
		"VALKEY_VERSION": lua.LString(valkeyVersion), "VALKEY_VERSION_NUM": lua.LNumber(versionNum(valkeyVersion)),
		"SERVER_NAME": lua.LString("valkey"),
	} {
		t.RawSetString(name, v)
	}
	return t
}

// versionNum is valkey's version number of "major.minor.patch".
func versionNum(v string) int {
	n := 0
	for _, p := range strings.SplitN(v, ".", 3) {
		d, _ := strconv.Atoi(p)
		n = n<<8 | d
	}
	return n
}

// run runs sc for run and replies to c with its result or error.
func (vm *luaVM) run(c *conn, run *scriptRun, sc *luaScript, keys, argv [][]byte, ctx context.Context) {
	L := vm.L
	vm.cur = run
	fn := vm.fns[sc.proto]
	if fn == nil {
		fn = L.NewFunctionFromProto(sc.proto)
		vm.fns[sc.proto] = fn
	}
	fn.Env = vm.globals // setfenv in an earlier run changes nothing
	vm.real.RawSetString("KEYS", luaArray(L, keys))
	vm.real.RawSetString("ARGV", luaArray(L, argv))
	L.SetContext(ctx)
	L.Push(fn)
	err := L.PCall(0, 1, vm.errh)
	L.RemoveContext()
	vm.finish(c, run, sc.sha, err)
}

// finish replies to c with a run's result (on the stack) or error.
func (vm *luaVM) finish(c *conn, run *scriptRun, name string, err error) {
	L := vm.L
	if err != nil {
		var obj lua.LValue = lua.LString(err.Error())
		if ae, ok := err.(*lua.ApiError); ok && ae.Object != nil {
			obj = ae.Object
		}
		c.addError(scriptError(obj, name))
	} else {
		v := L.Get(-1)
		vm.reply(c, run, v, 0)
	}
	L.SetTop(0)
	vm.reset()
}

// reset undoes what a script may have left: KEYS and ARGV, fields set
// in the proxies with rawset.
func (vm *luaVM) reset() {
	vm.cur = nil
	// Overwritten, not deleted: gopher-lua's tables remember every key
	// once added, and a key deleted and added again grows them.
	vm.real.RawSetString("KEYS", vm.empty)
	vm.real.RawSetString("ARGV", vm.empty)
	for _, p := range vm.proxies {
		for k, _ := p.Next(lua.LNil); k != lua.LNil; k, _ = p.Next(lua.LNil) {
			p.RawSet(k, lua.LNil)
		}
	}
	clear(vm.keys)
}

func luaArray(L *lua.LState, items [][]byte) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for i, b := range items {
		t.RawSetInt(i+1, lua.LString(b))
	}
	return t
}

// errorHandler is valkey's __server__err__handler: it makes the error a
// table {err=...} and adds where it was raised (the caller of a Go
// function such as server.call).
func (vm *luaVM) errorHandler(L *lua.LState) int {
	e := L.Get(1)
	if run := vm.cur; run != nil && run.state.Load() == runKilled {
		e = errTable(L, msgScriptKilled)
	}
	t, ok := e.(*lua.LTable)
	if !ok {
		t = L.NewTable()
		t.RawSetString("err", lua.LString("ERR "+lua.LVAsString(L.ToStringMeta(e))))
	}
	for level := 1; level <= 2; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, nil); err != nil {
			break
		}
		if dbg.What == "G" && level == 1 {
			continue
		}
		if dbg.What != "G" {
			t.RawSetString("source", lua.LString("@"+dbg.Source))
			t.RawSetString("line", lua.LNumber(dbg.CurrentLine))
		}
		break
	}
	L.Push(t)
	return 1
}

// scriptError is the error reply of a script's error value, as valkey's
// luaCallFunction: the message, then which script and where.
func scriptError(obj lua.LValue, sha string) string {
	t, ok := obj.(*lua.LTable)
	if !ok {
		return "ERR Error running script " + sha + ", " + truncate(lua.LVAsString(obj), 100)
	}
	msg := luaStringField(t, "err")
	src, line := t.RawGetString("source"), t.RawGetString("line")
	if src != lua.LNil && line != lua.LNil {
		msg += " script: " + sha + ", on " + lua.LVAsString(src) + ":" + lua.LVAsString(line) + "."
	}
	return msg
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// luaStringField is t[name] if a string or number (lua_isstring), else "".
func luaStringField(t *lua.LTable, name string) string {
	switch v := t.RawGetString(name).(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return v.String()
	}
	return ""
}

// errTable is valkey's luaPushErrorBuff: "-CODE msg" or "msg" (code ERR)
// as {err="CODE msg"}.
func errTable(L *lua.LState, e string) *lua.LTable {
	code, msg := "ERR", e
	if strings.HasPrefix(e, "-") {
		if i := strings.IndexByte(e, ' '); i >= 0 {
			code, msg = e[1:i], e[i+1:]
		} else {
			msg = e[1:]
		}
	}
	msg = strings.Trim(msg, "\r\n")
	t := L.CreateTable(0, 1)
	t.RawSetString("err", lua.LString(code+" "+msg))
	return t
}

// raise raises valkey's error table for msg.
func raise(L *lua.LState, msg string) int {
	L.Error(errTable(L, msg), 1)
	return 0
}

// pcall is valkey's luaRedisPcall: the error of a table {err=...} is its
// message.
func (vm *luaVM) pcall(L *lua.LState) int {
	L.CheckAny(1)
	n := L.GetTop()
	err := L.PCall(n-1, lua.MultRet, nil)
	if err == nil {
		L.Insert(lua.LTrue, 1)
		return L.GetTop()
	}
	var e lua.LValue = lua.LString(err.Error())
	if ae, ok := err.(*lua.ApiError); ok && ae.Object != nil {
		e = ae.Object
	}
	if t, ok := e.(*lua.LTable); ok {
		if s, ok := t.RawGetString("err").(lua.LString); ok {
			e = s
		}
	}
	L.SetTop(0)
	L.Push(lua.LFalse)
	L.Push(e)
	return 2
}

// call is server.call (raise) and server.pcall.
func (vm *luaVM) call(L *lua.LState, raiseErr bool) int {
	run := vm.cur
	n := L.GetTop()
	fail := func(msg string) int {
		t := errTable(L, msg)
		if raiseErr {
			L.Error(t, 1)
		}
		L.Push(t)
		return 1
	}
	if n == 0 {
		return fail("Please specify at least one argument for this call")
	}
	args := vm.keys[:0]
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LNumber:
			args = append(args, appendFloat(nil, float64(v)))
		case lua.LString:
			args = append(args, []byte(v))
		default:
			vm.keys = args
			L.SetTop(0)
			return fail("Command arguments must be strings or integers")
		}
	}
	vm.keys = args
	L.SetTop(0)
	if run == nil {
		return fail("server.call is only available inside a script")
	}
	reply, msg := run.c.scriptCall(run, args)
	if msg != "" {
		return fail(msg)
	}
	v, _ := parseRESP(L, reply)
	if raiseErr && len(reply) > 0 && reply[0] == '-' {
		L.Error(v, 1)
	}
	L.Push(v)
	return 1
}

func (vm *luaVM) log(L *lua.LState) int {
	n := L.GetTop()
	switch {
	case n < 2:
		return raise(L, "server.log() requires two arguments or more.")
	case !isNumber(L.Get(1)):
		return raise(L, "First argument must be a number (log level).")
	}
	level := lua.LVAsNumber(L.Get(1))
	if level < 0 || level > 3 {
		return raise(L, "Invalid log level.")
	}
	return 0 // the server keeps no log
}

// isNumber is lua_isnumber: a number or a string that converts to one.
func isNumber(v lua.LValue) bool {
	switch v := v.(type) {
	case lua.LNumber:
		return true
	case lua.LString:
		_, err := strconv.ParseFloat(strings.TrimSpace(string(v)), 64)
		return err == nil
	}
	return false
}

func (vm *luaVM) setresp(L *lua.LState) int {
	if L.GetTop() != 1 {
		return raise(L, "server.setresp() requires one argument.")
	}
	resp := int(lua.LVAsNumber(L.Get(1)))
	if resp != 2 && resp != 3 {
		return raise(L, "RESP version must be 2 or 3.")
	}
	if vm.cur != nil {
		vm.cur.resp = resp
	}
	return 0
}

func luaSha1hex(L *lua.LState) int {
	if L.GetTop() != 1 {
		return raise(L, "wrong number of arguments")
	}
	var s string
	switch v := L.Get(1).(type) {
	case lua.LString:
		s = string(v)
	case lua.LNumber:
		s = v.String()
	}
	L.Push(lua.LString(sha1hex([]byte(s))))
	return 1
}

func luaErrorReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errTable(L, "wrong number or type of arguments"))
		return 1
	}
	e := string(s)
	if !strings.HasPrefix(e, "-") {
		e = "-" + e
	}
	L.Push(errTable(L, e))
	return 1
}

func luaStatusReply(L *lua.LState) int {
	s, ok := L.Get(1).(lua.LString)
	if L.GetTop() != 1 || !ok {
		L.Push(errTable(L, "wrong number or type of arguments"))
		return 1
	}
	t := L.CreateTable(0, 1)
	t.RawSetString("ok", s)
	L.Push(t)
	return 1
}

func luaSetRepl(L *lua.LState) int {
	if L.GetTop() != 1 {
		return raise(L, "server.set_repl() requires one argument.")
	}
	if flags := int(lua.LVAsNumber(L.Get(1))); flags&^3 != 0 {
		return raise(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
	}
	return 0 // nothing is replicated
}

// maxReplyDepth bounds the nesting of a script's result, as Lua's stack
// limit does valkey's.
const maxReplyDepth = 1000

// reply writes v, a script's result, to c as valkey's luaReplyToRedisReply.
func (vm *luaVM) reply(c *conn, run *scriptRun, v lua.LValue, depth int) {
	if depth > maxReplyDepth {
		c.addError("ERR reached lua stack limit")
		return
	}
	switch v := v.(type) {
	case lua.LString:
		c.addBulkString(string(v))
	case lua.LBool:
		switch {
		case run.resp == 2 && bool(v):
			c.addInt(1)
		case run.resp == 2:
			c.addNull()
		case c.proto == 3 && bool(v):
			c.out = append(c.out, "#t\r\n"...)
		case c.proto == 3:
			c.out = append(c.out, "#f\r\n"...)
		case bool(v):
			c.addInt(1)
		default:
			c.addInt(0)
		}
	case lua.LNumber:
		c.addInt(luaToInt(float64(v)))
	case *lua.LTable:
		vm.replyTable(c, run, v, depth)
	default:
		c.addNull()
	}
}

// luaToInt is C's (long long) of a double on x86-64: out of range and NaN
// give the smallest integer.
func luaToInt(f float64) int64 {
	if math.IsNaN(f) || f >= 1<<63 || f < -(1<<63) {
		return math.MinInt64
	}
	return int64(f)
}

func (vm *luaVM) replyTable(c *conn, run *scriptRun, t *lua.LTable, depth int) {
	if e, ok := t.RawGetString("err").(lua.LString); ok {
		c.addError(string(e))
		return
	}
	if s, ok := t.RawGetString("ok").(lua.LString); ok {
		c.addSimple(strings.Map(crlfToSpace, string(s)))
		return
	}
	if d, ok := t.RawGetString("double").(lua.LNumber); ok {
		c.addDouble(float64(d))
		return
	}
	if s, ok := t.RawGetString("big_number").(lua.LString); ok {
		b := strings.Map(crlfToSpace, string(s))
		if c.proto == 3 {
			c.out = append(c.out, '(')
			c.out = append(c.out, b...)
			c.out = append(c.out, '\r', '\n')
		} else {
			c.addBulkString(b)
		}
		return
	}
	if vt, ok := t.RawGetString("verbatim_string").(*lua.LTable); ok {
		f, okf := vt.RawGetString("format").(lua.LString)
		s, oks := vt.RawGetString("string").(lua.LString)
		if okf && oks {
			if c.proto == 3 {
				c.addLen('=', len(s)+4)
				c.out = append(c.out, f[:min(3, len(f))]...)
				c.out = append(c.out, ':')
				c.out = append(c.out, s...)
				c.out = append(c.out, '\r', '\n')
			} else {
				c.addBulkString(string(s))
			}
			return
		}
	}
	if m, ok := t.RawGetString("map").(*lua.LTable); ok {
		n := 0
		m.ForEach(func(lua.LValue, lua.LValue) { n++ })
		c.addMap(n)
		m.ForEach(func(k, v lua.LValue) {
			vm.reply(c, run, k, depth+1)
			vm.reply(c, run, v, depth+1)
		})
		return
	}
	if s, ok := t.RawGetString("set").(*lua.LTable); ok {
		n := 0
		s.ForEach(func(lua.LValue, lua.LValue) { n++ })
		c.addSet(n)
		s.ForEach(func(k, _ lua.LValue) { vm.reply(c, run, k, depth+1) })
		return
	}
	n := 0
	for t.RawGetInt(n+1) != lua.LNil {
		n++
	}
	c.addArray(n)
	for i := 1; i <= n; i++ {
		vm.reply(c, run, t.RawGetInt(i), depth+1)
	}
}

func crlfToSpace(r rune) rune {
	if r == '\r' || r == '\n' {
		return ' '
	}
	return r
}

// parseRESP reads one reply from b as a Lua value (valkey's
// redisProtocolToLuaType) and returns the rest of b.
func parseRESP(L *lua.LState, b []byte) (lua.LValue, []byte) {
	if len(b) < 3 {
		return lua.LNil, nil
	}
	typ := b[0]
	end := indexCRLF(b)
	line := string(b[1:end])
	rest := b[end+2:]
	switch typ {
	case '+':
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", lua.LString(line))
		return t, rest
	case '-':
		return errTable(L, "-"+line), rest
	case ':':
		n, _ := strconv.ParseInt(line, 10, 64)
		return lua.LNumber(n), rest
	case '$', '=':
		n, _ := strconv.Atoi(line)
		if n < 0 {
			return lua.LFalse, rest
		}
		s := string(rest[:n])
		rest = rest[n+2:]
		if typ == '$' {
			return lua.LString(s), rest
		}
		vt := L.CreateTable(0, 2)
		vt.RawSetString("string", lua.LString(s[min(4, len(s)):]))
		vt.RawSetString("format", lua.LString(s[:min(3, len(s))]))
		t := L.CreateTable(0, 1)
		t.RawSetString("verbatim_string", vt)
		return t, rest
	case '*', '>':
		n, _ := strconv.Atoi(line)
		if n < 0 {
			return lua.LFalse, rest
		}
		t := L.CreateTable(n, 0)
		for i := 1; i <= n; i++ {
			var v lua.LValue
			v, rest = parseRESP(L, rest)
			if v != lua.LNil {
				t.RawSetInt(i, v)
			}
		}
		return t, rest
	case '%', '~':
		n, _ := strconv.Atoi(line)
		inner := L.CreateTable(0, n)
		for range n {
			var k, v lua.LValue = nil, lua.LTrue
			k, rest = parseRESP(L, rest)
			if typ == '%' {
				v, rest = parseRESP(L, rest)
			}
			if k != lua.LNil && v != lua.LNil {
				inner.RawSet(k, v)
			}
		}
		t := L.CreateTable(0, 1)
		if typ == '%' {
			t.RawSetString("map", inner)
		} else {
			t.RawSetString("set", inner)
		}
		return t, rest
	case '|':
		n, _ := strconv.Atoi(line)
		for range 2 * n {
			_, rest = parseRESP(L, rest)
		}
		return parseRESP(L, rest)
	case '_':
		return lua.LNil, rest
	case '#':
		return lua.LBool(line == "t"), rest
	case ',':
		var f float64
		switch line {
		case "inf":
			f = math.Inf(1)
		case "-inf":
			f = math.Inf(-1)
		case "nan":
			f = math.NaN()
		default:
			f, _ = strconv.ParseFloat(line, 64)
		}
		t := L.CreateTable(0, 1)
		t.RawSetString("double", lua.LNumber(f))
		return t, rest
	case '(':
		t := L.CreateTable(0, 1)
		t.RawSetString("big_number", lua.LString(line))
		return t, rest
	}
	return lua.LNil, nil
}

func indexCRLF(b []byte) int {
	for i := 1; i+1 < len(b); i++ {
		if b[i] == '\r' && b[i+1] == '\n' {
			return i
		}
	}
	return len(b) - 2
}

// luaToNumber is tonumber with Lua 5.1's reading of a string in base 10
// (luaO_str2d: C's strtod, hexadecimal integers, spaces around), which
// gopher-lua's does not follow; other calls go to gopher-lua's.
func luaToNumber(orig lua.LValue) lua.LGFunction {
	return func(L *lua.LState) int {
		str, ok := L.Get(1).(lua.LString)
		if !ok || L.GetTop() != 1 {
			L.Push(orig)
			L.Insert(orig, 1)
			L.Pop(1)
			L.Call(L.GetTop()-1, 1)
			return 1
		}
		f, ok := str2d(string(str))
		if !ok {
			L.Push(lua.LNil)
		} else {
			L.Push(lua.LNumber(f))
		}
		return 1
	}
}

func str2d(s string) (float64, bool) {
	s = strings.Trim(s, " \t\n\v\f\r")
	if s == "" {
		return 0, false
	}
	body, neg := s, false
	if body[0] == '-' || body[0] == '+' {
		body, neg = body[1:], body[0] == '-'
	}
	if len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
		n, err := strconv.ParseUint(body[2:], 16, 64)
		if err != nil {
			return 0, false
		}
		if neg {
			return -float64(n), true
		}
		return float64(n), true
	}
	if strings.ContainsAny(body, "_") || body[0] == '-' || body[0] == '+' {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}
