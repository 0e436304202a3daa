package benchrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/pool"
	"github.com/seed54442f1a/rdmapool/pool/gnettcp"
)

func TestSkipReply(t *testing.T) {
	for _, tc := range []struct {
		in    string
		n     int
		isErr bool
	}{
		{"+OK\r\n", 5, false},
		{"-ERR wrong\r\n", 12, true},
		{":42\r\n", 5, false},
		{"$3\r\nxxx\r\n", 9, false},
		{"$-1\r\n", 5, false},
		{"$0\r\n\r\n", 6, false},
		{"*2\r\n$1\r\na\r\n:1\r\n", 15, false},
		{"*-1\r\n", 5, false},
		{"%1\r\n+k\r\n+v\r\n", 12, false},
		{"_\r\n", 3, false},
		{"+OK\r\n+OK\r\n", 5, false},
		// incomplete
		{"", 0, false},
		{"+OK\r", 0, false},
		{"$3\r\nxx", 0, false},
		{"$3\r\nxxx\r", 0, false},
		{"*2\r\n$1\r\na\r\n", 0, false},
	} {
		n, isErr, err := skipReply([]byte(tc.in))
		if err != nil || n != tc.n || isErr != tc.isErr {
			t.Errorf("skipReply(%q) = %d, %v, %v; want %d, %v", tc.in, n, isErr, err, tc.n, tc.isErr)
		}
	}
	for _, in := range []string{"?x\r\n", "$x\r\n", "*1x\r\n"} {
		if _, _, err := skipReply([]byte(in)); !errors.Is(err, errProtocol) {
			t.Errorf("skipReply(%q): %v, want a protocol error", in, err)
		}
	}
	deep := strings.Repeat("*1\r\n", maxDepth+1) + ":1\r\n"
	if _, _, err := skipReply([]byte(deep)); !errors.Is(err, errProtocol) {
		t.Errorf("deep nesting: %v", err)
	}
}

func TestParseTests(t *testing.T) {
	names := func(ts []Test) string {
		var s []string
		for _, t := range ts {
			s = append(s, t.Name)
		}
		return strings.Join(s, ",")
	}
	for in, want := range map[string]string{
		"": "PING_INLINE,PING_MBULK,SET,GET,INCR,LPUSH,RPUSH,LPOP,RPOP,SADD,HSET,SPOP,ZADD,ZPOPMIN," +
			"LPUSH (needed to benchmark LRANGE),LRANGE_100 (first 100 elements),LRANGE_300 (first 300 elements)," +
			"LRANGE_500 (first 500 elements),LRANGE_600 (first 600 elements),MSET (10 keys),XADD",
		"get,SET":      "SET,GET",
		" Ping , mset": "PING_INLINE,PING_MBULK,MSET (10 keys)",
		"ping_mbulk":   "PING_MBULK",
	} {
		ts, err := ParseTests(in)
		if err != nil || names(ts) != want {
			t.Errorf("ParseTests(%q) = %q, %v; want %q", in, names(ts), err, want)
		}
	}
	if _, err := ParseTests("set,hsetx"); err == nil || !strings.Contains(err.Error(), `unknown test "hsetx"`) {
		t.Errorf("unknown test: %v", err)
	}
	for _, in := range []string{",", " ", " , ,"} {
		if ts, err := ParseTests(in); err == nil || !strings.HasPrefix(err.Error(), "no test named in ") {
			t.Errorf("ParseTests(%q) = %q, %v; want an error", in, names(ts), err)
		}
	}
}

func TestPlaceholders(t *testing.T) {
	ts, _ := ParseTests("mset")
	req := ts[0].build([]byte("abc"))
	offs := placeholders(req)
	if len(offs) != 10 {
		t.Fatalf("%d placeholders in %q", len(offs), req)
	}
	c := newClient(nil, 1)
	c.prepare(req, 3, nil)
	if len(c.out) != 3*len(req) || len(c.randOff) != 10 {
		t.Errorf("prepare: %d bytes, %d placeholders", len(c.out), len(c.randOff))
	}
	buf := append([]byte(nil), req...)
	putNum(buf[offs[0]:offs[0]+len(randPlaceholder)], 42)
	if !bytes.Contains(buf, []byte("key:000000000042")) {
		t.Errorf("putNum: %q", buf)
	}
}

func smallConfig(addr string, policy pool.Policy, tests string) Config {
	ts, _ := ParseTests(tests)
	return Config{Addr: addr, Policy: policy, Clients: 4, Requests: 500, DataSize: 3, Pipeline: 1, Tests: ts}
}

func TestRunTCP(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"plain", func(*Config) {}},
		{"pipeline", func(c *Config) { c.Pipeline = 16; c.Requests = 1003 }},
		{"random keys", func(c *Config) { c.Keyspace = 1000; c.DataSize = 100 }},
		// Big values through the tests that carry them both ways; the
		// LRANGEs of 200 KiB elements would take minutes under emulation.
		{"big values", func(c *Config) {
			c.DataSize, c.Requests = 200<<10, 40
			c.Tests, _ = ParseTests("set,get,lpush,rpop")
		}},
		{"duration", func(c *Config) { c.Duration = 50 * time.Millisecond; c.Warmup = 20 * time.Millisecond; c.Requests = 0 }},
		{"duration and requests", func(c *Config) { c.Duration = 2 * time.Minute; c.Requests = 300 }},
	} {
		for _, m := range []struct {
			name    string
			threads int
			engine  pool.TCPEngine
			loops   int // want
		}{
			{"one loop", 0, pool.TCPNetpoll, 1},
			{"three loops", 3, pool.TCPNetpoll, 3},
			{"gnet goroutines", 1, gnettcp.Engine, 0},
		} {
			if !loopsSupported && m.loops > 0 {
				m.loops = 0
			}
			t.Run(tc.name+"/"+m.name, func(t *testing.T) {
				// A server of its own: what one case leaves in the
				// keyspace (the big values' lists) is not the next's.
				e, err := StartEmbedded(false, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer e.Close()
				procs := runtime.GOMAXPROCS(0)
				cfg := smallConfig(e.TCPAddr, pool.TCPOnly, "")
				cfg.Threads, cfg.TCPEngine = m.threads, m.engine
				tc.mod(&cfg)
				runTCP(t, cfg, m.loops)
				if runtime.GOMAXPROCS(0) != procs {
					t.Errorf("GOMAXPROCS %d after the run, want %d", runtime.GOMAXPROCS(0), procs)
				}
			})
		}
	}
}

// runTCP runs cfg over TCP and checks its results.
func runTCP(t *testing.T, cfg Config, wantLoops int) {
	t.Helper()
	connected := 0
	cfg.OnConnect = func(*Outcome) { connected++ }
	start := time.Now()
	o, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); cfg.Requests > 0 && cfg.Duration > 0 && took >= cfg.Duration {
		t.Errorf("the run took %v: it ran to its duration, not to its requests", took)
	}
	if o.Transport != pool.TCP || connected != 1 || len(o.Results) != len(cfg.Tests) || o.EventLoops != wantLoops {
		t.Fatalf("transport %s, OnConnect %d times, %d results, %d event loops (want %d)", o.Transport, connected, len(o.Results), o.EventLoops, wantLoops)
	}
	for _, r := range o.Results {
		if cfg.Requests > 0 && r.Requests != uint64(cfg.Requests) {
			t.Errorf("%s: %d requests, want %d", r.Test, r.Requests, cfg.Requests)
		}
		if r.Requests == 0 || r.RPS <= 0 || r.MinMs > r.P50Ms || r.P50Ms > r.P99Ms || r.P99Ms > r.MaxMs {
			t.Errorf("%s: implausible result %+v", r.Test, r)
		}
	}
}

func TestRunErrors(t *testing.T) {
	cfg := smallConfig("127.0.0.1:1", pool.TCPOnly, "set")
	_, err := Run(context.Background(), cfg)
	var ce *ConnectError
	if !errors.As(err, &ce) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("refused: %v", err)
	}
	// The error names the address that failed: RDMA's, on its own port.
	rdma := cfg
	rdma.Policy, rdma.RDMAPort = pool.RDMAOnly, 2
	if _, err := Run(context.Background(), rdma); !errors.As(err, &ce) || ce.Addr != "127.0.0.1:2" || !strings.HasPrefix(err.Error(), "cannot connect to 127.0.0.1:2: ") {
		t.Errorf("RDMA on port 2: %v", err)
	}
	cfg.Clients = 0
	if _, err := Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "clients") {
		t.Errorf("0 clients: %v", err)
	}
}

// startEmbeddedRDMA starts the embedded server with an RDMA listener (in
// the VM), closed when the test ends.
func startEmbeddedRDMA(t *testing.T) *Embedded {
	t.Helper()
	rdmatest.Require(t)
	e, err := StartEmbedded(true, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if e.RDMAAddr == "" {
		t.Fatalf("no RDMA listener: %v", e.RDMAErr)
	}
	return e
}

// TestRunRDMA runs against the embedded server over RDMA (in the VM).
func TestRunRDMA(t *testing.T) {
	e := startEmbeddedRDMA(t)
	cfg := smallConfig(e.TCPAddr, pool.Auto, "ping,set,get,mset")
	cfg.RDMAAddr = e.RDMAAddr
	cfg.Pipeline = 8
	o, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if o.Transport != pool.RDMA {
		t.Fatalf("transport %s (%s)", o.Transport, o.Reason)
	}
	for _, r := range o.Results {
		if r.Requests != uint64(cfg.Requests) {
			t.Errorf("%s: %+v", r.Test, r)
		}
	}
}

func TestReports(t *testing.T) {
	e, err := StartEmbedded(false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	o, err := Run(context.Background(), smallConfig(e.TCPAddr, pool.TCPOnly, "set,get"))
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	WriteText(&b, o, &o.Results[0])
	for _, want := range []string{"====== SET ======", "500 requests completed", "4 parallel clients", "3 bytes payload", "keep alive: 1",
		"Latency by percentile distribution:", "100.000% <=", "throughput summary:", "latency summary (msec):"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, b.String())
		}
	}
	// The summary's table is indented 4 spaces, as valkey-benchmark's.
	if !regexp.MustCompile(`\n  latency summary \(msec\):\n {10}avg {7}min {7}p50 {7}p95 {7}p99 {7}max\n {4}[ 0-9.]{9}( [ 0-9.]{9}){5}\n\n$`).MatchString(b.String()) {
		t.Errorf("text report's summary:\n%s", b.String())
	}
	b.Reset()
	WriteQuiet(&b, &o.Results[1])
	if !strings.HasPrefix(b.String(), "GET: ") || !strings.Contains(b.String(), " requests per second, p50=") {
		t.Errorf("quiet: %q", b.String())
	}

	b.Reset()
	o2 := *o
	o2.Transport = pool.RDMA
	WriteCSV(&b, &o2, o)
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(recs[0], ",") != strings.Join(CSVHeader, ",") || len(recs) != 5 || recs[1][0] != "SET (rdma)" || recs[4][0] != "GET (tcp)" {
		t.Errorf("csv: %q", recs)
	}

	b.Reset()
	WriteJSON(&b, &Report{Server: "x", Runs: []*Outcome{&o2, o}, Ratios: Ratios(&o2, o)})
	var doc struct {
		Runs []struct {
			Transport string           `json:"transport"`
			Results   []map[string]any `json:"results"`
		} `json:"runs"`
		Ratios []map[string]any `json:"ratios"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if len(doc.Runs) != 2 || len(doc.Ratios) != 2 || doc.Ratios[0]["rps_ratio"] != 1.0 {
		t.Errorf("json: %+v", doc)
	}
	for _, k := range CSVHeader {
		if _, ok := doc.Runs[1].Results[0][k]; !ok {
			t.Errorf("json result lacks %q", k)
		}
	}
	b.Reset()
	WriteCompare(&b, nil, o)
	if !strings.Contains(b.String(), "rps rdma/tcp") || !strings.Contains(b.String(), "n/a") {
		t.Errorf("compare: %s", b.String())
	}
}

// clientOn returns a client on a TCP (or, in the VM, RDMA) connection to
// the embedded server, prepared for the test named.
func clientOn(tb testing.TB, test string, pipeline int) *client {
	e, err := StartEmbedded(rdmatest.Available(), nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { e.Close() })
	p, err := pool.New(pool.Options{Addr: e.TCPAddr, RDMAAddr: e.RDMAAddr, Policy: map[bool]pool.Policy{true: pool.RDMAOnly, false: pool.TCPOnly}[e.RDMAAddr != ""]})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	conn, err := p.Get(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Discard() })
	ts, _ := ParseTests(test)
	c := newClient(conn, 1)
	c.prepare(ts[0].build([]byte("xxx")), pipeline, nil)
	return c
}

// TestClientAllocs checks the steady state of the client loop: no
// allocation per batch on the client side (the transport's own are
// counted too, which is why the bound is loose for TCP).
func TestClientAllocs(t *testing.T) {
	c := clientOn(t, "ping_mbulk", 16)
	for range 100 {
		if err := c.batch(16, 1000, true); err != nil {
			t.Fatal(err)
		}
	}
	allocs := testing.AllocsPerRun(500, func() {
		if err := c.batch(16, 1000, true); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("%.2f allocations per batch of 16 (%.3f per request)", allocs, allocs/16)
	if allocs > 1 {
		t.Errorf("%.2f allocations per batch of 16, want at most 1", allocs)
	}
}

func BenchmarkClient(b *testing.B) {
	for _, pl := range []int{1, 16} {
		b.Run("pipeline="+map[int]string{1: "1", 16: "16"}[pl], func(b *testing.B) {
			c := clientOn(b, "ping_mbulk", pl)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i += pl {
				if err := c.batch(pl, 1000, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSkipReply: find the end of each reply in a buffer of 100, as the
// client does for every answer; an op is one reply.
func BenchmarkSkipReply(b *testing.B) {
	replies := []string{"+OK\r\n", "$16\r\n0123456789abcdef\r\n", ":42\r\n", "*2\r\n$1\r\na\r\n$1\r\nb\r\n"}
	var buf []byte
	for i := range 100 {
		buf = append(buf, replies[i%len(replies)]...)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; {
		for off := 0; off < len(buf) && i < b.N; i++ {
			n, _, err := skipReply(buf[off:])
			if n == 0 || err != nil {
				b.Fatalf("reply at %d: %d, %v", off, n, err)
			}
			off += n
		}
	}
}

// silentServer accepts connections and reads what they send, but never
// replies: a server that is stuck.
func silentServer(t *testing.T) string {
	t.Helper()
	return testutil.TCPServer(t, func(c net.Conn) { io.Copy(io.Discard, c) }).String()
}

// TestRunStalled: a server that never replies ends the run with a
// StallError after Timeout, or, with a duration, soon after its end (not
// after DefaultTimeout); and cancelling the context unblocks the clients.
func TestRunStalled(t *testing.T) {
	addr := silentServer(t)
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"timeout", func(c *Config) { c.Timeout = 300 * time.Millisecond }},
		// With a duration, the stall limit after its end is at most a
		// second: Timeout is an hour here, and the run's context a minute,
		// so a run that waited for the stall limit would end by its
		// context instead (a StallError says it did not).
		{"duration", func(c *Config) { c.Duration, c.Timeout = 200*time.Millisecond, time.Hour }},
		{"warmup", func(c *Config) { c.Warmup, c.Timeout = 200*time.Millisecond, time.Hour }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := smallConfig(addr, pool.TCPOnly, "ping_inline")
			cfg.Clients = 3
			tc.mod(&cfg)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := Run(ctx, cfg)
			var se *StallError
			if !errors.As(err, &se) || !strings.HasPrefix(err.Error(), "PING_INLINE") || !strings.Contains(err.Error(), "no reply from the server for ") {
				t.Errorf("err %v, want a StallError", err)
			} else if se.For >= DefaultTimeout {
				// The stall the watchdog saw when it stopped the run: about
				// the limit it applied, not the time the run took.
				t.Errorf("stopped after a stall of %v: by the default stall limit", se.For)
			}
		})
	}

	// A server that does not even read: the pipeline (20 MB) cannot be
	// sent.
	deafDone := make(chan struct{})
	deaf := replyServer(t, func(net.Conn) { <-deafDone })
	t.Cleanup(func() { close(deafDone) }) // before replyServer's
	t.Run("not reading", func(t *testing.T) {
		cfg := smallConfig(deaf, pool.TCPOnly, "set")
		cfg.Clients, cfg.Pipeline, cfg.Requests, cfg.DataSize, cfg.Timeout = 1, 20000, 20000, 1000, 300*time.Millisecond
		_, err := Run(context.Background(), cfg)
		var se *StallError
		if !errors.As(err, &se) || !se.Sending || !strings.HasPrefix(err.Error(), "SET: sending to the server stalled for ") || se.For >= DefaultTimeout {
			t.Errorf("err %v, want a StallError while sending, after Timeout", err)
		}
	})

	t.Run("cancel", func(t *testing.T) {
		cfg := smallConfig(addr, pool.TCPOnly, "ping_inline")
		ctx, cancel := context.WithCancel(context.Background())
		cfg.OnConnect = func(*Outcome) { time.AfterFunc(100*time.Millisecond, cancel) }
		if _, err := Run(ctx, cfg); !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled after 100ms: err %v, want context.Canceled", err)
		}
	})
}

// replyServer serves each connection with serve, on a loopback port.
func replyServer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	return testutil.TCPServer(t, func(c net.Conn) { defer c.Close(); serve(c) }).String()
}

// TestRunErrorReply: the first error reply ends the run with a
// ServerError, as valkey-benchmark stops; so does an error sent before the
// server closes the connection (maxclients), whether the client's write
// fails or not.
func TestRunErrorReply(t *testing.T) {
	answer := replyServer(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for i := 0; ; i++ {
			if _, err := r.ReadString('\n'); err != nil {
				return
			}
			reply := "+PONG\r\n"
			if i == 20 {
				reply = "-ERR boom\r\n"
			}
			if _, err := c.Write([]byte(reply)); err != nil {
				return
			}
		}
	})
	full := replyServer(t, func(c net.Conn) {
		c.Write([]byte("-ERR max number of clients reached\r\n"))
	})
	for _, tc := range []struct{ addr, want string }{
		{answer, "PING_INLINE: error from server: ERR boom"},
		{full, "PING_INLINE: error from server: ERR max number of clients reached"},
	} {
		cfg := smallConfig(tc.addr, pool.TCPOnly, "ping_inline")
		cfg.Clients, cfg.Timeout = 2, 5*time.Second
		o, err := Run(context.Background(), cfg)
		var se *ServerError
		if !errors.As(err, &se) || err.Error() != tc.want {
			t.Errorf("err %v, want %q", err, tc.want)
		}
		if o != nil && len(o.Results) != 0 {
			t.Errorf("results after an error reply: %+v", o.Results)
		}
	}

	for in, want := range map[string]string{"-ERR x y\r\n": "ERR x y", "!9\r\nERR a\r\nb\r\n": "ERR a\r\nb", "-\r\n": ""} {
		if got := errorText([]byte(in)); got != want {
			t.Errorf("errorText(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCheck: a pipeline longer than the requests is shortened to them, and
// a run whose buffers would pass MemoryLimit is refused, counting one copy
// of the pipeline when every client can share it.
func TestCheck(t *testing.T) {
	for _, name := range []string{"ping_inline", "set", "mset", "lpush"} {
		ts, _ := ParseTests(name)
		for _, d := range []int{0, 3, 9, 10, 99, 100, 12345} {
			if got, want := requestSize(ts[0], d), int64(len(ts[0].build(bytes.Repeat([]byte("x"), d)))); got != want {
				t.Errorf("requestSize(%s, %d) = %d, want %d", name, d, got, want)
			}
		}
	}

	cfg := smallConfig("127.0.0.1:1", pool.TCPOnly, "ping")
	cfg.Requests, cfg.Pipeline = 10, 1000
	if err := cfg.Check(); err != nil || cfg.Pipeline != 10 {
		t.Errorf("-n 10 -P 1000: %v, pipeline %d, want 10", err, cfg.Pipeline)
	}
	cfg.Duration, cfg.Requests, cfg.Pipeline = time.Second, 0, 1000
	if err := cfg.Check(); err != nil || cfg.Pipeline != 1000 {
		t.Errorf("--duration -P 1000: %v, pipeline %d, want 1000", err, cfg.Pipeline)
	}

	// SET's request with 1 KiB values is 1069 bytes: 100 clients × 20000
	// of them are 2 GiB when each client has its own (-r), 20 MiB shared.
	cfg = smallConfig("127.0.0.1:1", pool.TCPOnly, "ping,set")
	cfg.Clients, cfg.Requests, cfg.Pipeline, cfg.DataSize = 100, 1e6, 20000, 1024
	if err := cfg.Check(); err != nil {
		t.Errorf("shared pipeline: %v", err)
	}
	cfg.Keyspace = 1000
	var me *MemoryError
	if err := cfg.Check(); !errors.As(err, &me) || me.Test != "SET" || me.Shared || me.RequestBytes != 1069 ||
		!strings.HasPrefix(err.Error(), "the clients would need about 2 GiB of memory in SET (100 clients × pipeline 20000 × 1 KiB, the size of its request, and ") {
		t.Errorf("per-client pipelines: %v", err)
	}
	cfg.Clients = 1
	if err := cfg.Check(); err != nil {
		t.Errorf("one client: %v", err)
	}

	// A reply buffer grows to twice the value only where replies carry
	// one: 10 clients with 200 MB values need 4 GB in GET and LPOP, a few
	// hundred KB each in PING.
	cfg = smallConfig("127.0.0.1:1", pool.TCPOnly, "ping,get")
	cfg.Clients, cfg.Requests, cfg.DataSize = 10, 10, 200e6
	if err := cfg.Check(); !errors.As(err, &me) || me.Test != "GET" || me.PerClient < 400e6 {
		t.Errorf("GET of 200 MB values: %v, want GET refused", err)
	}
	cfg.Tests = cfg.Tests[:1]
	if err := cfg.Check(); err != nil || cfg.Tests[0].Name != "PING_INLINE" {
		t.Errorf("PING with -d 200000000: %v", err)
	}
	// The buffers GET grew stay with the clients for the tests after it:
	// MSET's pipeline of 1 GB beside them is refused, though MSET's own
	// replies are small.
	cfg = smallConfig("127.0.0.1:1", pool.TCPOnly, "get,mset")
	cfg.Clients, cfg.Requests, cfg.DataSize = 10, 10, 100e6
	if err := cfg.Check(); !errors.As(err, &me) || me.Test != "MSET (10 keys)" {
		t.Errorf("GET then MSET of 100 MB values: %v, want MSET refused", err)
	}
}

// TestRatios compares two different outcomes, with latencies of a few µs
// where rounding to the reported 1 µs would be off by 10 to 30 %: the
// ratios, in JSON and in the table, come from the unrounded figures, and
// the table shows µs with two decimals.
func TestRatios(t *testing.T) {
	outcome := func(tr pool.Transport, p50, p99 int64, elapsed time.Duration) *Outcome {
		h := newHist()
		h.RecordValues(p50, 980)
		h.RecordValues(p99, 20)
		r := newResult(h, elapsed)
		r.Test = "GET"
		return &Outcome{Transport: tr, Results: []Result{*r}}
	}
	rdma := outcome(pool.RDMA, 2400, 9000, 300*time.Millisecond)
	tcp := outcome(pool.TCP, 2600, 31000, 700*time.Millisecond)
	if r := rdma.Results[0]; r.P50Ms != 0.002 || r.RPS != 3333.33 {
		t.Fatalf("rdma result: %+v", r)
	}
	want := Ratio{Test: "GET", RPS: 2.333, P50: 0.923, P99: 0.29}
	if got := Ratios(rdma, tcp); len(got) != 1 || got[0] != want {
		t.Errorf("Ratios = %+v, want %+v", got, want)
	}
	if got := Ratios(tcp, rdma); len(got) != 1 || got[0].P50 != 1.083 || got[0].RPS != 0.429 {
		t.Errorf("Ratios inverted = %+v", got)
	}

	var b bytes.Buffer
	WriteJSON(&b, &Report{Runs: []*Outcome{rdma, tcp}, Ratios: Ratios(rdma, tcp)})
	if !strings.Contains(b.String(), `"rps_ratio": 2.333,`) || !strings.Contains(b.String(), `"p50_ratio": 0.923,`) || !strings.Contains(b.String(), `"p99_ratio": 0.29`) {
		t.Errorf("json:\n%s", b.String())
	}

	b.Reset()
	WriteCompare(&b, rdma, tcp)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[1]), " ") != "GET 3333.33 1428.57 2.333 2.40 2.60 0.923 9.01 31.01 0.290" ||
		!strings.Contains(lines[0], "rdma p50 µs") {
		t.Errorf("compare:\n%s", b.String())
	}
}

// TestRunLoopsCloseSockets: a run on event loops leaves no descriptor
// open behind it (the sockets' duplicates, the epoll sets, the eventfds).
func TestRunLoopsCloseSockets(t *testing.T) {
	if !loopsSupported {
		t.Skip("no event loops on " + runtime.GOOS)
	}
	e, err := StartEmbedded(false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cfg := smallConfig(e.TCPAddr, pool.TCPOnly, "get")
	cfg.Threads = 2
	fds := func() int {
		d, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(d)
	}
	if _, err := Run(context.Background(), cfg); err != nil { // the runtime's own descriptors open
		t.Fatal(err)
	}
	before := fds()
	for range 3 {
		if o, err := Run(context.Background(), cfg); err != nil || o.EventLoops != 2 {
			t.Fatalf("%v, %+v", err, o)
		}
	}
	// The embedded server closes its side of each connection on its own
	// time: wait for it.
	deadline := time.Now().Add(time.Minute)
	for fds() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := fds(); n > before {
		t.Errorf("%d descriptors open after the runs, %d before", n, before)
	}
}

// TestRunReadsWhileSending: a server that stops reading while its replies
// wait to be read (the embedded one: a goroutine per connection) gets them
// read while a long pipeline is still being sent, rather than a stall on
// both sides, on an event loop and on a goroutine per client.
func TestRunReadsWhileSending(t *testing.T) {
	e, err := StartEmbedded(false, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, engine := range []pool.TCPEngine{pool.TCPNetpoll, gnettcp.Engine} {
		t.Run(engine.String(), func(t *testing.T) {
			cfg := smallConfig(e.TCPAddr, pool.TCPOnly, "set,get")
			cfg.Clients, cfg.Pipeline, cfg.Requests, cfg.DataSize, cfg.Timeout = 1, 200000, 200000, 100, 3*time.Second
			cfg.TCPEngine = engine
			o, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(o.Results) != 2 || o.Results[1].Requests != 200000 {
				t.Errorf("results %+v, want 200000 GETs", o.Results)
			}
		})
	}
}

// TestRunRDMAReadsWhileSending is TestRunReadsWhileSending over RDMA (in
// the VM): a goroutine client with a pipeline longer than the rings.
func TestRunRDMAReadsWhileSending(t *testing.T) {
	e := startEmbeddedRDMA(t)
	cfg := smallConfig(e.TCPAddr, pool.RDMAOnly, "set,get")
	cfg.RDMAAddr = e.RDMAAddr
	cfg.Clients, cfg.Pipeline, cfg.Requests, cfg.DataSize, cfg.Timeout = 1, 50000, 50000, 100, 20*time.Second
	o, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if o.Transport != pool.RDMA || len(o.Results) != 2 || o.Results[1].Requests != 50000 {
		t.Errorf("transport %s, results %+v, want 50000 GETs over RDMA", o.Transport, o.Results)
	}
}
