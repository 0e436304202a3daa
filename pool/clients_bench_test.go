package pool

import (
	"context"
	"crypto/tls"
	"net"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"
)

// The client benchmarks compare, against one valkey-server in the same
// process run, a client on its own dialer with the same client through a
// Dialer on each TCP engine (policy TCP). The sides run interleaved in
// short blocks: each iteration of the benchmark is a round of one block
// per side, in an order that alternates from round to round, and each
// round gives the ratio of each Dialer side to the client's own. The
// metrics are the medians of those per-round ratios (run with
// -benchtime=10x or more for 10 rounds):
//
//   - serial: one GET at a time; <engine>-p50-x and <engine>-p90-x are the
//     ratios of the latency quantiles (below 1 is faster);
//   - parallel: 50 goroutines doing GETs; pipeline: 100-command
//     pipelines; <engine>-tput-x is the ratio of throughputs (above 1 is
//     faster);
//
// and <side>-allocs/req, the median over rounds of each side's heap
// allocations per request (runtime.MemStats.Mallocs), so that the
// allocations the Dialer adds are <engine>-allocs/req - own-allocs/req.

const (
	benchSerialBlock   = 2000 // GETs per side per round
	benchParallel      = 50   // goroutines
	benchParallelBlock = 10000
	benchPipeline      = 100 // commands per pipeline
	benchPipelineBlock = 100 // pipelines per side per round
)

// benchSide is one side of a comparison: run does n requests of the
// workload and returns their latencies if it measures each.
type benchSide struct {
	name string
	run  func(n int, lat []time.Duration)
}

type benchBlock struct {
	p50, p90 time.Duration
	tput     float64 // requests/s
	allocs   float64 // per request
}

func runBlock(s benchSide, n int, lat []time.Duration) benchBlock {
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	start := time.Now()
	s.run(n, lat)
	el := time.Since(start)
	runtime.ReadMemStats(&m1)
	r := benchBlock{tput: float64(n) / el.Seconds(), allocs: float64(m1.Mallocs-m0.Mallocs) / float64(n)}
	if lat != nil {
		slices.Sort(lat[:n])
		r.p50, r.p90 = lat[n/2], lat[n*9/10]
	}
	return r
}

// compare runs the sides (the first is the client's own) in interleaved
// rounds, one per benchmark iteration, and reports the medians of the
// per-round ratios.
func compare(b *testing.B, n int, serial bool, sides []benchSide) {
	var lat []time.Duration
	if serial {
		lat = make([]time.Duration, n)
	}
	for _, s := range sides { // warm up: connections open, buffers grown
		runBlock(s, n/4, lat)
	}
	ratios := map[string][]float64{}
	allocs := map[string][]float64{}
	order := make([]int, len(sides))
	res := make([]benchBlock, len(sides))
	round := 0
	b.ReportAllocs()
	for b.Loop() {
		for i := range order {
			order[i] = i
		}
		if round%2 == 1 {
			slices.Reverse(order)
		}
		round++
		for _, i := range order {
			res[i] = runBlock(sides[i], n, lat)
		}
		own := res[0]
		allocs[sides[0].name] = append(allocs[sides[0].name], own.allocs)
		for i, s := range sides[1:] {
			r := res[i+1]
			allocs[s.name] = append(allocs[s.name], r.allocs)
			if serial {
				ratios[s.name+"-p50-x"] = append(ratios[s.name+"-p50-x"], float64(r.p50)/float64(own.p50))
				ratios[s.name+"-p90-x"] = append(ratios[s.name+"-p90-x"], float64(r.p90)/float64(own.p90))
			} else {
				ratios[s.name+"-tput-x"] = append(ratios[s.name+"-tput-x"], r.tput/own.tput)
			}
		}
		if serial {
			ratios["own-p50-µs"] = append(ratios["own-p50-µs"], float64(own.p50)/1e3)
			ratios["own-p90-µs"] = append(ratios["own-p90-µs"], float64(own.p90)/1e3)
		} else {
			ratios["own-req/s"] = append(ratios["own-req/s"], own.tput)
		}
	}
	for k, v := range ratios {
		b.ReportMetric(median(v), k)
	}
	for k, v := range allocs {
		b.ReportMetric(median(v), k+"-allocs/req")
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchDialers returns a Dialer (policy TCP) on each engine.
func benchDialers(b *testing.B) map[TCPEngine]*Dialer {
	m := map[TCPEngine]*Dialer{}
	for _, e := range []TCPEngine{TCPNetpoll, TCPGnet} {
		d := &Dialer{Options: Options{Policy: TCPOnly, TCPEngine: e}}
		b.Cleanup(func() { d.Close() })
		m[e] = d
	}
	return m
}

func parallel(n int, f func()) {
	var wg sync.WaitGroup
	for g := range benchParallel {
		k := n / benchParallel
		if g < n%benchParallel {
			k++
		}
		wg.Go(func() {
			for range k {
				f()
			}
		})
	}
	wg.Wait()
}

// BenchmarkClientGoRedis: go-redis (PoolSize 50) on its own dialer, then
// through a Dialer on each TCP engine.
func BenchmarkClientGoRedis(b *testing.B) {
	tg := valkeyServer(b)
	ds := benchDialers(b)
	ctx := context.Background()
	type client struct {
		name string
		rdb  *redis.Client
	}
	var clients []client
	for _, c := range []struct {
		name string
		dial func(context.Context, string, string) (net.Conn, error)
	}{{"own", nil}, {"netpoll", ds[TCPNetpoll].DialContext}, {"gnet", ds[TCPGnet].DialContext}} {
		rdb := redis.NewClient(&redis.Options{Addr: tg.tcp, Dialer: c.dial, PoolSize: benchParallel})
		b.Cleanup(func() { rdb.Close() })
		clients = append(clients, client{c.name, rdb})
	}
	if err := clients[0].rdb.Set(ctx, "k", "0123456789abcdef", 0).Err(); err != nil {
		b.Fatal(err)
	}
	get := func(rdb *redis.Client) {
		if err := rdb.Get(ctx, "k").Err(); err != nil {
			b.Error(err)
		}
	}
	sides := func(f func(rdb *redis.Client) func(int, []time.Duration)) []benchSide {
		var s []benchSide
		for _, c := range clients {
			s = append(s, benchSide{c.name, f(c.rdb)})
		}
		return s
	}
	b.Run("serial", func(b *testing.B) {
		compare(b, benchSerialBlock, true, sides(func(rdb *redis.Client) func(int, []time.Duration) {
			return func(n int, lat []time.Duration) {
				for i := range n {
					t := time.Now()
					get(rdb)
					lat[i] = time.Since(t)
				}
			}
		}))
	})
	b.Run("parallel50", func(b *testing.B) {
		compare(b, benchParallelBlock, false, sides(func(rdb *redis.Client) func(int, []time.Duration) {
			return func(n int, _ []time.Duration) { parallel(n, func() { get(rdb) }) }
		}))
	})
	b.Run("pipeline100", func(b *testing.B) {
		compare(b, benchPipelineBlock*benchPipeline, false, sides(func(rdb *redis.Client) func(int, []time.Duration) {
			return func(n int, _ []time.Duration) {
				for range n / benchPipeline {
					_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
						for range benchPipeline {
							p.Get(ctx, "k")
						}
						return nil
					})
					if err != nil {
						b.Error(err)
					}
				}
			}
		}))
	})
}

// BenchmarkClientValkeyGo: valkey-go on its own dialer, then through a
// Dialer on each TCP engine.
func BenchmarkClientValkeyGo(b *testing.B) {
	tg := valkeyServer(b)
	ds := benchDialers(b)
	ctx := context.Background()
	type client struct {
		name string
		vk   valkey.Client
		get  valkey.Completed
		gets valkey.Commands
	}
	var clients []client
	for _, c := range []struct {
		name string
		dial func(context.Context, string, *net.Dialer, *tls.Config) (net.Conn, error)
	}{{"own", nil}, {"netpoll", ds[TCPNetpoll].DialValkey}, {"gnet", ds[TCPGnet].DialValkey}} {
		vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{tg.tcp}, DialCtxFn: c.dial, DisableCache: true})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(vk.Close)
		get := vk.B().Get().Key("k").Build().Pin()
		gets := make(valkey.Commands, benchPipeline)
		for i := range gets {
			gets[i] = get
		}
		clients = append(clients, client{c.name, vk, get, gets})
	}
	if err := clients[0].vk.Do(ctx, clients[0].vk.B().Set().Key("k").Value("0123456789abcdef").Build()).Error(); err != nil {
		b.Fatal(err)
	}
	sides := func(f func(c client) func(int, []time.Duration)) []benchSide {
		var s []benchSide
		for _, c := range clients {
			s = append(s, benchSide{c.name, f(c)})
		}
		return s
	}
	get := func(c client) {
		if err := c.vk.Do(ctx, c.get).Error(); err != nil {
			b.Error(err)
		}
	}
	b.Run("serial", func(b *testing.B) {
		compare(b, benchSerialBlock, true, sides(func(c client) func(int, []time.Duration) {
			return func(n int, lat []time.Duration) {
				for i := range n {
					t := time.Now()
					get(c)
					lat[i] = time.Since(t)
				}
			}
		}))
	})
	b.Run("parallel50", func(b *testing.B) {
		compare(b, benchParallelBlock, false, sides(func(c client) func(int, []time.Duration) {
			return func(n int, _ []time.Duration) { parallel(n, func() { get(c) }) }
		}))
	})
	b.Run("pipeline100", func(b *testing.B) {
		compare(b, benchPipelineBlock*benchPipeline, false, sides(func(c client) func(int, []time.Duration) {
			return func(n int, _ []time.Duration) {
				for range n / benchPipeline {
					for _, r := range c.vk.DoMulti(ctx, c.gets...) {
						if err := r.Error(); err != nil {
							b.Error(err)
						}
					}
				}
			}
		}))
	})
}
