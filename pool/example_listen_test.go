package pool_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/seed54442f1a/rdmapool/pool"
)

// A gRPC service over RDMA and TCP: the server serves a Listener, its
// clients dial through a Dialer. Under Auto (both ends' zero value) a
// client connects over RDMA where both machines can, else over TCP; in a
// handler, peer.FromContext(ctx).Addr.Network() says which ("rdma" or
// "tcp"). The service here is grpc's health service, so that the example
// needs no generated code of its own.
func ExampleListen_grpc() {
	l, err := pool.Listen("127.0.0.1:0", nil) // in a service: ":50051"
	if err != nil {
		log.Fatal(err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(l)
	defer srv.Stop() // closes l

	var d pool.Dialer
	defer d.Close()
	cc, err := grpc.NewClient(l.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		}))
	if err != nil {
		log.Fatal(err)
	}
	defer cc.Close()

	resp, err := healthpb.NewHealthClient(cc).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.GetStatus())
	// Output: SERVING
}

// net/http over RDMA and TCP: http.Server serves a Listener, and an
// http.Client dials through a Dialer (Transport.DialContext). The server
// learns each connection's transport in ConnContext.
func ExampleListen_http() {
	l, err := pool.Listen("127.0.0.1:0", nil) // in a service: ":8080"
	if err != nil {
		log.Fatal(err)
	}
	type transportKey struct{}
	srv := &http.Server{
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, transportKey{}, c.(pool.Conn).Transport())
		},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Served-Over", string(r.Context().Value(transportKey{}).(pool.Transport)))
			io.WriteString(w, "hello")
		}),
	}
	go srv.Serve(l)
	defer srv.Close() // closes l

	var d pool.Dialer
	defer d.Close()
	tr := &http.Transport{DialContext: d.DialContext}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}

	resp, err := client.Get("http://" + l.Addr().String() + "/")
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(resp.Status, string(body)) // resp.Header.Get("Served-Over") is "rdma" or "tcp"
	// Output: 200 OK hello
}

// Without RDMA here, Auto serves TCP alone and says why: to OnFallback,
// once, and in Stats (RDMAOff). RDMAOnly would fail Listen with the same
// words.
func ExampleListenOptions_onFallback() {
	l, err := pool.Listen(":6379", &pool.ListenOptions{
		OnFallback: func(fe *pool.FallbackError) {
			log.Printf("serving TCP alone: %v", fe) // the reason, and what to do
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	st := l.Stats()
	fmt.Println("RDMA listens:", st.RDMA, "at", l.RDMAAddr(), "why not:", st.RDMAOff)
}
