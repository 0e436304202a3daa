package benchrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/schollz/progressbar/v3"

	"github.com/seed54442f1a/rdmapool/pool"
	"github.com/seed54442f1a/rdmapool/qp"
)

// Config is one benchmark run against one server over one transport policy.
type Config struct {
	// Addr is the server's TCP address, host:port.
	Addr string
	// RDMAAddr is the server's RDMA address; empty means Addr's host with
	// RDMAPort (pool.Options' rules).
	RDMAAddr string
	RDMAPort int
	// RDMAAddrOf, when set, gives each node's RDMA address in a cluster
	// run (pool.Options.RDMAAddrOf); RDMAAddr is then not used.
	RDMAAddrOf func(addr string) (string, error)
	Policy     pool.Policy
	// RDMA are the options of the RDMA connections (pool.Options.RDMA);
	// nil means the defaults.
	RDMA *qp.Options
	// TCPEngine drives the TCP connections (pool.Options.TCPEngine; nil
	// is pool.TCPNetpoll).
	TCPEngine pool.TCPEngine

	Clients int // connections, one request pipeline each
	// Threads is the number of client threads, as valkey-benchmark's
	// --threads means: TCP connections of the netpoll engine (on Linux)
	// are driven by that many event loops, each with a share of the
	// clients (0 means one, valkey-benchmark's default). Connections with
	// no socket of their own (RDMA, the gnet engine) have a goroutine
	// each, and a Threads above 0 then bounds the threads that run Go
	// code during the run (GOMAXPROCS).
	Threads int
	// Requests per test; with Duration too, each test stops at the first
	// of the two, and 0 means Duration alone.
	Requests int
	DataSize int // bytes of each value
	Pipeline int
	Keyspace int // random keys below this; 0 keeps the placeholder literal
	Tests    []Test
	// Duration, when set, runs each test for that long (and each client at
	// least one pipeline).
	Duration time.Duration
	// Warmup runs each test, unrecorded, for that long before measuring;
	// WarmupRequests, for that many requests; both, until the first.
	Warmup         time.Duration
	WarmupRequests int
	// Progress, when set, gets a live progress bar for each test (for
	// terminals), cleared when the test ends.
	Progress io.Writer
	// ProgressTransport names the transport in the progress bar too, "SET
	// (rdma):", for --transport both, where no report between the tests
	// says which transport is running.
	ProgressTransport bool
	// DialTimeout bounds the connecting of all clients; 0 means 10 s.
	DialTimeout time.Duration
	// Timeout ends the run with a *StallError when a client waits this
	// long for the server with no byte of reply; 0 means DefaultTimeout.
	// After Duration has passed, a request still in flight gets at most
	// max(Duration, 1 s), within Timeout, so that a server that stopped
	// replying ends a timed run soon after its end.
	Timeout time.Duration
	// Setup are requests each connection sends once, before the tests,
	// each answered before the next is sent (AUTH, SELECT, HELLO 3); an
	// error reply ends the run with a *ServerError.
	Setup [][]byte
	// Precision is the significant figures of the latency histograms, 1
	// to 5 (--precision); 0 means 3.
	Precision int
	// Reconnect closes each client's connection after each batch (its
	// pipeline) and opens a new one, set up again, for the next (-k 0).
	Reconnect bool
	reconnect func(*client) error
	// Cluster, when set, runs against its primaries (--cluster); Addr is
	// then only where it was found.
	Cluster *Cluster
	// onError, in a cluster run, follows a redirection (follower.follow):
	// true, the redirected requests are to be sent again.
	onError func(*client, error) bool
	// Seed, when not 0, seeds the random numbers of -r (--seed); the
	// clients' sequences then differ from each other and from those of
	// another seed. 0 keeps the fixed default.
	Seed uint64
	// OnConnect, when set, is called once every client is connected, with
	// the Outcome's transport and reason filled in.
	OnConnect func(*Outcome)
	// OnResult, when set, is called after each test.
	OnResult func(*Outcome, *Result)
}

// Result is one test's outcome. Latencies are in milliseconds.
type Result struct {
	Test     string  `json:"test"`
	Requests uint64  `json:"requests"`
	Seconds  float64 `json:"seconds"`
	RPS      float64 `json:"rps"`
	AvgMs    float64 `json:"avg_latency_ms"`
	MinMs    float64 `json:"min_latency_ms"`
	P50Ms    float64 `json:"p50_latency_ms"`
	P95Ms    float64 `json:"p95_latency_ms"`
	P99Ms    float64 `json:"p99_latency_ms"`
	MaxMs    float64 `json:"max_latency_ms"`

	Hist *hdrhistogram.Histogram `json:"-"` // nanoseconds
}

// Outcome is a whole run: the transport the connections used, why, and each
// test's result.
type Outcome struct {
	Transport pool.Transport `json:"transport"`
	// TCPEngine is the engine that drove the TCP connections ("netpoll"
	// or "gnet"); empty when every connection used RDMA.
	TCPEngine string `json:"tcp_engine,omitempty"`
	// EventLoops is how many event loops drove the clients (Config.Threads);
	// 0 when each client had a goroutine.
	EventLoops int `json:"event_loops,omitempty"`
	// Reason says why this transport: the policy, or why RDMA was not used.
	Reason   string   `json:"reason"`
	Fallback string   `json:"fallback,omitempty"` // pool.Stats().LastFallback, if any
	Clients  int      `json:"clients"`
	Pipeline int      `json:"pipeline"`
	DataSize int      `json:"data_size"`
	Keyspace int      `json:"keyspace,omitempty"`
	Results  []Result `json:"results"`
}

// DefaultTimeout is Config.Timeout's default.
const DefaultTimeout = 10 * time.Second

// StallError ends a run whose server stopped replying, or reading: a
// client got no byte of reply, or could send no more of its requests, for
// For.
type StallError struct {
	For     time.Duration
	Sending bool // the requests were still being sent
}

func (e *StallError) Error() string {
	if e.Sending {
		return fmt.Sprintf("sending to the server stalled for %v", e.For.Round(100*time.Millisecond))
	}
	return fmt.Sprintf("no reply from the server for %v", e.For.Round(100*time.Millisecond))
}

// ConnectError is a failure to connect the clients.
type ConnectError struct {
	Addr string // the address that failed, TCP's or RDMA's
	Err  error
}

func (e *ConnectError) Error() string { return fmt.Sprintf("cannot connect to %s: %v", e.Addr, e.Err) }
func (e *ConnectError) Unwrap() error { return e.Err }

// Check checks cfg and, when the run is by requests, shortens a pipeline
// longer than Requests, which no client could fill. Run calls it.
func (cfg *Config) Check() error {
	switch {
	case cfg.Clients < 1:
		return fmt.Errorf("clients must be at least 1, not %d", cfg.Clients)
	case cfg.Threads < 0:
		return fmt.Errorf("threads must not be negative, not %d", cfg.Threads)
	case cfg.Pipeline < 1:
		return fmt.Errorf("pipeline must be at least 1, not %d", cfg.Pipeline)
	case cfg.Requests < 0 || cfg.Duration <= 0 && cfg.Requests < 1:
		return fmt.Errorf("requests must be at least 1, not %d", cfg.Requests)
	case cfg.DataSize < 0:
		return fmt.Errorf("data size must not be negative, not %d", cfg.DataSize)
	case cfg.Keyspace < 0:
		return fmt.Errorf("keyspace must not be negative, not %d", cfg.Keyspace)
	case cfg.Timeout < 0:
		return fmt.Errorf("timeout must not be negative, not %v", cfg.Timeout)
	case cfg.Warmup < 0 || cfg.WarmupRequests < 0:
		return fmt.Errorf("warm-up must not be negative, not %v or %d requests", cfg.Warmup, cfg.WarmupRequests)
	case cfg.Precision < 0 || cfg.Precision > 5:
		return fmt.Errorf("precision must be 1 to 5 significant figures, not %d", cfg.Precision)
	case len(cfg.Tests) == 0:
		return errors.New("no test to run")
	}
	if cfg.Requests > 0 && cfg.Pipeline > cfg.Requests {
		cfg.Pipeline = cfg.Requests
	}
	if err := cfg.memory(); err != nil {
		return err
	}
	return nil
}

// MemoryLimit bounds the memory a run's clients may need (MemoryError).
const MemoryLimit = 2 << 30

// histBytes is the size of a client's histogram.
var histBytes = int64(newHist().ByteSize())

// MemoryError refuses a run whose clients would need more than MemoryLimit
// in one of its tests: Clients × Pipeline × the test's request (one copy
// for all clients when no key is random), and each client's reply buffer
// (twice the value when a test of the run has replies that carry one, GET
// or LPOP: the buffer keeps its size for the tests after) and histogram.
type MemoryError struct {
	Need         int64
	Clients      int
	Pipeline     int
	Test         string // the test that needs the most
	RequestBytes int64
	Shared       bool  // one copy of the pipeline serves every client
	PerClient    int64 // each client's reply buffer and histogram
}

func (e *MemoryError) Error() string {
	copies := fmt.Sprintf("%d clients × ", e.Clients)
	if e.Shared {
		copies = "" // one copy for all
	}
	return fmt.Sprintf("the clients would need about %s of memory in %s (%spipeline %d × %s, the size of its request, and for each of the %d clients %s for its replies and histogram), more than the %s allowed",
		bytesText(e.Need), e.Test, copies, e.Pipeline, bytesText(e.RequestBytes), e.Clients, bytesText(e.PerClient), bytesText(MemoryLimit))
}

func (cfg *Config) memory() error {
	// A client's reply buffer only grows, and the clients serve every
	// test of the run in turn: after GET's values it keeps their size.
	in := int64(initialIn)
	for _, t := range cfg.Tests {
		if t.replyValues > 0 { // a reply of values grows it
			in = max(in, satMul(2*int64(t.replyValues), int64(cfg.DataSize)))
		}
	}
	hb := histBytes
	if cfg.Precision != 0 && cfg.Precision != histSigFigs {
		hb = int64(histSized(cfg.Precision).ByteSize())
	}
	perClient := satAdd(in, hb)
	var worst *MemoryError
	for _, t := range cfg.Tests {
		size := requestSize(t, cfg.DataSize)
		shared := cfg.Cluster == nil && sharedPipeline(cfg.Keyspace, t.build(nil))
		copies := int64(cfg.Clients)
		if shared {
			copies = 1
		}
		need := satMul(satMul(copies, int64(cfg.Pipeline)), size)
		need = satAdd(need, satMul(int64(cfg.Clients), perClient))
		if worst == nil || need > worst.Need {
			worst = &MemoryError{Need: need, Clients: cfg.Clients, Pipeline: cfg.Pipeline, Test: t.Name, RequestBytes: size, Shared: shared, PerClient: perClient}
		}
	}
	if worst != nil && worst.Need > MemoryLimit {
		return worst
	}
	return nil
}

// sharedPipeline reports whether one copy of req's pipeline can serve
// every client: no key of it is random.
func sharedPipeline(keyspace int, req []byte) bool {
	return keyspace == 0 || len(placeholders(req)) == 0
}

// requestSize is the length of t's request for values of dataSize bytes,
// found without building it.
func requestSize(t Test, dataSize int) int64 {
	r0, r1 := int64(len(t.build(nil))), int64(len(t.build([]byte("x"))))
	values := r1 - r0 // the values in a request: each adds a byte
	digits := int64(len(strconv.Itoa(dataSize))) - 1
	return satAdd(r0, satMul(values, int64(dataSize)+digits))
}

func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// bytesText is n in the largest binary unit that keeps it at least 1.
func bytesText(n int64) string {
	unit := func(div float64, name string) string {
		return strings.TrimSuffix(strconv.FormatFloat(float64(n)/div, 'f', 1, 64), ".0") + " " + name
	}
	switch {
	case n >= 1<<30:
		return unit(1<<30, "GiB")
	case n >= 1<<20:
		return unit(1<<20, "MiB")
	case n >= 1<<10:
		return unit(1<<10, "KiB")
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// Run connects Clients connections through a pool and runs each test.
func Run(ctx context.Context, cfg Config) (*Outcome, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	var p *pool.Pool
	var conns []pool.PooledConn
	poolOf := func(int) *pool.Pool { return p }
	var nodeAddrs []string // in a cluster, each client's primary
	if cfg.Cluster != nil {
		var closeAll func()
		var err error
		if conns, nodeAddrs, poolOf, closeAll, err = cfg.Cluster.connect(ctx, cfg); err != nil {
			return nil, err
		}
		defer closeAll()
		p = poolOf(0)
	} else {
		var err error
		if p, err = newPool(cfg); err != nil {
			return nil, err
		}
		defer p.Close()
		if conns, err = connect(ctx, p, cfg); err != nil {
			return nil, &ConnectError{Addr: failedAddr(cfg, err), Err: err}
		}
	}
	defer func() {
		for _, c := range conns {
			c.Discard()
		}
	}()

	out := &Outcome{Clients: cfg.Clients, Pipeline: cfg.Pipeline, DataSize: cfg.DataSize, Keyspace: cfg.Keyspace}
	out.Transport = conns[0].Transport()
	for _, c := range conns[1:] {
		if c.Transport() != out.Transport {
			out.Transport = "mixed"
		}
	}
	if out.Transport != pool.RDMA {
		out.TCPEngine = pool.TCPNetpoll.String()
		if cfg.TCPEngine != nil {
			out.TCPEngine = cfg.TCPEngine.String()
		}
	}
	st := p.Stats()
	if st.LastFallback != nil {
		out.Fallback = st.LastFallback.Error()
	}
	switch {
	case cfg.Policy == pool.TCPOnly:
		out.Reason = "--transport tcp"
	case cfg.Policy == pool.RDMAOnly:
		out.Reason = "--transport rdma"
	case out.Transport == pool.RDMA:
		out.Reason = "auto: RDMA connected"
	case st.LastFallback != nil:
		out.Reason = fmt.Sprintf("auto: RDMA unavailable (%s): %v", st.LastFallback.Reason, st.LastFallback.Err)
	default:
		out.Reason = "auto: TCP in use"
	}

	if cfg.OnConnect != nil {
		cfg.OnConnect(out)
	}
	clients := make([]*client, len(conns))
	for i, c := range conns {
		clients[i] = newClient(c, clientSeed(cfg.Seed, i))
		clients[i].index = i
		if cfg.Cluster != nil {
			clients[i].node, clients[i].follows = nodeAddrs[i], true
		}
		if cfg.Precision != 0 && cfg.Precision != histSigFigs {
			clients[i].hist = histSized(cfg.Precision)
		}
	}
	if err := setup(ctx, clients, cfg); err != nil {
		return out, err
	}
	if cfg.Reconnect {
		cfg.reconnect = reconnector(ctx, poolOf, conns, clients, cfg)
	}
	if cfg.Cluster != nil {
		cfg.onError = cfg.Cluster.newFollower(ctx, len(clients)).follow
	}
	// Event loops drive the clients of TCP sockets, in a cluster too (a
	// redirected request is sent again on the same connection); not with
	// -k 0 (a new connection a batch), which keeps a goroutine a client.
	var loops []*eventLoop
	if !cfg.Reconnect {
		var err error
		if loops, err = startLoops(clients, cfg.Threads); err != nil {
			return out, err
		}
	}
	defer func() {
		for _, l := range loops {
			l.close()
		}
	}()
	out.EventLoops = len(loops)
	if loops == nil && cfg.Threads > 0 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(cfg.Threads))
	}
	data := Data(cfg.DataSize) // valkey-benchmark's bytes
	for _, t := range cfg.Tests {
		req := t.build(data)
		if cfg.Warmup > 0 || cfg.WarmupRequests > 0 {
			if _, err := runTest(ctx, clients, loops, req, cfg, phase{duration: cfg.Warmup, requests: cfg.WarmupRequests}); err != nil {
				return out, fmt.Errorf("%s (warmup): %w", t.Name, err)
			}
		}
		name := t.Name
		if cfg.ProgressTransport {
			name += " (" + string(out.Transport) + ")"
		}
		res, err := runTest(ctx, clients, loops, req, cfg, phase{record: true, duration: cfg.Duration, requests: cfg.Requests, name: name})
		if err != nil {
			return out, fmt.Errorf("%s: %w", t.Name, err)
		}
		res.Test = t.Name
		out.Results = append(out.Results, *res)
		if cfg.OnResult != nil {
			cfg.OnResult(out, &out.Results[len(out.Results)-1])
		}
	}
	return out, nil
}

// newPool is the pool of a run's connections: one a client, kept open.
func newPool(cfg Config) (*pool.Pool, error) {
	return pool.New(pool.Options{
		Addr: cfg.Addr, RDMAAddr: cfg.RDMAAddr, RDMAAddrOf: cfg.RDMAAddrOf, RDMAPort: cfg.RDMAPort, Policy: cfg.Policy, RDMA: cfg.RDMA,
		TCPEngine: cfg.TCPEngine, MaxOpen: cfg.Clients, MaxIdleTime: -1, MinBackoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond,
	})
}

// startLoops puts the clients in event loops, threads of them (at least
// one, at most one a client), when each client's connection has a socket
// a loop can drive; else it returns none, and each client will have a
// goroutine.
func startLoops(clients []*client, threads int) ([]*eventLoop, error) {
	if !loopsSupported {
		return nil, nil
	}
	for _, c := range clients {
		if !hasSocket(c.conn) {
			return nil, nil
		}
	}
	loops := make([]*eventLoop, min(max(threads, 1), len(clients)))
	fail := func(err error) ([]*eventLoop, error) {
		for _, l := range loops {
			if l != nil {
				l.close()
			}
		}
		return nil, err
	}
	for i := range loops {
		l, err := newEventLoop()
		if err != nil {
			return fail(err)
		}
		loops[i] = l
	}
	for i, c := range clients {
		fd, ok, err := takeSocket(c.conn)
		if err == nil && !ok {
			err = errors.New("a connection has no socket of its own")
		}
		if err != nil {
			return fail(err)
		}
		if err := loops[i%len(loops)].add(c, fd); err != nil {
			return fail(err)
		}
	}
	return loops, nil
}

// failedAddr is the address whose dial failed with err: the one the error
// names (TCP's or RDMA's), else the one the policy dials.
func failedAddr(cfg Config, err error) string {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Addr != nil {
		return oe.Addr.String()
	}
	if cfg.Policy != pool.RDMAOnly {
		return cfg.Addr
	}
	switch host, _, _ := net.SplitHostPort(cfg.Addr); {
	case cfg.RDMAAddr != "":
		return cfg.RDMAAddr
	case cfg.RDMAPort != 0:
		return net.JoinHostPort(host, strconv.Itoa(cfg.RDMAPort))
	}
	return cfg.Addr
}

// connect gets one connection per client, dialling them in parallel.
func connect(ctx context.Context, p *pool.Pool, cfg Config) ([]pool.PooledConn, error) {
	timeout := cfg.DialTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conns := make([]pool.PooledConn, cfg.Clients)
	errs := make([]error, cfg.Clients)
	var wg sync.WaitGroup
	for i := range conns {
		wg.Go(func() {
			conns[i], errs[i] = p.Get(ctx)
			if errs[i] != nil {
				cancel() // the first failure ends the others
			}
		})
	}
	wg.Wait()
	var first error
	for _, err := range errs {
		if err != nil && (first == nil || errors.Is(first, context.Canceled)) {
			first = err
		}
	}
	if first != nil {
		for _, c := range conns {
			if c != nil {
				c.Discard()
			}
		}
		return nil, first
	}
	return conns, nil
}

type phase struct {
	record   bool
	duration time.Duration
	requests int
	name     string // the progress bar's description
}

// stopper ends a phase early, once: it keeps the first reason and unblocks
// every client by expiring its connection's deadlines, so that a Read or
// Write waiting for a server that does not answer returns at once.
type stopper struct {
	once    sync.Once
	stopped atomic.Bool
	err     error // the reason; read once the clients and watchdog are done
	clients []*client
	loops   []*eventLoop // woken to see the stop
}

func (s *stopper) stop(err error) {
	s.once.Do(func() {
		s.err = err
		s.stopped.Store(true)
		past := time.Unix(1, 0)
		for _, c := range s.clients {
			c.conn.SetDeadline(past)
		}
		for _, l := range s.loops {
			l.wake()
		}
	})
}

// watchdog stops s when ctx ends or when a client has waited for the server
// longer than its limit (stall, or after end, endStall), checking every
// tick, until done is closed; it closes exited when it returns.
func watchdog(ctx context.Context, s *stopper, stall, endStall time.Duration, end time.Time, done, exited chan struct{}) {
	defer close(exited)
	tick := min(100*time.Millisecond, max(stall/4, time.Millisecond))
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			s.stop(ctx.Err())
			return
		case now := <-t.C:
			limit := stall
			if !end.IsZero() && now.After(end) {
				limit = endStall
			}
			at := int64(now.Sub(epoch))
			for _, c := range s.clients {
				if b := c.busy.Load(); b != 0 && time.Duration(at-(b-1)) > limit {
					s.stop(&StallError{For: time.Duration(at - (b - 1)), Sending: c.sending.Load()})
					return
				}
			}
		}
	}
}

// runTest runs one phase of one test on every client. A phase with a
// duration runs until then, each client at least one batch; with requests,
// until that many are done; with both, until the first of the two.
func runTest(ctx context.Context, clients []*client, loops []*eventLoop, req []byte, cfg Config, ph phase) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s := &stopper{clients: clients, loops: loops}
	// The pipeline's requests, when no key is random; never in a cluster,
	// where each client's hash tags are its own.
	var shared []byte
	if cfg.Cluster == nil && sharedPipeline(cfg.Keyspace, req) {
		shared = bytes.Repeat(req, cfg.Pipeline)
	}
	for _, c := range clients {
		c.prepare(req, cfg.Pipeline, shared)
		c.stopped = &s.stopped
	}
	var remaining atomic.Int64
	remaining.Store(int64(ph.requests))
	var deadline time.Time
	start := time.Now()
	if ph.duration > 0 {
		deadline = start.Add(ph.duration)
	}
	stall := cfg.Timeout
	if stall <= 0 {
		stall = DefaultTimeout
	}
	watchDone, watchExited := make(chan struct{}), make(chan struct{})
	go watchdog(ctx, s, stall, min(stall, max(ph.duration, time.Second)), deadline, watchDone, watchExited)
	lp := &loopPhase{
		keyspace: uint64(cfg.Keyspace), pipeline: cfg.Pipeline, record: ph.record,
		requests: ph.requests, remaining: &remaining, deadline: deadline, stopped: &s.stopped,
		follow: cfg.onError,
	}
	if cfg.Cluster != nil {
		lp.retag = func(c *client, k int) { cfg.Cluster.retag(c, req, k) }
	}
	var wg sync.WaitGroup
	for _, l := range loops {
		wg.Go(func() {
			if err := l.run(lp); err != nil {
				s.stop(err)
			}
		})
	}
	if loops == nil {
		for _, c := range clients {
			wg.Go(func() {
				for first := true; ; first = false {
					k := lp.claim(first)
					if k == 0 {
						return
					}
					if lp.retag != nil {
						lp.retag(c, k)
					}
					err := c.batch(k, lp.keyspace, ph.record)
					// A cluster's MOVED: the requests it redirected
					// again; those answered are counted already.
					for err != nil && cfg.onError != nil && !s.stopped.Load() && cfg.onError(c, err) {
						k -= c.answered
						lp.retag(c, k)
						err = c.resend(k, lp.keyspace, ph.record)
					}
					if err != nil {
						s.stop(err)
						return
					}
					if cfg.reconnect != nil {
						if err := cfg.reconnect(c); err != nil {
							s.stop(err)
							return
						}
					}
				}
			})
		}
	}
	stopProgress := progress(cfg.Progress, ph, clients)
	wg.Wait()
	elapsed := time.Since(start)
	close(watchDone)
	<-watchExited
	stopProgress()
	if s.err != nil {
		return nil, s.err
	}
	if !ph.record {
		return nil, nil
	}
	h := histSized(int(clients[0].hist.SignificantFigures()))
	for _, c := range clients {
		h.Merge(c.hist)
	}
	return newResult(h, elapsed), nil
}

// newResult is the result of the latencies in h, taken over elapsed.
func newResult(h *hdrhistogram.Histogram, elapsed time.Duration) *Result {
	res := &Result{Hist: h, Seconds: elapsed.Seconds(), Requests: uint64(h.TotalCount())}
	ms := func(ns int64) float64 { return round3(float64(ns) / 1e6) }
	res.RPS = math.Round(float64(res.Requests)/elapsed.Seconds()*100) / 100
	res.AvgMs = round3(h.Mean() / 1e6)
	res.MinMs, res.MaxMs = ms(h.Min()), ms(h.Max())
	res.P50Ms, res.P95Ms, res.P99Ms = ms(h.ValueAtQuantile(50)), ms(h.ValueAtQuantile(95)), ms(h.ValueAtQuantile(99))
	return res
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// progressInterval is how often the progress bar is redrawn, as often as
// valkey-benchmark redraws its status line.
const progressInterval = 250 * time.Millisecond

// progress shows a live progress bar on w until the returned function is
// called, which clears it, so that the report that follows reads as it does
// without one: the test's name, the requests done of the total (a spinner
// and the time elapsed with a duration instead) and the requests per second
// of the last few seconds (progressbar's rolling average). The bar is fed
// from the clients' done counters every progressInterval rather than by the
// clients, so that their loop takes no lock.
func progress(w io.Writer, ph phase, clients []*client) func() {
	if w == nil || !ph.record {
		return func() {}
	}
	total := int64(ph.requests)
	if total == 0 {
		total = -1 // a duration alone: a spinner and the time elapsed
	}
	bar := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(ph.name+":"),
		progressbar.OptionSetWidth(20),
		progressbar.OptionShowCount(),
		progressbar.OptionShowTotalBytes(total > 0), // "done/total", not "done/-"
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("req"),
		progressbar.OptionClearOnFinish(),
		// The spinner turns at each redraw below. Turned by a timer of its
		// own it would need a goroutine, which outlives the bar by a tick.
		progressbar.OptionSetSpinnerChangeInterval(0),
	)
	bar.StartWithoutRender() // the rates count from now, not from the first redraw
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(progressInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				var n uint64
				for _, c := range clients {
					n += c.done.Load()
				}
				bar.Set64(int64(n))
			}
		}
	}()
	return func() {
		close(stop)
		<-done
		bar.Finish() // with OptionClearOnFinish, erases the bar
	}
}
