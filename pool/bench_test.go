package pool

import (
	"context"
	"crypto/tls"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"
)

// BenchmarkValkeyGo compares, against one valkey-server, valkey-go on its
// own connections and valkey-go on rdmapool's gnet TCP connections
// (DialValkey, policy TCP): a serial PING round trip, and pipelined
// throughput (parallel callers, which valkey-go pipelines).
func BenchmarkValkeyGo(b *testing.B) {
	tg := valkeyServer(b)
	d := &Dialer{Options: Options{Policy: TCPOnly}}
	defer d.Close()
	clients := []struct {
		name string
		dial func(context.Context, string, *net.Dialer, *tls.Config) (net.Conn, error)
	}{{"conn=valkey-go", nil}, {"conn=rdmapool-tcp", d.DialValkey}}
	for _, cl := range clients {
		vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{tg.tcp}, DialCtxFn: cl.dial, DisableCache: true})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		ping := vk.B().Ping().Build().Pin()
		b.Run("serial/"+cl.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := vk.Do(ctx, ping).Error(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("pipelined/"+cl.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := vk.Do(ctx, ping).Error(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		vk.Close()
	}
}

// BenchmarkGoRedis compares, against one valkey-server, go-redis on its
// own connections and go-redis on rdmapool's gnet TCP connections
// (Dialer.DialContext, policy TCP): a serial PING round trip, and a
// pipeline of 16 PINGs per op.
func BenchmarkGoRedis(b *testing.B) {
	tg := valkeyServer(b)
	d := &Dialer{Options: Options{Policy: TCPOnly}}
	defer d.Close()
	clients := []struct {
		name string
		dial func(context.Context, string, string) (net.Conn, error)
	}{{"conn=go-redis", nil}, {"conn=rdmapool-tcp", d.DialContext}}
	for _, cl := range clients {
		rdb := redis.NewClient(&redis.Options{Addr: tg.tcp, Dialer: cl.dial, PoolSize: 1})
		ctx := context.Background()
		b.Run("serial/"+cl.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := rdb.Ping(ctx).Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("pipeline16/"+cl.name, func(b *testing.B) {
			b.ReportAllocs()
			cmds := make([]*redis.StatusCmd, 16)
			for b.Loop() {
				_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
					for i := range cmds {
						cmds[i] = p.Ping(ctx)
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
		rdb.Close()
	}
}
