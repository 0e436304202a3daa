package pool

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
	"github.com/seed54442f1a/rdmapool/qp"
	"github.com/seed54442f1a/rdmapool/server"
)

// target is a server the clients talk to: a TCP address and, if it has
// one, an RDMA port on the same host.
type target struct {
	tcp      string
	rdmaPort int
}

// embedded starts the embedded server on TCP (host) and, when this machine
// has RDMA, on RDMA as well.
func embedded(t testing.TB, host string) target {
	t.Helper()
	srv := server.New(nil)
	tl, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(tl)
	tg := target{tcp: tl.Addr().String()}
	if rdmatest.Available() {
		rl, err := qp.Listen(net.JoinHostPort(host, "0"), nil)
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(rl)
		tg.rdmaPort = int(netip.MustParseAddrPort(rl.Addr().String()).Port())
	}
	t.Cleanup(func() { srv.Close() })
	return tg
}

// valkeyServer starts Debian's valkey-server on a free loopback port.
func valkeyServer(tb testing.TB) target { return target{tcp: testutil.ValkeyServer(tb)} }

func exercise(t *testing.T, ctx context.Context, set func(k, v string) error, get func(k string) (string, error)) {
	t.Helper()
	for i := range 50 {
		k, v := fmt.Sprint("k", i), strings.Repeat(fmt.Sprint(i), i+1)
		if err := set(k, v); err != nil {
			t.Fatal(err)
		}
		if got, err := get(k); err != nil || got != v {
			t.Fatalf("GET %s = %q, %v; want %q", k, got, err, v)
		}
	}
	big := strings.Repeat("x", 3<<20)
	if err := set("big", big); err != nil {
		t.Fatal(err)
	}
	if got, err := get("big"); err != nil || got != big {
		t.Fatalf("GET big: %d bytes, %v", len(got), err)
	}
}

func testGoRedis(t *testing.T, tg target, policy Policy) *Dialer {
	d := &Dialer{Options: Options{Policy: policy, RDMAPort: tg.rdmaPort}}
	t.Cleanup(func() { d.Close() })
	rdb := redis.NewClient(&redis.Options{Addr: tg.tcp, Dialer: d.DialContext})
	defer rdb.Close()
	ctx := context.Background()
	exercise(t, ctx,
		func(k, v string) error { return rdb.Set(ctx, k, v, 0).Err() },
		func(k string) (string, error) { return rdb.Get(ctx, k).Result() })
	pipe := rdb.Pipeline()
	for range 1000 {
		pipe.Incr(ctx, "ctr")
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Get(ctx, "ctr").Int(); err != nil || n != 1000 {
		t.Errorf("counter after a pipeline of 1000 INCR: %d, %v", n, err)
	}
	// A read timeout: the connection is dropped, the next command works.
	slow := redis.NewClient(&redis.Options{Addr: tg.tcp, Dialer: d.DialContext, ReadTimeout: time.Nanosecond, MaxRetries: -1})
	if err := slow.Ping(ctx).Err(); err == nil {
		t.Log("a 1 ns read timeout did not fire (the reply was already there)")
	}
	slow.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Errorf("PING after another client's timeout: %v", err)
	}
	return d
}

func testValkeyGo(t *testing.T, tg target, policy Policy) *Dialer {
	d := &Dialer{Options: Options{Policy: policy, RDMAPort: tg.rdmaPort}}
	t.Cleanup(func() { d.Close() })
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{tg.tcp}, DialCtxFn: d.DialValkey, DisableCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer vk.Close()
	ctx := context.Background()
	exercise(t, ctx,
		func(k, v string) error { return vk.Do(ctx, vk.B().Set().Key(k).Value(v).Build()).Error() },
		func(k string) (string, error) { return vk.Do(ctx, vk.B().Get().Key(k).Build()).ToString() })
	cmds := make(valkey.Commands, 0, 1000)
	for range 1000 {
		cmds = append(cmds, vk.B().Incr().Key("vctr").Build())
	}
	for _, r := range vk.DoMulti(ctx, cmds...) {
		if r.Error() != nil {
			t.Fatal(r.Error())
		}
	}
	if n, err := vk.Do(ctx, vk.B().Get().Key("vctr").Build()).AsInt64(); err != nil || n != 1000 {
		t.Errorf("counter after 1000 pipelined INCR: %d, %v", n, err)
	}
	return d
}

// TestClientsOverTCPToValkey: go-redis and valkey-go through our dialers
// (policy TCP, the fallback transport) against a real valkey-server.
func TestClientsOverTCPToValkey(t *testing.T) {
	tg := valkeyServer(t)
	t.Run("go-redis", func(t *testing.T) { testGoRedis(t, tg, TCPOnly) })
	t.Run("valkey-go", func(t *testing.T) { testValkeyGo(t, tg, TCPOnly) })
}

// TestClientsAuto: go-redis and valkey-go with policy Auto against the
// embedded server: over RDMA where this machine has it (the VM), else over
// TCP with the fallback recorded.
func TestClientsAuto(t *testing.T) {
	host := "127.0.0.1"
	if rdmatest.Available() {
		host = rdmatest.Addr(t).String()
	}
	tg := embedded(t, host)
	want := TCP
	if tg.rdmaPort != 0 {
		want = RDMA
	}
	for name, run := range map[string]func(*testing.T, target, Policy) *Dialer{"go-redis": testGoRedis, "valkey-go": testValkeyGo} {
		t.Run(name, func(t *testing.T) {
			d := run(t, tg, Auto)
			st := d.Stats()[tg.tcp]
			t.Logf("%s: dials %v, fallbacks %v", name, st.Dials, st.Fallbacks)
			if st.Dials[want] == 0 || st.Dials[other(want)] != 0 {
				t.Errorf("dials %v, want all over %s", st.Dials, want)
			}
			if want == TCP && st.LastFallback == nil {
				t.Errorf("fell back to TCP without saying why")
			}
		})
	}
}

func other(t Transport) Transport {
	if t == RDMA {
		return TCP
	}
	return RDMA
}

// TestTLSWithRDMAOnly: RDMA has no TLS.
func TestTLSWithRDMAOnly(t *testing.T) {
	d := &Dialer{Options: Options{Policy: RDMAOnly}}
	defer d.Close()
	_, err := d.DialValkey(context.Background(), "127.0.0.1:1", nil, &tls.Config{ServerName: "localhost"})
	if !errors.Is(err, errTLSRDMA) {
		t.Errorf("TLS with RDMA only: %v", err)
	}
}

// TestDeviceRemovedFallsBack (VM only): a pool on RDMA loses its device;
// what was in flight fails cleanly, and new Gets fall back to TCP.
func TestDeviceRemovedFallsBack(t *testing.T) {
	if !testutil.InVM() {
		t.Skip("skipped: removes an RDMA device, so it only runs in the project's VM (make test-rxe)")
	}
	host := rdmatest.Addr(t).String()
	tg := embedded(t, host)
	// No race with TCP (FallbackDelay): under emulation an RDMA setup can
	// take longer than the default, and the test needs RDMA first.
	p := newPool(t, Options{Addr: tg.tcp, RDMAPort: tg.rdmaPort, FallbackDelay: -1})
	ctx := context.Background()
	c, err := p.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c.Transport() != RDMA {
		t.Fatalf("first connection over %s, want rdma", c.Transport())
	}
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "+PONG\r\n" {
		t.Fatalf("PING over RDMA: %q, %v", buf[:n], err)
	}
	dev := os.Getenv("RDMAPOOL_TEST_DEV")
	if dev == "" {
		dev = "rxe0"
	}
	out, err := exec.CommandContext(ctx, "rdma", "link", "delete", dev).CombinedOutput()
	if err != nil {
		t.Fatalf("rdma link delete %s: %v %s", dev, err, out)
	}
	defer func() {
		if out, err := exec.Command("rdma", "link", "add", dev, "type", "rxe", "netdev", "veth0").CombinedOutput(); err != nil {
			t.Errorf("adding %s back: %v %s", dev, err, out)
		}
		time.Sleep(time.Second)
	}()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	_, err = c.Write([]byte("*1\r\n$4\r\nPING\r\n"))
	if err == nil {
		_, err = c.Read(buf)
	}
	if !errors.Is(err, qp.ErrDeviceRemoved) {
		t.Errorf("in-flight request after removal: %v, want ErrDeviceRemoved", err)
	}
	c.Close()
	c2, err := p.Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if c2.Transport() != TCP {
		t.Errorf("after removal a new connection uses %s, want tcp", c2.Transport())
	}
	st := p.Stats()
	t.Logf("after removal: dials %v, fallback %v", st.Dials, st.LastFallback)
	if st.LastFallback == nil {
		t.Error("fell back without saying why")
	}
}

// TestPoolNoStaleReply: against valkey-server, callers that write a
// request and close their PooledConn without reading the reply alternate
// with callers that read theirs, on a pool of one connection: none of the
// latter reads another's reply (each abandoned connection is closed, not
// pooled).
func TestPoolNoStaleReply(t *testing.T) {
	tg := valkeyServer(t)
	for _, eng := range testEngines {
		t.Run(eng.String(), func(t *testing.T) {
			p := newPool(t, Options{Addr: tg.tcp, Policy: TCPOnly, TCPEngine: eng, MaxOpen: 1})
			ctx := context.Background()
			stale := 0
			for i := range 200 {
				c, err := p.Get(ctx)
				if err != nil {
					t.Fatal(err)
				}
				arg := fmt.Sprintf("%08d", i)
				if _, err := fmt.Fprintf(c, "*2\r\n$4\r\nECHO\r\n$8\r\n%s\r\n", arg); err != nil {
					t.Fatal(err)
				}
				if i%2 == 0 { // gives up on the reply
					c.Close()
					continue
				}
				want := "$8\r\n" + arg + "\r\n"
				got := make([]byte, len(want))
				if _, err := io.ReadFull(c, got); err != nil {
					t.Fatal(err)
				}
				if string(got) != want {
					stale++
				}
				c.Close()
			}
			if stale != 0 {
				t.Errorf("%d of 100 callers read another's reply", stale)
			}
		})
	}
}
