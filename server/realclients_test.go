package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"
)

// testRealClients runs what applications do with go-redis and valkey-go,
// with their default options but the dialer, against the server at addr
// (testTransport: over TCP here, over RDMA in the VM): transactions, WATCH
// with retries, pub/sub and sharded pub/sub, scripts, blocking pops,
// consumer groups, and valkey-go's client-side cache with its
// invalidations, DoMulti and Receive.
func testRealClients(t *testing.T, addr string, dial dialFunc) {
	ctx := ctxT(t)
	rc := redis.NewClient(&redis.Options{
		Addr:   addr,
		Dialer: func(ctx context.Context, _, addr string) (net.Conn, error) { return dial(ctx, addr) },
	})
	defer rc.Close()

	// TxPipelined: MULTI/EXEC, both replies.
	cmds, err := rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "rc:tx", "1", 0)
		p.Incr(ctx, "rc:tx")
		return nil
	})
	if err != nil || len(cmds) != 2 || cmds[1].(*redis.IntCmd).Val() != 2 {
		t.Fatalf("go-redis TxPipelined: %v %v", cmds, err)
	}

	// Watch with retries: 8 goroutines increment one counter through
	// optimistic transactions; every increment lands once.
	const workers, each = 8, 10
	incr := func() error {
		for {
			err := rc.Watch(ctx, func(tx *redis.Tx) error {
				n, err := tx.Get(ctx, "rc:watch").Int()
				if err != nil && !errors.Is(err, redis.Nil) {
					return err
				}
				_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Set(ctx, "rc:watch", n+1, 0)
					return nil
				})
				return err
			}, "rc:watch")
			if !errors.Is(err, redis.TxFailedErr) {
				return err
			}
		}
	}
	errs := make(chan error, workers)
	for range workers {
		go func() {
			for range each {
				if err := incr(); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatalf("go-redis Watch: %v", err)
		}
	}
	if n, _ := rc.Get(ctx, "rc:watch").Int(); n != workers*each {
		t.Errorf("go-redis Watch: counter %d, want %d", n, workers*each)
	}

	// PubSub and sharded PubSub: a message each, received in order.
	for _, sharded := range []bool{false, true} {
		var ps *redis.PubSub
		if sharded {
			ps = rc.SSubscribe(ctx, "rc:sch")
		} else {
			ps = rc.Subscribe(ctx, "rc:ch")
		}
		if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
			t.Fatalf("go-redis subscribe (sharded %v): %v", sharded, err)
		}
		for i := range 3 {
			var n int64
			if sharded {
				n = rc.SPublish(ctx, "rc:sch", fmt.Sprint("m", i)).Val()
			} else {
				n = rc.Publish(ctx, "rc:ch", fmt.Sprint("m", i)).Val()
			}
			if n != 1 {
				t.Fatalf("go-redis publish (sharded %v): %d receivers", sharded, n)
			}
		}
		for i := range 3 {
			m, err := ps.ReceiveMessage(ctx)
			if err != nil || m.Payload != fmt.Sprint("m", i) {
				t.Fatalf("go-redis message %d (sharded %v): %v %v", i, sharded, m, err)
			}
		}
		ps.Close()
	}

	// Script.Run: EVALSHA, then EVAL when the script is not loaded.
	script := redis.NewScript(`return redis.call('INCRBY', KEYS[1], ARGV[1])`)
	rc.ScriptFlush(ctx)
	for i, want := range []int64{5, 10} {
		if n, err := script.Run(ctx, rc, []string{"rc:lua"}, 5).Int64(); err != nil || n != want {
			t.Fatalf("go-redis Script.Run %d: %d %v", i, n, err)
		}
	}

	// BLPOP: a timeout gives redis.Nil; a push from another client wakes it.
	if err := rc.BLPop(ctx, time.Second, "rc:list").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("go-redis BLPOP timeout: %v", err)
	}
	popped := make(chan []string, 1)
	go func() { popped <- rc.BLPop(ctx, 0, "rc:list").Val() }()
	other := redis.NewClient(&redis.Options{
		Addr:   addr,
		Dialer: func(ctx context.Context, _, addr string) (net.Conn, error) { return dial(ctx, addr) },
	})
	defer other.Close()
	// Push once the pop is blocked, so that it is the push that wakes it.
	for !strings.Contains(other.Info(ctx, "clients").Val(), "blocked_clients:1\r\n") {
		time.Sleep(time.Millisecond)
	}
	other.RPush(ctx, "rc:list", "v")
	if got := <-popped; len(got) != 2 || got[1] != "v" {
		t.Fatalf("go-redis BLPOP woken: %q", got)
	}

	// XReadGroup: a consumer group's delivery, pending and ack.
	rc.XAdd(ctx, &redis.XAddArgs{Stream: "rc:st", ID: "1-1", Values: []string{"f", "v"}})
	if err := rc.XGroupCreate(ctx, "rc:st", "g", "0").Err(); err != nil {
		t.Fatalf("go-redis XGroupCreate: %v", err)
	}
	streams, err := rc.XReadGroup(ctx, &redis.XReadGroupArgs{Group: "g", Consumer: "c", Streams: []string{"rc:st", ">"}, Count: 10}).Result()
	if err != nil || len(streams) != 1 || len(streams[0].Messages) != 1 || streams[0].Messages[0].ID != "1-1" {
		t.Fatalf("go-redis XReadGroup: %v %v", streams, err)
	}
	if p := rc.XPending(ctx, "rc:st", "g").Val(); p == nil || p.Count != 1 {
		t.Fatalf("go-redis XPending: %v", p)
	}
	if n := rc.XAck(ctx, "rc:st", "g", "1-1").Val(); n != 1 {
		t.Fatalf("go-redis XAck: %d", n)
	}

	// valkey-go with its defaults: client-side caching (CLIENT TRACKING),
	// invalidated by another client's write.
	vc, err := valkey.NewClient(valkey.ClientOption{
		InitAddress: []string{addr}, DisableRetry: true,
		DialCtxFn: func(ctx context.Context, addr string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return dial(ctx, addr)
		},
	})
	if err != nil {
		t.Fatalf("valkey-go NewClient: %v", err)
	}
	defer vc.Close()
	rc.Set(ctx, "rc:cached", "v1", 0)
	get := func() string {
		s, _ := vc.DoCache(ctx, vc.B().Get().Key("rc:cached").Cache(), time.Minute).ToString()
		return s
	}
	if got := get(); got != "v1" {
		t.Fatalf("valkey-go DoCache: %q", got)
	}
	rc.Set(ctx, "rc:cached", "v2", 0)
	for get() != "v2" { // the invalidation comes as a push: an event, not a time
		time.Sleep(time.Millisecond)
	}
	// DoMulti inside MULTI/EXEC.
	res := vc.DoMulti(ctx, vc.B().Multi().Build(), vc.B().Set().Key("rc:vm").Value("1").Build(),
		vc.B().Incr().Key("rc:vm").Build(), vc.B().Exec().Build())
	if arr, err := res[3].ToArray(); err != nil || len(arr) != 2 {
		t.Fatalf("valkey-go DoMulti MULTI/EXEC: %v %v", arr, err)
	} else if n, _ := arr[1].AsInt64(); n != 2 {
		t.Fatalf("valkey-go DoMulti INCR in EXEC: %d", n)
	}
	// Receive.
	got := make(chan string, 1)
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	subscribed := make(chan struct{})
	go vc.Receive(rctx, vc.B().Subscribe().Channel("rc:vch").Build(), func(m valkey.PubSubMessage) {
		select {
		case got <- m.Message:
		default:
		}
		cancel()
	})
	go func() {
		for rctx.Err() == nil {
			if n, _ := vc.Do(ctx, vc.B().Publish().Channel("rc:vch").Message("hi").Build()).AsInt64(); n > 0 {
				close(subscribed)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	if m := <-got; m != "hi" {
		t.Fatalf("valkey-go Receive: %q", m)
	}
	<-subscribed
}
