package pool_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"

	"github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"

	"github.com/seed54442f1a/rdmapool/pool"
	"github.com/seed54442f1a/rdmapool/pool/pooltest"
	"github.com/seed54442f1a/rdmapool/server"
)

// exampleServer starts the embedded Valkey-compatible server on a free
// loopback port, so that the examples run anywhere; in a service, addr is
// your Valkey server's.
func exampleServer() (addr string, stop func()) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := server.New(nil)
	go srv.Serve(l)
	return l.Addr().String(), func() { srv.Close() }
}

// go-redis through a Dialer: RDMA where the server has it, TCP otherwise.
func ExampleDialer_goRedis() {
	addr, stop := exampleServer()
	defer stop()

	var d pool.Dialer // the zero value: policy Auto, no limit of its own
	defer d.Close()
	rdb := redis.NewClient(&redis.Options{Addr: addr, Dialer: d.DialContext})
	defer rdb.Close()

	ctx := context.Background()
	if err := rdb.Set(ctx, "greeting", "hello", 0).Err(); err != nil {
		log.Fatal(err)
	}
	v, err := rdb.Get(ctx, "greeting").Result()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v)
	// Output: hello
}

// valkey-go through a Dialer.
func ExampleDialer_valkeyGo() {
	addr, stop := exampleServer()
	defer stop()

	var d pool.Dialer
	defer d.Close()
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{addr}, DialCtxFn: d.DialValkey, DisableCache: true})
	if err != nil {
		log.Fatal(err)
	}
	defer vk.Close()

	ctx := context.Background()
	if err := vk.Do(ctx, vk.B().Set().Key("greeting").Value("hello").Build()).Error(); err != nil {
		log.Fatal(err)
	}
	v, err := vk.Do(ctx, vk.B().Get().Key("greeting").Build()).ToString()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(v)
	// Output: hello
}

// Falling back to TCP is reported: to OnFallback once per change of
// reason, and in Stats for each connection. Here the in-memory network of
// package pooltest stands in for a machine without an RDMA device.
func ExampleOptions_onFallback() {
	network := pooltest.New(pooltest.Echo)
	defer network.Close()
	network.OnDial(pool.RDMA, pooltest.NoDevice)

	p, err := pool.New(pool.Options{
		Addr:    "10.0.0.1:6379",
		Network: network, // leave it out to dial for real
		OnFallback: func(fe *pool.FallbackError) {
			fmt.Println("fallback:", fe.Reason, "retried later:", fe.Skipped)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	for range 2 {
		c, err := p.Get(context.Background())
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close() // held, so that the second Get dials too
	}
	st := p.Stats()
	fmt.Println("dials:", st.Dials[pool.RDMA], "rdma,", st.Dials[pool.TCP], "tcp; fallbacks:", st.Fallbacks, "covered by the call:", st.FallbackConns)
	// Output:
	// fallback: no-device retried later: false
	// dials: 0 rdma, 2 tcp; fallbacks: map[no-device:2] covered by the call: 2
}

// Pool.Get for a protocol of your own: a request, its whole reply, then
// Close, which returns the connection to the pool for the next Get.
func ExamplePool_Get() {
	addr, stop := exampleServer()
	defer stop()

	p, err := pool.New(pool.Options{Addr: addr, MaxOpen: 8})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	c, err := p.Get(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		c.Discard() // an error: the connection is not reused
		log.Fatal(err)
	}
	reply, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		c.Discard()
		log.Fatal(err)
	}
	fmt.Printf("%q\n", reply)
	c.Close() // the reply was read: back to the pool
	fmt.Println("idle:", p.Stats().Idle)
	// Output:
	// "+PONG\r\n"
	// idle: 1
}

// The zero-copy calls of an RDMA connection, through the PooledConn: a
// slice of the connection's registered memory, valid until Commit (to
// send) or Release (once read). The in-memory RDMA of package pooltest
// stands in for a device here; the code is the same with one.
func ExampleZeroCopyReader() {
	network := pooltest.New(pooltest.Echo)
	defer network.Close()
	p, err := pool.New(pool.Options{Addr: "10.0.0.1:7000", Policy: pool.RDMAOnly, Network: network})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()

	c, err := p.Get(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	zw, okW := c.(pool.ZeroCopyWriter)
	zr, okR := c.(pool.ZeroCopyReader)
	if !okW || !okR {
		log.Fatal("no zero-copy calls on this transport: use Read and Write")
	}

	buf, err := zw.Reserve(5) // fill the send memory in place
	if err != nil {
		log.Fatal(err)
	}
	n := copy(buf, "hello")
	if err := zw.Commit(n); err != nil { // buf is no longer ours
		log.Fatal(err)
	}

	got, err := zr.Lease() // the received bytes, in place
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", got)
	if err := zr.Release(len(got)); err != nil { // got is no longer ours
		log.Fatal(err)
	}
	// Output: hello
}
