package server

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// Scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT, as valkey
// 8.0's eval.c, script.c and script_lua.c, on gopher-lua (Lua 5.1).
//
// Atomicity. A script may touch any key, declared or not (outside cluster
// mode, as valkey allows), so it runs holding the lock of every shard of
// every database made so far, as EXEC does for a transaction with a
// keyless command (multi.go: lockTx(true)); its row says anyKey, so an
// EXEC that queues it does the same. While it runs, its commands' own
// lock calls do nothing (tx.running). No other client's command runs
// meanwhile, but commands that take no shard lock (PING, SCRIPT KILL).
//
// Commands from Lua. server.call and server.pcall (redis.* is the same
// table) run a command on the caller's connection, with its output
// buffer swapped for a scratch one and its protocol set to the script's
// (server.setresp), then read the RESP reply back into Lua values
// (script_lua.go). A command's writes signal WATCH and client tracking as
// they do outside a script (the caller's connection is the shard's cur).
// SELECT in a script changes its database only for the script.
//
// The Lua states. Compiling is done once per script (the cache keeps the
// FunctionProto); a state is taken from a small pool for each run, and
// keeps the LFunction it made from each proto. Its globals are a
// read-only proxy (valkey's readonly globals: "Attempt to modify a
// readonly table", and "Script attempted to access nonexistent global
// variable"); KEYS and ARGV are set in the table behind it for each run,
// and whatever a script puts in a proxy with rawset is cleared after it.
//
// A runaway script. Other clients wait for a script on the shard locks,
// as valkey's clients wait for its one thread. Once the script has run
// for Options.ScriptTimeLimit (valkey's busy-reply-threshold, 5 s), a
// command that arrives and is not flagged allow_busy gets valkey's BUSY
// error instead of waiting; SCRIPT KILL cancels the state's context, and
// the script stops with valkey's error, unless it has written (then
// UNKILLABLE). Unlike valkey, a command that had started waiting before
// the limit keeps waiting, and on the gnet engine a SCRIPT KILL sent on a
// connection of the same event loop as the script waits too.
//
// FUNCTION and FCALL are function.go's. Not done: SCRIPT DEBUG, the
// cjson, cmsgpack and struct libraries (bit is there), valkey's own math.random sequence.
// gopher-lua's compile errors and number-to-string conversions (tostring,
// ..: Go's shortest digits, not %.14g) differ from Lua 5.1's.

const (
	msgNoScript     = "NOSCRIPT No matching script."
	msgBusyScript   = "BUSY Valkey is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	msgBusyFunction = "BUSY Valkey is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
	msgNotBusy      = "NOTBUSY No scripts in execution right now."
	msgUnkillable   = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
	msgScriptKilled = "Script killed by user with SCRIPT KILL..."
	// defaultScriptTimeLimit is valkey's busy-reply-threshold.
	defaultScriptTimeLimit = 5 * time.Second
)

// Script flags, from the shebang line (#!lua flags=...).
type scriptFlags uint8

const (
	sfCompat scriptFlags = 1 << iota // no shebang: EVAL's old semantics
	sfNoWrites
	sfAllowOOM
	sfAllowStale
	sfNoCluster
	sfAllowCrossSlot
)

var scriptFlagNames = []struct {
	name string
	flag scriptFlags
}{{"no-writes", sfNoWrites}, {"allow-oom", sfAllowOOM}, {"allow-stale", sfAllowStale},
	{"no-cluster", sfNoCluster}, {"allow-cross-slot-keys", sfAllowCrossSlot}}

// scriptFlagNamed returns the flag a script's shebang or a function's
// flags table names, or false for an unknown name.
func scriptFlagNamed(name string) (scriptFlags, bool) {
	for _, d := range scriptFlagNames {
		if d.name == name {
			return d.flag, true
		}
	}
	return 0, false
}

// luaScript is a script of the cache.
type luaScript struct {
	sha   string
	body  string
	flags scriptFlags
	proto *lua.FunctionProto
	// selects: the script may name a database (SELECT, MOVE, COPY,
	// SWAPDB, as far as a look at its text can tell): the first selectDBs
	// databases are made before it runs.
	selects bool
}

const selectDBs = 16

// scripting is a Server's script cache and Lua states.
type scripting struct {
	mu      sync.RWMutex
	scripts map[string]*luaScript // by lower-case SHA1
	free    []*luaVM              // idle states, under mu
	// running is the script running now, if any (every shard is locked
	// while one runs, so there is one at most per Server).
	running atomic.Pointer[scriptRun]
}

// scriptRun is one run of a script.
type scriptRun struct {
	c     *conn
	sha   string
	ro    bool // EVAL_RO, or no-writes
	resp  int  // server.setresp
	slot  int  // cluster mode: the slot of the keys touched, -1 none yet
	flags scriptFlags
	start time.Time
	// state: runClean, then runDirty once a write command has run (SCRIPT
	// KILL cannot stop it), or runKilled; changed by CAS, by the script's
	// goroutine (to dirty) and SCRIPT KILL's (to killed).
	state   atomic.Int32
	cancel  context.CancelFunc
	scratch []byte
	fn      bool // FCALL's, not EVAL's
}

const (
	runClean int32 = iota
	runDirty
	runKilled
)

func sha1hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// shebang parses the flags of a script's first line, as valkey's
// evalExtractShebangFlags; n is the length of the line (kept out of the
// code compiled, but for its line feed).
func shebang(body string) (flags scriptFlags, n int, msg string) {
	if !strings.HasPrefix(body, "#!") {
		return sfCompat, 0, ""
	}
	end := strings.IndexByte(body, '\n')
	if end < 0 {
		return 0, 0, "ERR Invalid script shebang"
	}
	words, ok := splitArgs([]byte(body[:end]), nil)
	if !ok || len(words) == 0 {
		return 0, 0, "ERR Invalid engine in script shebang"
	}
	if string(words[0]) != "#!lua" {
		return 0, 0, "ERR Unexpected engine in script shebang: " + string(words[0])
	}
	for _, w := range words[1:] {
		list, ok := strings.CutPrefix(string(w), "flags=")
		if !ok {
			return 0, 0, "ERR Unknown lua shebang option: " + string(w)
		}
		for _, f := range strings.Split(list, ",") {
			if list == "" {
				break
			}
			flag, ok := scriptFlagNamed(f)
			if !ok {
				return 0, 0, "ERR Unexpected flag in script shebang: " + f
			}
			flags |= flag
		}
	}
	return flags, end, ""
}

// compile returns the cached script of body, compiling and caching it
// first; else valkey's error.
func (s *scripting) compile(body []byte) (*luaScript, string) {
	sha := sha1hex(body)
	s.mu.RLock()
	sc := s.scripts[sha]
	s.mu.RUnlock()
	if sc != nil {
		return sc, ""
	}
	src := string(body)
	flags, n, msg := shebang(src)
	if msg != "" {
		return nil, msg
	}
	chunk, err := parse.Parse(strings.NewReader(src[n:]), "user_script")
	if err != nil {
		return nil, "ERR Error compiling script (new function): user_script:" + compileError(err)
	}
	proto, err := lua.Compile(chunk, "user_script")
	if err != nil {
		return nil, "ERR Error compiling script (new function): user_script:" + compileError(err)
	}
	// Lua 5.1 gives a main chunk no arg table (gopher-lua makes one for
	// each call).
	proto.IsVarArg &^= lua.VarArgNeedsArg
	sc = &luaScript{sha: sha, body: src, flags: flags, proto: proto,
		selects: namesDB(src)}
	s.mu.Lock()
	if old := s.scripts[sha]; old != nil {
		sc = old
	} else {
		if s.scripts == nil {
			s.scripts = map[string]*luaScript{}
		}
		s.scripts[sha] = sc
	}
	s.mu.Unlock()
	return sc, ""
}

// compileError is gopher-lua's parse error without its file name; its
// wording is gopher-lua's, not Lua 5.1's.
func compileError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "line:"); i >= 0 {
		msg = msg[i+len("line:"):]
	}
	return strings.ReplaceAll(msg, "\n", " ")
}

// namesDB reports whether src mentions a command that names a database.
func namesDB(src string) bool {
	l := strings.ToLower(src)
	for _, w := range []string{"select", "move", "copy", "swapdb"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

func (s *scripting) lookup(sha []byte) *luaScript {
	if len(sha) != 40 {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.scripts[strings.ToLower(string(sha))]
}

func (s *scripting) getVM() *luaVM {
	s.mu.Lock()
	if n := len(s.free); n > 0 {
		vm := s.free[n-1]
		s.free = s.free[:n-1]
		s.mu.Unlock()
		return vm
	}
	s.mu.Unlock()
	return newLuaVM()
}

// maxIdleVMs bounds the idle states kept.
const maxIdleVMs = 4

func (s *scripting) putVM(vm *luaVM) {
	s.mu.Lock()
	if len(s.free) < maxIdleVMs {
		s.free = append(s.free, vm)
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	vm.L.Close()
}

// EVAL script numkeys [key ...] [arg ...], EVALSHA sha1 ..., EVAL_RO,
// EVALSHA_RO.
func cmdEval(c *conn, args [][]byte) {
	name := c.lowerName(args[0])
	bySHA := len(name) >= 7 && string(name[:7]) == "evalsha"
	ro := name[len(name)-1] == 'o' // eval_ro, evalsha_ro
	numkeys, ok := parseInt(args[2])
	switch {
	case !ok:
		c.addError(msgNotInteger)
		return
	case numkeys > int64(len(args)-3):
		c.addError("ERR Number of keys can't be greater than number of args")
		return
	case numkeys < 0:
		c.addError("ERR Number of keys can't be negative")
		return
	}
	s := &c.srv.scripts
	var sc *luaScript
	if bySHA {
		if sc = s.lookup(args[1]); sc == nil {
			c.addError(msgNoScript)
			return
		}
	} else {
		var msg string
		if sc, msg = s.compile(args[1]); msg != "" {
			c.addError(msg)
			return
		}
	}
	if sc.flags&sfCompat == 0 {
		switch {
		case sc.flags&sfNoCluster != 0 && c.srv.cluster != nil:
			c.addError("ERR Can not run script on cluster, 'no-cluster' flag is set.")
			return
		case sc.flags&sfNoWrites == 0 && ro:
			c.addError("ERR Can not execute a script with write flag using *_ro command.")
			return
		}
	}
	run := &scriptRun{c: c, sha: sc.sha, ro: ro || sc.flags&(sfCompat|sfNoWrites) == sfNoWrites,
		resp: 2, slot: -1, flags: sc.flags}
	if c.srv.cluster != nil && numkeys > 0 {
		run.slot = keySlot(args[3])
	}
	c.runScript(run, sc, args[3:3+numkeys], args[3+numkeys:])
}

// runScript runs sc with every shard locked (unless EXEC holds them) and
// replies with its result.
func (c *conn) runScript(run *scriptRun, sc *luaScript, keys, argv [][]byte) {
	s := &c.srv.scripts
	if sc.selects && !c.tx.running && c.srv.cluster == nil {
		// Databases cannot be made while every shard is locked.
		for i := range min(len(c.srv.dbs), selectDBs) {
			c.srv.db(i)
		}
	}
	if !c.tx.running {
		c.lockTx(true)
		c.tx.running = true
		defer c.unlockTx()
	}
	db, dbIndex := c.db, c.dbIndex
	defer func() { c.db, c.dbIndex = db, dbIndex }()
	vm := s.getVM()
	defer s.putVM(vm)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run.cancel = cancel
	run.start = time.Now()
	s.running.Store(run)
	defer s.running.Store(nil)
	vm.run(c, run, sc, keys, argv, ctx)
}

// checkBusy is the BUSY error for a command that arrives while another
// client's script has run for longer than the limit, "" if none.
func (c *conn) checkBusy(cmd *command) string {
	run := c.srv.scripts.running.Load()
	if run == nil || run.c == c || cmd.flags&fAllowBusy != 0 {
		return ""
	}
	limit := c.srv.opts.ScriptTimeLimit
	if limit <= 0 {
		limit = defaultScriptTimeLimit
	}
	if time.Since(run.start) < limit {
		return ""
	}
	if run.fn {
		return msgBusyFunction
	}
	return msgBusyScript
}

// SCRIPT LOAD script
func cmdScriptLoad(c *conn, args [][]byte) {
	sc, msg := c.srv.scripts.compile(args[2])
	if msg != "" {
		c.addError(msg)
		return
	}
	c.addBulkString(sc.sha)
}

// SCRIPT EXISTS sha1 [sha1 ...]
func cmdScriptExists(c *conn, args [][]byte) {
	c.addArray(len(args) - 2)
	for _, sha := range args[2:] {
		if c.srv.scripts.lookup(sha) != nil {
			c.addInt(1)
		} else {
			c.addInt(0)
		}
	}
}

// SCRIPT FLUSH [ASYNC|SYNC]
func cmdScriptFlush(c *conn, args [][]byte) {
	if len(args) > 3 || len(args) == 3 && !eqFold(args[2], "async") && !eqFold(args[2], "sync") {
		c.addError("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
		return
	}
	s := &c.srv.scripts
	s.mu.Lock()
	s.scripts = nil
	for _, vm := range s.free {
		vm.L.Close()
	}
	s.free = nil
	s.mu.Unlock()
	c.addOK()
}

// SCRIPT KILL, FUNCTION KILL
func cmdScriptKill(c *conn, args [][]byte) {
	run := c.srv.scripts.running.Load()
	if run == nil || run.c == c {
		c.addError(msgNotBusy)
		return
	}
	if byFunction := eqFold(args[0], "function"); run.fn != byFunction {
		if run.fn {
			c.addError(msgBusyFunction)
		} else {
			c.addError(msgBusyScript)
		}
		return
	}
	if run.state.CompareAndSwap(runClean, runKilled) || run.state.Load() == runKilled {
		run.cancel()
		c.addOK()
		return
	}
	c.addError(msgUnkillable)
}

// SCRIPT SHOW sha1
func cmdScriptShow(c *conn, args [][]byte) {
	sc := c.srv.scripts.lookup(args[2])
	if sc == nil {
		c.addError(msgNoScript)
		return
	}
	c.addBulkString(sc.body)
}

func cmdScriptHelp(c *conn, _ [][]byte) { c.addHelp(scriptHelp) }

var scriptHelp = []string{
	"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"DEBUG (YES|SYNC|NO)",
	"    Set the debug mode for subsequent scripts executed.",
	"EXISTS <sha1> [<sha1> ...]",
	"    Return information about the existence of the scripts in the script cache.",
	"FLUSH [ASYNC|SYNC]",
	"    Flush the Lua scripts cache. Very dangerous on replicas.",
	"    When called without the optional mode argument, the behavior is determined",
	"     by the lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the scripts cache.",
	"    * SYNC: Synchronously flush the scripts cache.",
	"KILL",
	"    Kill the currently executing Lua script.",
	"LOAD <script>",
	"    Load a script into the scripts cache without executing it.",
	"SHOW <sha1>",
	"    Show a script from the scripts cache.",
	"HELP",
	"    Print this help.",
}

// scriptCall runs a command for a script on c, as valkey's scriptCall,
// and returns its RESP reply, or the error that refused it.
func (c *conn) scriptCall(run *scriptRun, args [][]byte) ([]byte, string) {
	cmd := c.lookup(args[0])
	if cmd != nil && cmd.subs != nil && len(args) >= 2 {
		cmd = cmd.subs[string(c.lowerName(args[1]))]
	}
	switch {
	case cmd == nil:
		return nil, "Unknown command called from script"
	case cmd.arity > 0 && len(args) != cmd.arity || cmd.arity < 0 && len(args) < -cmd.arity:
		return nil, "Wrong number of args calling command from script"
	case cmd.flags&fNoScript != 0:
		return nil, "This Redis command is not allowed from script"
	case run.ro && (cmd.flags&fWrite != 0 || cmd.name == "publish" || cmd.name == "spublish"): // may_replicate
		return nil, "Write commands are not allowed from read-only scripts."
	}
	if cmd.flags&fWrite != 0 && !run.state.CompareAndSwap(runClean, runDirty) && run.state.Load() == runKilled {
		return nil, msgScriptKilled
	}
	if c.srv.cluster != nil {
		if msg := c.scriptSlot(run, cmd, args); msg != "" {
			return nil, msg
		}
	}
	if cmd.dbArgs[0] != 0 && c.srv.cluster == nil {
		// The databases are locked: one not made yet cannot be made now
		// (runScript makes the first selectDBs before).
		last := int(cmd.dbArgs[1])
		if last < 0 {
			last += len(args)
		}
		for i := int(cmd.dbArgs[0]); i <= last && i < len(args); i++ {
			if n, ok := parseInt(args[i]); ok && n >= 0 && n < int64(len(c.srv.dbs)) && c.srv.dbs[n].Load() == nil {
				return nil, "A database not used before the script is not supported in it by this server"
			}
		}
	}
	if c.trk.on && cmd.flags&fReadonly != 0 {
		c.remember(cmd, args) // the caller tracks what its script reads
	}
	out, proto := c.out, c.proto
	c.out, c.proto = run.scratch[:0], run.resp
	cmd.run(c, args)
	reply := c.out
	run.scratch = reply
	c.out, c.proto = out, proto
	return reply, ""
}

// scriptSlot is valkey's scriptVerifyClusterState: a command of a script
// on a cluster's node may touch only keys of this node, all in one slot
// (unless the script allows cross-slot keys, as one without a shebang).
// The caller holds every shard's lock.
func (c *conn) scriptSlot(run *scriptRun, cmd *command, args [][]byte) string {
	keys := cmd.keys.appendKeys(nil, args)
	slot, ok := keysSlot(keys)
	switch {
	case !ok:
		return "Command '" + cmd.name + "' in script attempted to access keys that don't hash to the same slot"
	case slot < 0:
		return ""
	}
	n := c.srv.cluster
	owner, target := n.cl.owner[slot].Load(), n.cl.target[slot].Load()
	switch {
	case owner == nil:
		return "Script attempted to access a slot not served"
	case owner == n && target != nil:
		present := 0
		for _, k := range keys {
			if c.db.shard(k).get(k) != nil { // locked: no has()
				present++
			}
		}
		switch {
		case present == len(keys):
		case present == 0:
			return "Script attempted to access a non local key in a cluster node"
		default:
			return "Unable to execute command '" + cmd.name + "' in script because undeclared keys were accessed during rehashing of the slot"
		}
	case owner != n:
		return "Script attempted to access a non local key in a cluster node"
	}
	if run.flags&(sfCompat|sfAllowCrossSlot) == 0 {
		if run.slot == -1 {
			run.slot = slot
		} else if run.slot != slot {
			return "Script attempted to access keys that do not hash to the same slot"
		}
	}
	return ""
}
