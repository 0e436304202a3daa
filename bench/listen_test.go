package bench

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/interop"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/pool"
)

// serviceEnv makes the test binary a service on a pool.Listen ("grpc tcp",
// "http rdma ADDR"...): a gRPC echo or an HTTP server, over TCP alone or
// RDMA alone, that prints its address on stdout and serves until stdin
// closes.
const serviceEnv = "RDMAPOOL_BENCH_SERVICE"

// echoService is a unary gRPC echo without generated code of its own: it
// returns the request's payload.
var echoService = grpc.ServiceDesc{
	ServiceName: "rdmapool.bench.Echo",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Echo",
		Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			in := new(testpb.SimpleRequest)
			if err := dec(in); err != nil {
				return nil, err
			}
			return &testpb.SimpleResponse{Payload: in.Payload}, nil
		},
	}},
}

// httpBody is what the HTTP service answers a GET with.
var httpBody = strings.Repeat("x", 64)

func serveService(mode string) int {
	f := strings.Fields(mode)
	if len(f) < 2 {
		fmt.Fprintf(os.Stderr, "unknown service %q\n", mode)
		return 1
	}
	opts := &pool.ListenOptions{Policy: pool.TCPOnly}
	host := "127.0.0.1"
	if f[1] == "rdma" && len(f) == 3 {
		ro, err := rdmaOptions()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		opts.Policy, opts.RDMA, host = pool.RDMAOnly, ro, f[2]
	}
	l, err := pool.Listen(net.JoinHostPort(host, "0"), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var serve func() error
	var stop func()
	switch f[0] {
	case "grpc":
		srv := grpc.NewServer()
		srv.RegisterService(&echoService, nil)
		testgrpc.RegisterTestServiceServer(srv, interop.NewTestServer())
		serve, stop = func() error { return srv.Serve(l) }, srv.Stop
	case "http":
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, httpBody)
		})}
		serve, stop = func() error { return srv.Serve(l) }, func() { srv.Close() }
	default:
		fmt.Fprintf(os.Stderr, "unknown service %q\n", mode)
		return 1
	}
	fmt.Println(l.Addr())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		stop()
	}()
	serve()
	return 0
}

// listenRounds is how many times each service benchmark runs over each
// transport, the transports taking turns within a round (RDMA, TCP, RDMA,
// TCP...), so that the two are compared within a round as the emulation's
// speed drifts; -test.count would run one transport's rounds back to back.
// A round's results carry Go's #NN suffix from the second round on.
var listenRounds = flag.Int("listen.rounds", 1, "rounds of the service benchmarks, the transports alternating within each")

// listenTransports are the transports of the service benchmarks: both
// ends RDMAOnly (the VM), or both TCPOnly.
var listenTransports = []struct {
	name   string
	policy pool.Policy
}{{"rdma", pool.RDMAOnly}, {"tcp", pool.TCPOnly}}

// startService starts the service proto ("grpc" or "http") in a child
// process, over the policy's transport, and returns its address and a
// Dialer of the same policy; both end with the benchmark.
func startService(b *testing.B, proto string, policy pool.Policy) (string, *pool.Dialer) {
	b.Helper()
	mode := proto + " tcp"
	o := pool.Options{Policy: policy, DialTimeout: time.Minute}
	if policy == pool.RDMAOnly {
		rdmatest.Require(b)
		ro, err := rdmaOptions()
		if err != nil {
			b.Fatal(err)
		}
		mode, o.RDMA = proto+" rdma "+rdmatest.Addr(b).String(), ro
	}
	addr, _ := startChild(b, serviceEnv, mode)
	d := &pool.Dialer{Options: o}
	b.Cleanup(func() { d.Close() })
	return addr, d
}

// benchLatency is testutil.BenchLatency after one untimed op (the
// connection's setup), with the machine's CPU per op.
func benchLatency(b *testing.B, op func() error) {
	b.Helper()
	if err := op(); err != nil {
		b.Fatal(err)
	}
	m := startMachineCPU()
	testutil.BenchLatency(b, op)
	m.report(b)
}

// machineMeter reports as machine-cpu-µs/op the CPU the whole machine
// used per op (machineCPU): both processes, spinning included, and the
// kernel's work for the transport, soft-RoCE's included. Where the
// machine's CPUs are the bottleneck, as under emulation, that is what a
// transport's latency follows.
type machineMeter struct {
	t0 time.Duration
	ok bool
}

func startMachineCPU() machineMeter {
	t0, ok := machineCPU()
	return machineMeter{t0, ok}
}

func (m machineMeter) report(b *testing.B) {
	t1, ok := machineCPU()
	if !m.ok || !ok || b.N == 0 {
		return
	}
	b.ReportMetric(float64(t1-m.t0)/float64(time.Microsecond)/float64(b.N), "machine-cpu-µs/op")
}

// BenchmarkListenGRPCUnary: a gRPC unary call, echoed, between a server
// on pool.Listen and a client through a pool.Dialer (in another process),
// one at a time, over RDMA and over TCP.
func BenchmarkListenGRPCUnary(b *testing.B) {
	for range max(*listenRounds, 1) {
		benchListenGRPCUnary(b)
	}
}

func benchListenGRPCUnary(b *testing.B) {
	for _, size := range []int{64, 4 << 10} {
		for _, tr := range listenTransports {
			b.Run(fmt.Sprintf("transport=%s/size=%d", tr.name, size), func(b *testing.B) {
				cc := grpcClient(b, tr.policy)
				ctx := context.Background()
				in := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: make([]byte, size)}}
				out := new(testpb.SimpleResponse)
				benchLatency(b, func() error {
					if err := cc.Invoke(ctx, "/rdmapool.bench.Echo/Echo", in, out); err != nil {
						return err
					}
					if n := len(out.GetPayload().GetBody()); n != size {
						return fmt.Errorf("echo: %d bytes back of %d", n, size)
					}
					return nil
				})
			})
		}
	}
}

// BenchmarkListenGRPCStream: a gRPC client stream (grpc-go's interop
// StreamingInputCall) of size-byte messages from a client through a
// pool.Dialer to a server on pool.Listen (in another process), over RDMA
// and over TCP; MB/s is the stream's throughput, from the first message
// sent to the server's answer that it took them all.
func BenchmarkListenGRPCStream(b *testing.B) {
	for range max(*listenRounds, 1) {
		benchListenGRPCStream(b)
	}
}

func benchListenGRPCStream(b *testing.B) {
	for _, size := range []int{4 << 10, 64 << 10} {
		for _, tr := range listenTransports {
			b.Run(fmt.Sprintf("transport=%s/size=%d", tr.name, size), func(b *testing.B) {
				cc := grpcClient(b, tr.policy)
				client := testgrpc.NewTestServiceClient(cc)
				req := &testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: make([]byte, size)}}
				stream := func(n int) error {
					st, err := client.StreamingInputCall(context.Background())
					if err != nil {
						return err
					}
					for range n {
						if err := st.Send(req); err != nil {
							return err
						}
					}
					resp, err := st.CloseAndRecv()
					if err != nil {
						return err
					}
					if got, want := resp.GetAggregatedPayloadSize(), int32(n*size); got != want {
						return fmt.Errorf("stream: the server took %d bytes of %d", got, want)
					}
					return nil
				}
				if err := stream(16); err != nil { // the connection's setup and warm-up
					b.Fatal(err)
				}
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				m := startMachineCPU()
				if err := stream(b.N); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				m.report(b)
			})
		}
	}
}

// grpcClient starts the gRPC service over the policy's transport and
// returns a client of it through a pool.Dialer; both end with the
// benchmark.
func grpcClient(b *testing.B, policy pool.Policy) *grpc.ClientConn {
	b.Helper()
	addr, d := startService(b, "grpc", policy)
	cc, err := grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", a)
		}))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cc.Close() })
	return cc
}

// BenchmarkListenHTTPGet: a net/http GET of a 64-byte body, between a
// server on pool.Listen and an http.Client through a pool.Dialer (in
// another process), one at a time on a kept-alive connection, over RDMA
// and over TCP.
func BenchmarkListenHTTPGet(b *testing.B) {
	for range max(*listenRounds, 1) {
		benchListenHTTPGet(b)
	}
}

func benchListenHTTPGet(b *testing.B) {
	for _, tr := range listenTransports {
		b.Run("transport="+tr.name, func(b *testing.B) {
			addr, d := startService(b, "http", tr.policy)
			t := &http.Transport{DialContext: d.DialContext}
			defer t.CloseIdleConnections()
			client := &http.Client{Transport: t}
			url := "http://" + addr + "/"
			buf := make([]byte, 4<<10)
			benchLatency(b, func() error {
				resp, err := client.Get(url)
				if err != nil {
					return err
				}
				n, err := io.ReadFull(resp.Body, buf[:len(httpBody)])
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
				}
				resp.Body.Close()
				if err != nil || n != len(httpBody) || resp.StatusCode != http.StatusOK {
					return fmt.Errorf("GET: %s, %d bytes, %v", resp.Status, n, err)
				}
				return nil
			})
		})
	}
}
