package pool_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/grpclog"
	"google.golang.org/grpc/interop"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/pool"
)

// grpc-go's interop cases (package interop) report a failure with
// grpclog's Fatal, which exits the process. Here Fatal panics with an
// interopFailure instead, which interopCase turns into the test's failure.
func init() { grpclog.SetLoggerV2(failLogger{}) }

type interopFailure string

// failLogger is grpclog's logger for these tests: errors to stderr, info
// and warnings dropped, Fatal a panic.
type failLogger struct{}

func (failLogger) Info(...any)                  {}
func (failLogger) Infoln(...any)                {}
func (failLogger) Infof(string, ...any)         {}
func (failLogger) Warning(...any)               {}
func (failLogger) Warningln(...any)             {}
func (failLogger) Warningf(string, ...any)      {}
func (failLogger) Error(args ...any)            { fmt.Fprintln(os.Stderr, append([]any{"grpc:"}, args...)...) }
func (failLogger) Errorln(args ...any)          { fmt.Fprintln(os.Stderr, append([]any{"grpc:"}, args...)...) }
func (failLogger) Errorf(f string, args ...any) { fmt.Fprintf(os.Stderr, "grpc: "+f+"\n", args...) }
func (failLogger) Fatal(args ...any)            { panic(interopFailure(fmt.Sprint(args...))) }
func (failLogger) Fatalln(args ...any)          { panic(interopFailure(fmt.Sprintln(args...))) }
func (failLogger) Fatalf(f string, args ...any) { panic(interopFailure(fmt.Sprintf(f, args...))) }
func (failLogger) V(int) bool                   { return false }

var _ grpclog.LoggerV2 = failLogger{}

// interopCase runs one of package interop's cases as a subtest.
func interopCase(t *testing.T, name string, f func()) {
	t.Run(name, func(t *testing.T) {
		defer func() {
			if r := recover(); r != nil {
				if msg, ok := r.(interopFailure); ok {
					t.Fatal(string(msg))
				}
				panic(r)
			}
		}()
		f()
	})
}

// echoDesc is a unary gRPC service without generated code of its own: it
// returns the request's payload, so that a large message is checked byte
// for byte both ways (the interop server answers with zeros).
var echoDesc = grpc.ServiceDesc{
	ServiceName: "rdmapool.test.Echo",
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

// maxMsg is the largest gRPC message the tests let through, both ways:
// above grpc's 4 MiB default, for a 4 MiB payload and its framing.
const maxMsg = 8 << 20

// grpcPair serves interop's TestService and the echo service on a
// Listener of the policy, and returns a client connection through a Dialer
// of the same policy. Everything ends with the test.
func grpcPair(t *testing.T, policy pool.Policy) (*grpc.ClientConn, *pool.Listener, *pool.Dialer) {
	t.Helper()
	l, d := listenPair(t, policy)
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(maxMsg), grpc.MaxSendMsgSize(maxMsg))
	testgrpc.RegisterTestServiceServer(srv, interop.NewTestServer())
	srv.RegisterService(&echoDesc, nil)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	cc, err := grpc.NewClient(l.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsg), grpc.MaxCallSendMsgSize(maxMsg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cc.Close()
		srv.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return cc, l, d
}

// TestListenGRPCInterop: grpc-go's interop cases, between a grpc.Server
// on a Listener and a client through a Dialer, by policy: TCPOnly and
// Auto anywhere, RDMAOnly in the VM. Then a 4 MiB unary call, echoed.
func TestListenGRPCInterop(t *testing.T) {
	rdmaHere()
	for _, lc := range listenCases {
		t.Run(lc.name, func(t *testing.T) {
			testutil.LeakCheck(t, false)
			cc, l, d := grpcPair(t, lc.policy)
			tc := testgrpc.NewTestServiceClient(cc)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			for _, c := range []struct {
				name string
				f    func(context.Context, testgrpc.TestServiceClient, ...grpc.CallOption)
			}{
				{"EmptyUnary", interop.DoEmptyUnaryCall},
				{"LargeUnary", interop.DoLargeUnaryCall},
				{"ClientStreaming", interop.DoClientStreaming},
				{"ServerStreaming", interop.DoServerStreaming},
				{"PingPong", interop.DoPingPong},
				{"EmptyStream", interop.DoEmptyStream},
				{"TimeoutOnSleepingServer", interop.DoTimeoutOnSleepingServer},
				{"CancelAfterBegin", interop.DoCancelAfterBegin},
				{"CancelAfterFirstResponse", interop.DoCancelAfterFirstResponse},
				{"CustomMetadata", interop.DoCustomMetadata},
				{"StatusCodeAndMessage", interop.DoStatusCodeAndMessage},
				{"SpecialStatusMessage", interop.DoSpecialStatusMessage},
			} {
				interopCase(t, c.name, func() { c.f(ctx, tc) })
			}
			interopCase(t, "UnimplementedMethod", func() { interop.DoUnimplementedMethod(ctx, cc) })
			interopCase(t, "UnimplementedService", func() {
				interop.DoUnimplementedService(ctx, testgrpc.NewUnimplementedServiceClient(cc))
			})

			t.Run("Unary4MiB", func(t *testing.T) {
				body := make([]byte, 4<<20)
				rand.Read(body)
				in := &testpb.SimpleRequest{Payload: &testpb.Payload{Body: body}}
				out := new(testpb.SimpleResponse)
				for range 3 {
					if err := cc.Invoke(ctx, "/rdmapool.test.Echo/Echo", in, out); err != nil {
						t.Fatal(err)
					}
					if !bytes.Equal(out.GetPayload().GetBody(), body) {
						t.Fatalf("echo of 4 MiB: %d bytes back, not the same", len(out.GetPayload().GetBody()))
					}
				}
			})
			checkTransports(t, lc.policy, l, d)
		})
	}
}

// TestListenHTTP: net/http's server on a Listener and its client through
// a Dialer (Transport.DialContext), by policy: 1 MiB bodies each way,
// echoed, one request after another on a kept-alive connection and four
// at once; the handler sees the transport through ConnContext.
func TestListenHTTP(t *testing.T) {
	rdmaHere()
	for _, lc := range listenCases {
		t.Run(lc.name, func(t *testing.T) {
			testutil.LeakCheck(t, false)
			l, d := listenPair(t, lc.policy)
			type transportKey struct{}
			srv := &http.Server{
				ConnContext: func(ctx context.Context, c net.Conn) context.Context {
					return context.WithValue(ctx, transportKey{}, c.(pool.Conn).Transport())
				},
				Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					tr, _ := r.Context().Value(transportKey{}).(pool.Transport)
					w.Header().Set("Served-Over", string(tr))
					// Read whole, then written: net/http's HTTP/1 server
					// drops what is unread of a body once the reply starts.
					b, err := io.ReadAll(r.Body)
					if err != nil {
						http.Error(w, err.Error(), http.StatusBadRequest)
						return
					}
					w.Write(b)
				}),
			}
			served := make(chan error, 1)
			go func() { served <- srv.Serve(l) }()
			defer func() {
				srv.Close()
				if err := <-served; err != http.ErrServerClosed {
					t.Errorf("Serve: %v", err)
				}
			}()
			tr := &http.Transport{DialContext: d.DialContext}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr, Timeout: 5 * time.Minute}
			url := "http://" + l.Addr().String() + "/echo"

			post := func(body []byte) error {
				resp, err := client.Post(url, "application/octet-stream", bytes.NewReader(body))
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				got, err := io.ReadAll(resp.Body)
				if err != nil {
					return err
				}
				if resp.StatusCode != http.StatusOK || !bytes.Equal(got, body) {
					return fmt.Errorf("status %s, %d bytes back of %d, equal: %v", resp.Status, len(got), len(body), bytes.Equal(got, body))
				}
				want := map[pool.Policy]string{pool.TCPOnly: "tcp", pool.RDMAOnly: "rdma"}[lc.policy]
				if over := resp.Header.Get("Served-Over"); over == "" || want != "" && over != want {
					return fmt.Errorf("served over %q; want %q", over, want)
				}
				return nil
			}
			body := make([]byte, 1<<20)
			rand.Read(body)
			for range 3 {
				if err := post(body); err != nil {
					t.Fatal(err)
				}
			}
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					if err := post(body); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			checkTransports(t, lc.policy, l, d)
		})
	}
}
