package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/seed54442f1a/rdmapool/cmd/rdmapool/internal/benchrun"
	"github.com/seed54442f1a/rdmapool/pool"
	"github.com/seed54442f1a/rdmapool/pool/gnettcp"
	"github.com/seed54442f1a/rdmapool/qp"
)

const benchUsage = `usage: rdmapool bench [flags] [command args...]

Load-tests a Valkey-compatible server the way valkey-benchmark does: -c
clients, each on its own connection from an rdmapool pool, send -n requests
per test, -P at a time, and the throughput and latency percentiles of each
test are reported. --duration runs each test for that long instead; given
with -n, until the first of the two. -c is bounded by the files this
process may open (ulimit -n), -P by -n, and a run whose clients would need
more than 2 GiB of buffers (-c × -P × the request's size, with -d) is
refused.

A command after the flags (rdmapool bench -r 1000 SET key:__rand_int__ v,
or after --) is benchmarked instead of the tests, as valkey-benchmark does:
each request sends it, with every __rand_int__ replaced as -r says.

With neither -h nor -p it starts the embedded server in this process (TCP on
127.0.0.1, and RDMA on the first active RDMA port's IPv4 address, or
RDMAPOOL_TEST_ADDR, when a device can be used; with -a as its password) and
runs -n 10000 per test; it says which transport ran and why (on stderr with
-q and --csv). With --cluster too, it starts an embedded cluster of
--cluster-nodes nodes (3) that split the slots evenly, each with a TCP port
and an RDMA port of its own, and follows CLUSTER SLOTS and MOVED as against
a real cluster.

--transport both runs the workload over RDMA, then over TCP, and prints them
side by side with the ratios rdma/tcp. Unless --warmup is given, each test
first runs unmeasured over each transport for a tenth of -n (or of
--duration), so that RDMA, which runs first, does not alone meet a cold
server. When RDMA cannot be used it still runs TCP, says why RDMA did not
run, and exits 1.

--tcp-engine chooses what drives the clients' TCP connections
(pool.Options.TCPEngine): netpoll, the default, or gnet (package
pool/gnettcp); the reports name it.

Each connection first sends AUTH (-a, with --user), SELECT (--dbnum) and
HELLO 3 (-3), in that order, as valkey-benchmark's do. -l repeats the
tests until SIGINT or SIGTERM, which then end it with exit status 0; -I
opens -c connections and holds them, idle, until then.

A server that sends no reply for --timeout (10 s) ends the run with an
error; after --duration's end, a request still in flight gets the longer of
the duration and 1 s, within --timeout. SIGINT or SIGTERM stops the run; a
second one kills the process.

--plot FILE writes, after the run, the latency by percentile of every test
over every transport that ran, on a logarithmic latency axis with p50, p99
and p99.9 marked, SVG or PNG by FILE's extension; a FILE that cannot be
written fails before the run.

Tests (-t), in the order they run, with valkey-benchmark's commands and
keys: ping_inline, ping_mbulk (ping: both), set, get, incr, lpush, rpush,
lpop, rpop, sadd, hset, spop, zadd, zpopmin, lrange_100, lrange_300,
lrange_500, lrange_600 (lrange: the four, each after an LPUSH that fills
the list), mset, xadd. As valkey-benchmark, it stops at the server's first
error reply.

Exit status: 0 done, 1 a run failed (cannot connect, an error reply, a
transport error), 2 bad flags.

flags:
`

// benchFlags are bench's flags, named as valkey-benchmark's.
type benchFlags struct {
	host                       string
	port, rdmaPort             int
	clients, requests, size    int
	pipeline, keyspace         int
	threads                    int
	tests                      string
	quiet, csv, json           bool
	transport, tcpEngine       string
	plot                       string
	duration, warmup, timeout  time.Duration
	spinWait                   time.Duration
	rdmaRxSize                 memSize // --rdma-rx-size; 0: the library's default
	cpuProfile                 string  // --cpuprofile
	embedded, hostSet, portSet bool
	defaultWarmup              bool // --warmup not given

	password, user   string // -a, --user
	dbnum, keepAlive int    // --dbnum, -k
	precision        int    // --precision
	seed             int64  // --seed, or from the time
	resp3            bool   // -3
	loop, idle       bool   // -l, -I
	cluster          bool   // --cluster
	clusterNodes     int    // --cluster-nodes
	version          bool   // --version
	command          []string

	policy pool.Policy
	engine pool.TCPEngine
	both   bool
	parsed []benchrun.Test
}

// embeddedRequests is -n's default against the embedded server, so that
// every default test runs in seconds on a small machine.
const embeddedRequests = 10000

func newBenchFlagSet(f *benchFlags) *flag.FlagSet {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.StringVar(&f.host, "h", "127.0.0.1", "server hostname")
	fs.IntVar(&f.port, "p", 6379, "server TCP port")
	fs.IntVar(&f.rdmaPort, "rdma-port", 0, "server RDMA port; 0 means the same as -p")
	fs.IntVar(&f.clients, "c", 50, "number of parallel connections")
	fs.IntVar(&f.requests, "n", 100000, "total number of requests per test (10000 against the embedded server)")
	fs.IntVar(&f.size, "d", 3, "data size of the tests' values (SET, LPUSH, HSET, MSET, XADD, ...) in bytes")
	fs.IntVar(&f.pipeline, "P", 1, "pipeline <numreq> requests")
	fs.StringVar(&f.tests, "t", "", "only run the comma-separated list of tests (the Tests above; ping and lrange name groups)")
	fs.BoolVar(&f.quiet, "q", false, "quiet: just show the throughput and p50 of each test")
	fs.BoolVar(&f.csv, "csv", false, "output in CSV format")
	fs.BoolVar(&f.json, "json", false, "output in JSON format")
	fs.IntVar(&f.keyspace, "r", 0, "replace each __rand_int__ (in the keys of SET, GET, INCR, MSET, the members of SADD, HSET and ZADD, ZADD's score, and a command's arguments) with a 12-digit random number below this keyspace (0: always 000000000000)")
	fs.StringVar(&f.transport, "transport", "auto", "rdma, tcp, auto (RDMA where it works, else TCP) or both (RDMA then TCP, compared)")
	fs.StringVar(&f.tcpEngine, "tcp-engine", "netpoll", "what drives the TCP connections: netpoll (the Go runtime's, as net.Dial) or gnet (the pool's gnet event loops)")
	fs.DurationVar(&f.duration, "duration", 0, "run each test for this long instead of -n requests (e.g. 5s); with -n too, until the first of the two")
	fs.DurationVar(&f.warmup, "warmup", 0, "run each test unmeasured for this long first")
	fs.DurationVar(&f.timeout, "timeout", benchrun.DefaultTimeout, "fail the run when the server sends no reply for this long (valkey-benchmark has no such limit)")
	fs.IntVar(&f.threads, "threads", 0, "client threads, as valkey-benchmark's --threads: over TCP, this many event loops, each driving a share of the clients (0: one, valkey-benchmark's default); RDMA and --tcp-engine gnet clients have a goroutine each, and then run Go code on at most this many threads (GOMAXPROCS)")
	fs.DurationVar(&f.spinWait, "spin-wait", 0, "how long a waiting RDMA read or write polls its completion queue before it parks (qp.Options.SpinWait), in the clients and the embedded server; 0 means the library's default (1ms), negative never polls. A longer spin pays off where the machine runs more busy threads than it has cores")
	fs.Var(&f.rdmaRxSize, "rdma-rx-size", "receive buffer of each RDMA client connection (qp.Options.RecvBufferSize), as valkey's rdma-rx-size: what a Valkey server may write before it waits for the client to read it, and what each connection pins; 0 means the library's default (1mb). Toward rdmapool serve it is the largest the buffer grows to")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the whole run to this `file`, for go tool pprof (as go test -cpuprofile)")
	fs.StringVar(&f.plot, "plot", "", "after the run, write the latency-by-percentile plot of each test and transport to this `file`, .svg or .png")
	fs.StringVar(&f.password, "a", "", "`password` for AUTH")
	fs.StringVar(&f.user, "user", "", "`username` for AUTH username password (ACL); needs -a")
	fs.IntVar(&f.dbnum, "dbnum", 0, "SELECT this `db` number first")
	fs.BoolVar(&f.resp3, "3", false, "start each session in RESP3 (HELLO 3)")
	fs.IntVar(&f.keepAlive, "k", 1, "1 = keep alive, 0 = reconnect after each request (its pipeline, with -P)")
	fs.BoolVar(&f.loop, "l", false, "loop: run the tests until SIGINT or SIGTERM")
	fs.BoolVar(&f.idle, "I", false, "idle mode: just open -c idle connections and wait until SIGINT or SIGTERM")
	fs.Int64Var(&f.seed, "seed", 0, "seed of the random keys of -r; by default from the time, as valkey-benchmark's")
	fs.IntVar(&f.precision, "precision", 3, "significant figures of the latency histograms, 1 to 4")
	fs.BoolVar(&f.cluster, "cluster", false, "cluster mode: find the primaries with CLUSTER SLOTS and send each command to the one that serves its key; a command given on the command line must put its key's hash tag in {tag}")
	fs.IntVar(&f.clusterNodes, "cluster-nodes", 3, fmt.Sprintf("with --cluster and neither -h nor -p: the nodes (1 to %d) of the embedded cluster started in this process", benchrun.MaxClusterNodes))
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	return fs
}

// parseBenchFlags parses and checks the flags; on error it returns the one
// line to print.
// tcpEngines are --tcp-engine's values: the pool's TCP engines by name.
var tcpEngines = map[string]pool.TCPEngine{
	pool.TCPNetpoll.String(): pool.TCPNetpoll,
	gnettcp.Engine.String():  gnettcp.Engine,
}

func parseBenchFlags(args []string) (*benchFlags, error) {
	f := &benchFlags{}
	fs := newBenchFlagSet(f)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	requestsSet, testsSet, rdmaPortSet := false, false, false
	warmupSet, seedSet, sizeSet, keyspaceSet, nodesSet := false, false, false, false, false
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "h":
			f.hostSet = true
		case "p":
			f.portSet = true
		case "n":
			requestsSet = true
		case "t":
			testsSet = true
		case "rdma-port":
			rdmaPortSet = true
		case "warmup":
			warmupSet = true
		case "seed":
			seedSet = true
		case "d":
			sizeSet = true
		case "r":
			keyspaceSet = true
		case "cluster-nodes":
			nodesSet = true
		}
	})
	if f.version {
		return f, nil
	}
	if !seedSet {
		f.seed = time.Now().UnixNano() ^ int64(os.Getpid())<<32
	}
	f.command = fs.Args()
	if keyspaceSet && f.keyspace == 0 {
		// valkey-benchmark's -r 0 replaces every __rand_int__ with
		// 000000000000, as a keyspace of 1 does; no -r leaves it as it is.
		f.keyspace = 1
	}
	f.embedded = !f.hostSet && !f.portSet
	if f.embedded && !requestsSet {
		f.requests = embeddedRequests
	}
	if f.requests < 1 {
		return nil, fmt.Errorf("-n %d: need at least 1 request", f.requests)
	}
	if f.duration > 0 && !requestsSet {
		f.requests = 0 // --duration alone: no bound on the requests
	}
	f.defaultWarmup = !warmupSet
	switch {
	case len(f.command) > 0 && testsSet:
		return nil, fmt.Errorf("-t and a command (%q) cannot be used together", strings.Join(f.command, " "))
	case len(f.command) > 0 && sizeSet:
		return nil, fmt.Errorf("-d and a command (%q) cannot be used together: the command is the payload", strings.Join(f.command, " "))
	case len(f.command) > 0 && f.idle:
		return nil, fmt.Errorf("-I and a command (%q) cannot be used together: -I sends nothing", strings.Join(f.command, " "))
	case f.user != "" && f.password == "":
		return nil, errors.New("--user needs -a, the user's password")
	case f.dbnum < 0:
		return nil, fmt.Errorf("--dbnum %d must not be negative", f.dbnum)
	case f.cluster && f.dbnum != 0:
		return nil, fmt.Errorf("--dbnum %d: a cluster has only db 0", f.dbnum)
	case f.keepAlive != 0 && f.keepAlive != 1:
		return nil, fmt.Errorf("-k %d: want 1 (keep alive) or 0 (reconnect)", f.keepAlive)
	case f.precision < 1 || f.precision > 4:
		return nil, fmt.Errorf("--precision %d: want 1 to 4 significant figures", f.precision)
	case f.loop && f.json:
		return nil, errors.New("-l and --json cannot be used together: the document would never end")
	case f.loop && f.plot != "":
		return nil, errors.New("-l and --plot cannot be used together: the plot is written when the run ends")
	case f.loop && strings.EqualFold(f.transport, "both"):
		return nil, errors.New("-l and --transport both cannot be used together")
	case f.idle && strings.EqualFold(f.transport, "both"):
		return nil, errors.New("-I and --transport both cannot be used together")
	case nodesSet && !f.cluster:
		return nil, fmt.Errorf("--cluster-nodes %d needs --cluster", f.clusterNodes)
	case nodesSet && !f.embedded:
		return nil, fmt.Errorf("--cluster-nodes %d is the size of the embedded cluster; a cluster given by -h or -p has its own", f.clusterNodes)
	case f.clusterNodes < 1 || f.clusterNodes > benchrun.MaxClusterNodes:
		return nil, fmt.Errorf("--cluster-nodes %d: want 1 to %d", f.clusterNodes, benchrun.MaxClusterNodes)
	case f.port < 1 || f.port > 65535:
		return nil, fmt.Errorf("-p %d is not a port (1 to 65535)", f.port)
	case f.rdmaPort < 0 || f.rdmaPort > 65535:
		return nil, fmt.Errorf("--rdma-port %d is not a port (1 to 65535, or 0 for -p)", f.rdmaPort)
	case f.clients < 1:
		return nil, fmt.Errorf("-c %d: need at least 1 client", f.clients)
	case f.clients > maxClients(f.embedded, !strings.EqualFold(f.transport, "tcp")):
		return nil, fmt.Errorf("-c %d: more connections than the %d files this process may open allow (ulimit -n); raise the limit or lower -c", f.clients, openFilesLimit())
	case f.size < 0 || f.size > 512<<20:
		return nil, fmt.Errorf("-d %d is out of range (0 to 512 MiB)", f.size)
	case f.rdmaRxSize != 0 && (f.rdmaRxSize < 4<<10 || f.rdmaRxSize > 256<<20):
		return nil, fmt.Errorf("--rdma-rx-size %d is out of range (4kb to 256mb, or 0 for the default)", f.rdmaRxSize)
	case f.pipeline < 1:
		return nil, fmt.Errorf("-P %d: the pipeline must be at least 1", f.pipeline)
	case f.keyspace < 0:
		return nil, fmt.Errorf("-r %d: the keyspace must not be negative", f.keyspace)
	case f.duration < 0:
		return nil, fmt.Errorf("--duration %v must not be negative", f.duration)
	case f.warmup < 0:
		return nil, fmt.Errorf("--warmup %v must not be negative", f.warmup)
	case f.timeout <= 0:
		return nil, fmt.Errorf("--timeout %v must be positive", f.timeout)
	case f.threads < 0:
		return nil, fmt.Errorf("--threads %d must not be negative", f.threads)
	case f.csv && f.json:
		return nil, errors.New("--csv and --json cannot be used together")
	case strings.TrimSpace(f.host) == "":
		return nil, errors.New("-h is empty")
	case testsSet && f.tests == "":
		return nil, errors.New("-t is empty: name the tests to run, or leave -t out for all")
	case rdmaPortSet && f.embedded:
		return nil, errors.New("--rdma-port is the port of a server given by -h or -p; the embedded server chooses its own")
	}
	if f.plot != "" {
		if _, err := benchrun.PlotFormat(f.plot); err != nil {
			return nil, fmt.Errorf("--plot %s: %v", f.plot, err)
		}
	}
	t := strings.ToLower(f.transport)
	if t == "both" {
		f.both = true
	} else {
		p, err := pool.ParsePolicy(t)
		if err != nil || t == "" {
			return nil, fmt.Errorf("--transport %q: want rdma, tcp, auto or both", f.transport)
		}
		f.policy = p
	}
	engine, ok := tcpEngines[strings.ToLower(f.tcpEngine)]
	if !ok {
		return nil, fmt.Errorf("--tcp-engine %q: want netpoll or gnet", f.tcpEngine)
	}
	f.engine = engine
	if len(f.command) > 0 {
		if f.cluster && !strings.Contains(strings.Join(f.command, " "), "{tag}") {
			return nil, fmt.Errorf("--cluster: the command (%q) must put {tag} in its key, which each request gets the hash tag of its primary's slot in", strings.Join(f.command, " "))
		}
		t, err := benchrun.Command(f.command)
		if err != nil {
			return nil, err
		}
		f.parsed = []benchrun.Test{t}
		return f, nil
	}
	tests, err := benchrun.Tests(f.tests, f.keyspace > 0, f.cluster)
	if err != nil {
		return nil, fmt.Errorf("-t: %v", err)
	}
	f.parsed = tests
	return f, nil
}

// benchCmd is `rdmapool bench`; SIGINT and SIGTERM stop it, and a second
// one kills it.
func benchCmd(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	context.AfterFunc(ctx, stop) // the signals' default action again
	return bench(ctx, args, stdout, stderr, isTerminal(stdout))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// errWriter keeps the first error of its writer's writes.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

// bench runs the benchmark; progress turns on the live status line. A
// report that could not be written fails the run.
func bench(ctx context.Context, args []string, stdout, stderr io.Writer, progress bool) int {
	out := &errWriter{w: stdout}
	code := benchReport(ctx, args, out, stderr, progress)
	if out.err != nil && code == 0 {
		fmt.Fprintf(stderr, "rdmapool bench: cannot write the report: %v\n", out.err)
		return 1
	}
	return code
}

func benchReport(ctx context.Context, args []string, stdout, stderr io.Writer, progress bool) int {
	f, err := parseBenchFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, benchUsage)
		fs := newBenchFlagSet(&benchFlags{})
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "rdmapool bench: %v (rdmapool bench --help for usage)\n", err)
		return 2
	}
	if f.version {
		fmt.Fprintln(stdout, version())
		return 0
	}
	cfg := benchrun.Config{
		Addr: net.JoinHostPort(f.host, strconv.Itoa(f.port)), RDMAPort: f.rdmaPort, Policy: f.policy, TCPEngine: f.engine,
		Clients: f.clients, Threads: f.threads, Requests: f.requests, DataSize: f.size, Pipeline: f.pipeline,
		Keyspace: f.keyspace, Tests: f.parsed, Duration: f.duration, Warmup: f.warmup, Timeout: f.timeout,
		Setup: benchrun.SetupRequests(f.user, f.password, f.dbnum, f.resp3), Seed: uint64(f.seed), Precision: f.precision,
		Reconnect: f.keepAlive == 0,
	}
	if len(f.command) > 0 {
		cfg.DataSize = benchrun.RequestSize(f.parsed[0]) // as valkey-benchmark's payload
	}
	if f.spinWait != 0 || f.rdmaRxSize != 0 {
		cfg.RDMA = &qp.Options{SpinWait: f.spinWait, RecvBufferSize: int(f.rdmaRxSize)}
	}
	if err := cfg.Check(); err != nil { // and -P is at most -n
		var me *benchrun.MemoryError
		if errors.As(err, &me) {
			err = fmt.Errorf("%v: lower -c, -P or -d", err)
		}
		fmt.Fprintf(stderr, "rdmapool bench: %v (rdmapool bench --help for usage)\n", err)
		return 2
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "rdmapool bench: "+format+"\n", a...)
		return 1
	}
	if f.plot != "" {
		if err := checkWritable(f.plot); err != nil {
			return fail("--plot: %v", err) // before the run, not after it
		}
	}
	if f.cpuProfile != "" {
		pf, err := os.Create(f.cpuProfile)
		if err != nil {
			return fail("--cpuprofile: %v", err)
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return fail("--cpuprofile: %v", err)
		}
		defer pprof.StopCPUProfile()
	}

	server := cfg.Addr
	// rdmaDown, when set, is why RDMA cannot run before anything is dialled
	// (the embedded server has no RDMA listener).
	var rdmaDown error
	var embeddedRDMA map[string]string // the embedded cluster's RDMA addresses
	if f.embedded && f.cluster {
		e, err := benchrun.StartEmbeddedCluster(f.clusterNodes, f.both || f.policy != pool.TCPOnly, cfg.RDMA, f.password)
		if err != nil {
			return fail("cannot start the embedded cluster: %v", err)
		}
		defer e.Close()
		server = "embedded cluster"
		cfg.Addr, cfg.RDMAAddr, cfg.RDMAPort = e.TCPAddrs[0], "", 0
		if e.RDMAAddrs != nil {
			cfg.RDMAAddrOf = pool.RDMAAddrTable(e.RDMAAddrs)
			embeddedRDMA = e.RDMAAddrs
		} else {
			rdmaDown = e.RDMAErr
		}
	} else if f.embedded {
		e, err := benchrun.StartEmbeddedAuth(f.both || f.policy != pool.TCPOnly, cfg.RDMA, f.password)
		if err != nil {
			return fail("cannot start the embedded server: %v", err)
		}
		defer e.Close()
		server = "embedded"
		cfg.Addr, cfg.RDMAAddr, cfg.RDMAPort = e.TCPAddr, e.RDMAAddr, 0
		if e.RDMAAddr == "" {
			rdmaDown = e.RDMAErr
			if rdmaDown == nil {
				rdmaDown = errors.New("not asked for")
			}
		}
	}

	text := !f.csv && !f.json
	if progress && text {
		cfg.Progress = stdout
	}
	// Where the transport line goes: stdout for text, stderr for CSV (so
	// stdout stays CSV) and -q (so it has only valkey-benchmark's lines),
	// nowhere for JSON (the document has it).
	var info io.Writer = stdout
	switch {
	case f.csv || f.quiet && text:
		info = stderr
	case f.json:
		info = io.Discard
	}
	described := false // -l's loops after the first say nothing of it
	describe := func(o *benchrun.Outcome) {
		if described {
			return
		}
		described = true
		engine := ""
		if o.TCPEngine != "" {
			engine = "; tcp engine: " + o.TCPEngine
		}
		fmt.Fprintf(info, "server: %s; transport: %s (%s)%s\n", describeServer(server, cfg), o.Transport, o.Reason, engine)
		if text && !f.quiet {
			fmt.Fprintln(info)
		}
	}
	rep := &benchrun.Report{Server: server, Seed: f.seed, KeepAlive: f.keepAlive != 0}
	// The text report's header: what valkey-benchmark says of the server's
	// configuration, read over TCP, left out where it cannot be.
	host := &benchrun.Host{NoKeepAlive: f.keepAlive == 0}
	if text && !f.quiet && !f.idle && !f.cluster {
		if sc, err := benchrun.FetchConfig(ctx, cfg.Addr, cfg.Setup, 2*time.Second); err == nil {
			host.Config = []benchrun.ServerConfig{sc}
		}
	}

	if f.cluster {
		// As valkey-benchmark: the primaries, then each one's configuration.
		setup := benchrun.SetupRequests(f.user, f.password, 0, f.resp3)
		cl, err := benchrun.DiscoverCluster(ctx, cfg.Addr, setup, f.timeout)
		if err != nil {
			return fail("cannot fetch the cluster's configuration from %s: %v", cfg.Addr, err)
		}
		nodes := cl.Nodes()
		if f.clients < len(nodes) {
			fmt.Fprintf(stderr, "rdmapool bench: -c %d: a cluster of %d primaries needs at least one client for each (rdmapool bench --help for usage)\n", f.clients, len(nodes))
			return 2
		}
		fmt.Fprintf(info, "Cluster has %d primary nodes:\n\n", len(nodes))
		host.Primaries, host.Config = len(nodes), nil
		for i, n := range nodes {
			rep.Primaries = append(rep.Primaries, n.Addr)
			if r := embeddedRDMA[n.Addr]; r != "" {
				fmt.Fprintf(info, "Primary %d: %s %s (rdma %s)\n", i, n.ID, n.Addr, r)
			} else {
				fmt.Fprintf(info, "Primary %d: %s %s\n", i, n.ID, n.Addr)
			}
			if text && !f.quiet {
				sc, err := benchrun.FetchConfig(ctx, n.Addr, setup, 2*time.Second)
				if err != nil {
					sc = benchrun.ServerConfig{Save: "?", AppendOnly: "?"}
				}
				host.Config = append(host.Config, sc)
			}
		}
		fmt.Fprintln(info)
		cfg.Cluster = cl
	}
	if f.idle {
		return idle(ctx, f, cfg, rdmaDown, stdout, stderr, info, server)
	}

	runOne := func(policy pool.Policy, reason string, live bool) (*benchrun.Outcome, error) {
		c := cfg
		c.Policy = policy
		c.ProgressTransport = f.both
		if f.both && f.defaultWarmup {
			// RDMA runs first: without a warm-up of its own, it alone would
			// measure the server warming up (keys created, memory grown).
			c.WarmupRequests = f.requests / 10
			c.Warmup = f.duration / 10
		}
		c.OnConnect = func(o *benchrun.Outcome) {
			if reason != "" {
				o.Reason = reason
			}
			if live {
				describe(o)
			}
		}
		if live && text {
			c.OnResult = func(o *benchrun.Outcome, r *benchrun.Result) {
				if f.quiet {
					benchrun.WriteQuiet(stdout, r)
				} else {
					benchrun.WriteTextHost(stdout, o, r, host)
				}
			}
		}
		return benchrun.Run(ctx, c)
	}
	// plot writes --plot's file, if asked for, and says where it went.
	plot := func(runs ...*benchrun.Outcome) error {
		if f.plot == "" {
			return nil
		}
		per := fmt.Sprintf("%d requests", f.requests)
		switch {
		case f.duration > 0 && f.requests > 0:
			per = fmt.Sprintf("%d requests or %v", f.requests, f.duration)
		case f.duration > 0:
			per = f.duration.String()
		}
		title := fmt.Sprintf("Latency by percentile: %d clients, pipeline %d, %d bytes payload, %s per test", f.clients, cfg.Pipeline, f.size, per)
		if err := benchrun.WritePlot(f.plot, title, benchrun.SeriesOf(runs...)); err != nil {
			return fmt.Errorf("--plot: %v", err)
		}
		fmt.Fprintf(info, "latency plot: %s\n", f.plot)
		return nil
	}
	runErr := func(err error) int {
		var se *benchrun.ServerError
		switch {
		case ctx.Err() != nil:
			return fail("interrupted")
		case errors.As(err, &se):
			return fail("%v", se) // as valkey-benchmark: "error from server: ..."
		}
		return fail("%v", err)
	}

	if !f.both {
		policy, reason := f.policy, ""
		if rdmaDown != nil {
			if policy == pool.RDMAOnly {
				return fail("--transport rdma: RDMA is unavailable: %v", rdmaDown)
			}
			if policy == pool.Auto {
				policy, reason = pool.TCPOnly, "auto: RDMA unavailable: "+rdmaDown.Error()
			}
		}
		if f.loop {
			return loop(ctx, runOne, policy, reason, f, stdout, stderr)
		}
		o, err := runOne(policy, reason, true)
		if err != nil {
			return runErr(err)
		}
		rep.Runs = []*benchrun.Outcome{o}
		switch {
		case f.csv:
			err = benchrun.WriteCSV(stdout, o)
		case f.json:
			err = benchrun.WriteJSON(stdout, rep)
		}
		if err != nil {
			return fail("cannot write the report: %v", err)
		}
		if err := plot(o); err != nil {
			return fail("%v", err)
		}
		return 0
	}

	// --transport both: RDMA, then TCP, then the comparison.
	var rdma *benchrun.Outcome
	if rdmaDown == nil {
		o, err := runOne(pool.RDMAOnly, "", false)
		switch {
		case err == nil:
			rdma = o
		case ctx.Err() != nil:
			return fail("interrupted")
		default:
			var ce *benchrun.ConnectError
			var se *benchrun.ServerError
			if errors.As(err, &se) {
				return runErr(err)
			}
			if !errors.As(err, &ce) {
				return fail("rdma: %v", err)
			}
			rdmaDown = err
		}
	}
	tcp, err := runOne(pool.TCPOnly, "", false)
	if err != nil {
		return runErr(err)
	}
	if rdma != nil {
		rep.Runs = []*benchrun.Outcome{rdma, tcp}
		rep.Ratios = benchrun.Ratios(rdma, tcp)
	} else {
		rep.Runs = []*benchrun.Outcome{tcp}
		rep.Unavailable = map[string]string{"rdma": rdmaDown.Error()}
	}
	switch {
	case f.csv:
		err = benchrun.WriteCSV(stdout, rep.Runs...)
	case f.json:
		err = benchrun.WriteJSON(stdout, rep)
	case f.quiet:
		if rdma == nil {
			fmt.Fprintf(stdout, "rdma: did not run: %v\n", rdmaDown)
		}
		benchrun.WriteQuietCompare(stdout, rdma, tcp)
	default:
		fmt.Fprintf(stdout, "server: %s; %d clients, %d bytes payload, pipeline %d; tcp engine: %s\n", describeServer(server, cfg), f.clients, f.size, cfg.Pipeline, f.engine)
		if rdma == nil {
			fmt.Fprintf(stdout, "rdma: did not run: %v\n", rdmaDown)
		}
		fmt.Fprintln(stdout)
		benchrun.WriteCompare(stdout, rdma, tcp)
	}
	if err != nil {
		return fail("cannot write the report: %v", err)
	}
	if err := plot(rep.Runs...); err != nil {
		return fail("%v", err)
	}
	if rdma == nil {
		return fail("--transport both: RDMA did not run: %v", rdmaDown)
	}
	return 0
}

// checkWritable checks that path can be written, leaving nothing behind.
func checkWritable(path string) error {
	if _, err := os.Stat(path); err == nil {
		fl, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return err
		}
		return fl.Close()
	}
	fl, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	if err != nil {
		return err
	}
	fl.Close()
	return os.Remove(path)
}

// filesReserve is the files a run needs besides its connections: standard
// streams, epoll, the event loops' eventfds, the RDMA devices.
const filesReserve = 64

// maxClients is the most connections the limit on open files allows: a TCP
// connection takes one file, an RDMA one three (its rdma_cm event channel,
// the duplicate Go's netpoller reads, its completion channel); the
// embedded server's end as many again.
func maxClients(embedded, rdma bool) int {
	limit := openFilesLimit()
	if limit == 0 || limit > math.MaxInt32 { // unknown, or unlimited
		return math.MaxInt32
	}
	n := max(int(limit)-filesReserve, 1)
	if rdma {
		n /= 3
	}
	if embedded {
		n /= 2
	}
	return max(n, 1)
}

func describeServer(server string, cfg benchrun.Config) string {
	if server == "embedded cluster" {
		return server // the primaries are listed before
	}
	if server != "embedded" {
		return server
	}
	s := "embedded (tcp " + cfg.Addr
	if cfg.RDMAAddr != "" {
		s += ", rdma " + cfg.RDMAAddr
	}
	return s + ")"
}
