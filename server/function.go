package server

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// Functions: FUNCTION LOAD, LIST, DELETE, FLUSH, HELP and FCALL,
// FCALL_RO, as valkey 8.0's functions.c and function_lua.c, on one Lua
// state (the functions are closures of it). functions.mu guards the
// libraries and that state: FUNCTION's subcommands take it alone, FCALL
// after every shard's lock (script.go), so no cycle. FUNCTION KILL is
// SCRIPT KILL's. Not done: FUNCTION STATS, DUMP and RESTORE.

type functions struct {
	mu   sync.Mutex
	vm   *luaVM
	libs map[string]*library
	fns  map[string]*luaFunction
}

type library struct {
	name, code string
	fns        []*luaFunction
}

type luaFunction struct {
	name, desc string
	hasDesc    bool
	flags      scriptFlags
	fn         *lua.LFunction
	lib        *library
}

// loadTimeout bounds a library's loading, as valkey's.
const loadTimeout = 500 * time.Millisecond

const msgBadFuncName = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"

func validFuncName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_') {
			return false
		}
	}
	return true
}

// libraryMeta parses a library's first line, "#!lua name=<name>".
func libraryMeta(code string) (name string, n int, msg string) {
	if !strings.HasPrefix(code, "#!") {
		return "", 0, "ERR Missing library metadata"
	}
	end := strings.IndexByte(code, '\n')
	if end < 0 {
		return "", 0, "ERR Invalid library metadata"
	}
	words, ok := splitArgs([]byte(code[:end]), nil)
	if !ok || len(words) == 0 {
		return "", 0, "ERR Invalid library metadata"
	}
	if engine := string(words[0][2:]); !strings.EqualFold(engine, "lua") {
		return "", 0, "ERR Engine '" + engine + "' not found"
	}
	seen := false
	for _, w := range words[1:] {
		v, ok := strings.CutPrefix(string(w), "name=")
		if !ok {
			return "", 0, "ERR Invalid metadata value given: " + string(w)
		}
		if seen {
			return "", 0, "ERR Invalid metadata value, name argument was given multiple times"
		}
		name, seen = v, true
	}
	if !seen {
		return "", 0, "ERR Library name was not given"
	}
	return name, end, ""
}

// FUNCTION LOAD [REPLACE] code
func cmdFunctionLoad(c *conn, args [][]byte) {
	replace := false
	rest := args[2:]
	for len(rest) > 1 && eqFold(rest[0], "replace") {
		replace, rest = true, rest[1:]
	}
	if len(rest) != 1 {
		if len(rest) == 0 {
			c.addError("ERR Function code was not given")
		} else {
			c.addError("ERR Unknown option given: " + string(rest[0]))
		}
		return
	}
	code := string(rest[0])
	name, n, msg := libraryMeta(code)
	if msg != "" {
		c.addError(msg)
		return
	}
	if !validFuncName(name) {
		c.addError("ERR " + msgBadFuncName)
		return
	}
	f := &c.srv.funcs
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.libs[name]
	if old != nil && !replace {
		c.addError("ERR Library '" + name + "' already exists")
		return
	}
	chunk, err := parse.Parse(strings.NewReader(code[n:]), "user_function")
	if err != nil {
		c.addError("ERR Error compiling function: user_function:" + compileError(err))
		return
	}
	proto, err := lua.Compile(chunk, "user_function")
	if err != nil {
		c.addError("ERR Error compiling function: user_function:" + compileError(err))
		return
	}
	proto.IsVarArg &^= lua.VarArgNeedsArg
	if f.vm == nil {
		f.vm = newLuaVM()
	}
	lib := &library{name: name, code: code}
	if msg := f.vm.loadLibrary(proto, lib); msg != "" {
		c.addError("ERR Error registering functions: " + msg)
		return
	}
	if len(lib.fns) == 0 {
		c.addError("ERR No functions registered")
		return
	}
	for _, fn := range lib.fns {
		if other := f.fns[fn.name]; other != nil && other.lib != old {
			c.addError("ERR Function " + fn.name + " already exists")
			return
		}
	}
	if f.libs == nil {
		f.libs, f.fns = map[string]*library{}, map[string]*luaFunction{}
	}
	if old != nil {
		f.remove(old)
	}
	f.libs[name] = lib
	for _, fn := range lib.fns {
		f.fns[fn.name] = fn
	}
	c.addBulkString(name)
}

func (f *functions) remove(lib *library) {
	for _, fn := range lib.fns {
		delete(f.fns, fn.name)
	}
	delete(f.libs, lib.name)
}

// loadLibrary runs a library's code with server.register_function (and
// log) as its only API, collecting its functions in lib; else the error.
func (vm *luaVM) loadLibrary(proto *lua.FunctionProto, lib *library) string {
	L := vm.L
	api := L.NewTable()
	api.RawSetString("register_function", L.NewFunction(func(L *lua.LState) int { return registerFunction(L, lib) }))
	api.RawSetString("log", L.NewFunction(vm.log))
	for _, k := range []string{"LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING", "REDIS_VERSION", "REDIS_VERSION_NUM",
		"VALKEY_VERSION", "VALKEY_VERSION_NUM", "SERVER_NAME"} {
		api.RawSetString(k, vm.apiReal.RawGetString(k))
	}
	L.SetMetatable(api, vm.real.Metatable) // a missing field: nonexistent global
	// As valkey, the library runs with the globals of every script, but
	// for server (and redis), which is the loading API while it runs: a
	// function it defines looks its globals up when it is called.
	ro := vm.readonly(api)
	vm.proxies = vm.proxies[:len(vm.proxies)-1] // goes with the load
	full := vm.real.RawGetString("server")
	vm.real.RawSetString("server", ro)
	vm.real.RawSetString("redis", ro)
	defer func() {
		vm.real.RawSetString("server", full)
		vm.real.RawSetString("redis", full)
	}()
	fn := L.NewFunctionFromProto(proto)
	fn.Env = vm.globals
	// valkey's load timeout: a library that never ends must not hold
	// functions.mu (and so every FCALL, which holds every shard).
	ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
	defer cancel()
	L.SetContext(ctx)
	L.Push(fn)
	err := L.PCall(0, 0, vm.errh)
	L.RemoveContext()
	L.SetTop(0)
	if ctx.Err() != nil {
		return "ERR FUNCTION LOAD timeout"
	}
	if err != nil {
		var obj lua.LValue = lua.LString(err.Error())
		if ae, ok := err.(*lua.ApiError); ok && ae.Object != nil {
			obj = ae.Object
		}
		if t, ok := obj.(*lua.LTable); ok {
			return luaStringField(t, "err")
		}
		return lua.LVAsString(obj)
	}
	return ""
}

// registerFunction is server.register_function(name, callback) or
// server.register_function{function_name=, callback=, flags=,
// description=}.
func registerFunction(L *lua.LState, lib *library) int {
	fn := &luaFunction{lib: lib}
	switch L.GetTop() {
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			return raise(L, "calling server.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		bad := ""
		t.ForEach(func(k, v lua.LValue) {
			if bad != "" {
				return
			}
			switch lua.LVAsString(k) {
			case "function_name":
				s, ok := v.(lua.LString)
				if !ok {
					bad = "function_name argument given to server.register_function must be a string"
				}
				fn.name = string(s)
			case "description":
				s, ok := v.(lua.LString)
				if !ok {
					bad = "description argument given to server.register_function must be a string"
				}
				fn.desc, fn.hasDesc = string(s), true
			case "callback":
				f, ok := v.(*lua.LFunction)
				if !ok {
					bad = "callback argument given to server.register_function must be a function"
				}
				fn.fn = f
			case "flags":
				ft, ok := v.(*lua.LTable)
				if !ok {
					bad = "flags argument to server.register_function must be a table representing function flags"
					return
				}
				ft.ForEach(func(_, f lua.LValue) {
					if flag, ok := scriptFlagNamed(lua.LVAsString(f)); ok {
						fn.flags |= flag
					} else {
						bad = "unknown flag given"
					}
				})
			default:
				bad = "unknown argument given to server.register_function"
			}
		})
		switch {
		case bad != "":
			return raise(L, bad)
		case fn.name == "":
			return raise(L, "server.register_function must get a function name argument")
		case fn.fn == nil:
			return raise(L, "server.register_function must get a callback argument")
		}
	case 2:
		name, ok := L.Get(1).(lua.LString)
		if !ok {
			return raise(L, "first argument to server.register_function must be a string")
		}
		f, ok := L.Get(2).(*lua.LFunction)
		if !ok {
			return raise(L, "second argument to server.register_function must be a function")
		}
		fn.name, fn.fn = string(name), f
	default:
		return raise(L, "wrong number of arguments to server.register_function")
	}
	if !validFuncName(fn.name) {
		return raise(L, msgBadFuncName)
	}
	for _, other := range lib.fns {
		if other.name == fn.name {
			return raise(L, "Function already exists in the library")
		}
	}
	lib.fns = append(lib.fns, fn)
	return 0
}

// FCALL function numkeys [key ...] [arg ...], FCALL_RO.
func cmdFcall(c *conn, args [][]byte) {
	ro := eqFold(args[0], "fcall_ro")
	numkeys, ok := parseInt(args[2])
	switch {
	case !ok:
		c.addError("ERR Bad number of keys provided")
		return
	case numkeys > int64(len(args)-3):
		c.addError("ERR Number of keys can't be greater than number of args")
		return
	case numkeys < 0:
		c.addError("ERR Number of keys can't be negative")
		return
	}
	f := &c.srv.funcs
	// Every shard first, then the functions (see the top of the file).
	if !c.tx.running {
		c.lockTx(true)
		c.tx.running = true
		defer c.unlockTx()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fn := f.fns[string(args[1])]
	switch {
	case fn == nil:
		c.addError("ERR Function not found")
		return
	case fn.flags&sfNoCluster != 0 && c.srv.cluster != nil:
		c.addError("ERR Can not run script on cluster, 'no-cluster' flag is set.")
		return
	case fn.flags&sfNoWrites == 0 && ro:
		c.addError("ERR Can not execute a script with write flag using *_ro command.")
		return
	}
	run := &scriptRun{c: c, sha: fn.name, ro: ro || fn.flags&sfNoWrites != 0, resp: 2, slot: -1, flags: fn.flags, fn: true}
	if c.srv.cluster != nil && numkeys > 0 {
		run.slot = keySlot(args[3])
	}
	db, dbIndex := c.db, c.dbIndex
	defer func() { c.db, c.dbIndex = db, dbIndex }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run.cancel = cancel
	run.start = time.Now()
	s := &c.srv.scripts
	s.running.Store(run)
	defer s.running.Store(nil)
	f.vm.callFunction(c, run, fn, args[3:3+numkeys], args[3+numkeys:], ctx)
}

// callFunction calls fn(keys, args) for run and replies to c.
func (vm *luaVM) callFunction(c *conn, run *scriptRun, fn *luaFunction, keys, argv [][]byte, ctx context.Context) {
	L := vm.L
	vm.cur = run
	fn.fn.Env = vm.globals
	L.SetContext(ctx)
	L.Push(fn.fn)
	L.Push(luaArray(L, keys))
	L.Push(luaArray(L, argv))
	err := L.PCall(2, 1, vm.errh)
	L.RemoveContext()
	vm.finish(c, run, fn.name, err)
}

// FUNCTION DELETE library-name
func cmdFunctionDelete(c *conn, args [][]byte) {
	f := &c.srv.funcs
	f.mu.Lock()
	defer f.mu.Unlock()
	lib := f.libs[string(args[2])]
	if lib == nil {
		c.addError("ERR Library not found")
		return
	}
	f.remove(lib)
	c.addOK()
}

// FUNCTION FLUSH [ASYNC|SYNC]
func cmdFunctionFlush(c *conn, args [][]byte) {
	if len(args) > 3 || len(args) == 3 && !eqFold(args[2], "async") && !eqFold(args[2], "sync") {
		c.addError("ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
		return
	}
	f := &c.srv.funcs
	f.mu.Lock()
	f.libs, f.fns = nil, nil
	if f.vm != nil {
		f.vm.L.Close()
		f.vm = nil
	}
	f.mu.Unlock()
	c.addOK()
}

// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]
func cmdFunctionList(c *conn, args [][]byte) {
	withCode, pattern, havePattern := false, "", false
	for i := 2; i < len(args); i++ {
		switch {
		case eqFold(args[i], "withcode") && !withCode:
			withCode = true
		case eqFold(args[i], "libraryname") && !havePattern:
			if i+1 >= len(args) {
				c.addError("ERR library name argument was not given")
				return
			}
			pattern, havePattern = string(args[i+1]), true
			i++
		default:
			c.addError("ERR Unknown argument " + string(args[i]))
			return
		}
	}
	f := &c.srv.funcs
	f.mu.Lock()
	defer f.mu.Unlock()
	var libs []*library
	for _, lib := range f.libs {
		if !havePattern || globMatch(pattern, lib.name) {
			libs = append(libs, lib)
		}
	}
	slices.SortFunc(libs, func(a, b *library) int { return strings.Compare(a.name, b.name) })
	c.addArray(len(libs))
	for _, lib := range libs {
		n := 3
		if withCode {
			n++
		}
		c.addMap(n)
		c.addBulkString("library_name")
		c.addBulkString(lib.name)
		c.addBulkString("engine")
		c.addBulkString("LUA")
		c.addBulkString("functions")
		c.addArray(len(lib.fns))
		for _, fn := range lib.fns {
			c.addMap(3)
			c.addBulkString("name")
			c.addBulkString(fn.name)
			c.addBulkString("description")
			if fn.hasDesc {
				c.addBulkString(fn.desc)
			} else {
				c.addNull()
			}
			c.addBulkString("flags")
			var flags []string
			for _, d := range scriptFlagNames {
				if fn.flags&d.flag != 0 {
					flags = append(flags, d.name)
				}
			}
			c.addSet(len(flags))
			for _, fl := range flags {
				c.addSimple(fl)
			}
		}
		if withCode {
			c.addBulkString("library_code")
			c.addBulkString(lib.code)
		}
	}
}

func cmdFunctionHelp(c *conn, _ [][]byte) { c.addHelp(functionHelp) }

var functionHelp = []string{
	"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"LOAD [REPLACE] <FUNCTION CODE>",
	"    Create a new library with the given library name and code.",
	"DELETE <LIBRARY NAME>",
	"    Delete the given library.",
	"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
	"    Return general information on all the libraries:",
	"    * Library name",
	"    * The engine used to run the Library",
	"    * Functions list",
	"    * Library code (if WITHCODE is given)",
	"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
	"STATS",
	"    Return information about the current function running:",
	"    * Function name",
	"    * Command used to run the function",
	"    * Duration in MS that the function is running",
	"    If no function is running, return nil",
	"    In addition, returns a list of available engines.",
	"KILL",
	"    Kill the current running function.",
	"FLUSH [ASYNC|SYNC]",
	"    Delete all the libraries.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the libraries.",
	"    * SYNC: Synchronously flush the libraries.",
	"DUMP",
	"    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
	"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
	"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
	"    control how to handle existing libraries (default APPEND):",
	"    * FLUSH: delete all existing libraries.",
	"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
	"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
	"      libraries with the new libraries (notice that even on this option there is a chance of failure",
	"      in case of functions name collision with another library).",
	"HELP",
	"    Print this help.",
}
