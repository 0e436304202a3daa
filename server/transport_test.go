package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"

	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/qp"
)

// The same test over each transport: TCP here, RDMA where a device exists
// (in the soft-RoCE VM: make test-rxe).

type dialFunc func(ctx context.Context, addr string) (net.Conn, error)

func TestTransportTCP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var d net.Dialer
	testTransport(t, l, func(ctx context.Context, addr string) (net.Conn, error) {
		return d.DialContext(ctx, "tcp", addr)
	})
}

func TestTransportRDMA(t *testing.T) {
	rdmatest.Require(t)
	before := rdmatest.Resources(t)
	l, err := qp.Listen(netip.AddrPortFrom(rdmatest.Addr(t), 0).String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	testTransport(t, l, func(ctx context.Context, addr string) (net.Conn, error) {
		return qp.Dial(ctx, addr, nil)
	})
	rdmatest.CheckNoLeaks(t, before)
}

// testTransport serves l, talks to it with go-redis, valkey-go and raw
// requests through dial, then closes the server: nothing may be left.
func testTransport(t *testing.T, l net.Listener, dial dialFunc) {
	goBefore := runtime.NumGoroutine()
	srv := New(testOpts(nil))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	addr := l.Addr().String()
	ctx := ctxT(t)

	for _, protocol := range []int{2, 3} {
		c := redis.NewClient(&redis.Options{
			Addr: addr, Protocol: protocol, MaxRetries: -1,
			Dialer: func(ctx context.Context, _, addr string) (net.Conn, error) { return dial(ctx, addr) },
		})
		if got := c.Ping(ctx).Val(); got != "PONG" {
			t.Errorf("go-redis RESP%d PING: %q", protocol, got)
		}
		pipe := c.Pipeline()
		for i := range 1000 {
			pipe.Set(ctx, fmt.Sprint("k", i), i, 0)
			pipe.Get(ctx, fmt.Sprint("k", i))
		}
		cmds, err := pipe.Exec(ctx)
		if err != nil {
			t.Fatalf("go-redis RESP%d pipeline: %v", protocol, err)
		}
		for i := 1; i < len(cmds); i += 2 {
			if got := cmds[i].(*redis.StringCmd).Val(); got != fmt.Sprint(i/2) {
				t.Fatalf("go-redis RESP%d pipelined GET k%d: %q", protocol, i/2, got)
			}
		}
		// Larger than the RDMA receive buffer (1 MiB): sent in pieces.
		big := strings.Repeat("0123456789abcdef", 256<<10) // 4 MiB
		if err := c.Set(ctx, "big", big, 0).Err(); err != nil {
			t.Fatal(err)
		}
		if got := c.Get(ctx, "big").Val(); got != big {
			t.Errorf("go-redis RESP%d GET of 4 MiB: %d bytes", protocol, len(got))
		}
		c.Close()
	}

	vc, err := valkey.NewClient(valkey.ClientOption{
		InitAddress: []string{addr}, DisableCache: true, DisableRetry: true,
		DialCtxFn: func(ctx context.Context, addr string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return dial(ctx, addr)
		},
	})
	if err != nil {
		t.Fatalf("valkey-go: %v", err)
	}
	if got, _ := vc.Do(ctx, vc.B().Get().Key("k7").Build()).ToString(); got != "7" {
		t.Errorf("valkey-go GET: %q", got)
	}
	vc.Close()

	// Raw requests: inline, and one the server closes the connection for.
	nc, err := dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	rc := newRawClient(t, nc)
	rc.send("PING\r\n" + encode("DBSIZE") + "*x\r\n")
	rc.expect("+PONG\r\n")
	rc.expect(":1001\r\n")
	rc.expect("-ERR Protocol error: invalid multibulk length\r\n")
	rc.expectClosed()
	nc.Close()

	testRealClients(t, addr, dial) // realclients_test.go

	// A connection left open is closed by Close.
	nc, err = dial(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	newRawClient(t, nc).expectReply(t, []string{"ping"}, "+PONG\r\n")
	srv.Close()
	if err := <-served; !errors.Is(err, ErrServerClosed) {
		t.Errorf("Serve: %v", err)
	}
	nc.Close()
	checkGoroutines(t, goBefore)
}
