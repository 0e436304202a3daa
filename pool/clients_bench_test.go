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

// The client benchmarks compare, against one valkey-server, a client on
// its own dialer with the same client through a Dialer (policy TCP), one
// sub-benchmark per TCP engine. The two sides run interleaved in short
// blocks: each iteration of the benchmark is a round of one block per
// side, in an order that alternates from round to round, and each round
// gives the ratio of the Dialer's side to the client's own. The metrics
// are the medians of those per-round ratios (run with -benchtime=10x or
// more for 10 rounds):
//
//   - serial: one GET at a time; p50-x and p90-x are the ratios of the
//     latency quantiles (below 1 is faster), own-p50-µs and own-p90-µs
//     the client's own;
//   - parallel50: 50 goroutines doing GETs; pipeline100: 100-command
//     pipelines; tput-x is the ratio of throughputs (above 1 is faster),
//     own-req/s the client's own;
//
// and own-allocs/req and allocs/req, the medians over rounds of each
// side's heap allocations per request (runtime.MemStats.Mallocs): the
// Dialer adds allocs/req - own-allocs/req. The engine=control rows compare
// the client on its own dialer with a second client on its own dialer: how
// far from 1 the ratios stray with no difference between the sides.

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

// compare runs own and the Dialer's side in interleaved rounds, one per
// benchmark iteration, and reports the medians of the per-round ratios.
func compare(b *testing.B, n int, serial bool, own, dialer benchSide) {
	var lat []time.Duration
	if serial {
		lat = make([]time.Duration, n)
	}
	sides := []benchSide{own, dialer}
	for _, s := range sides { // warm up: connections open, buffers grown
		runBlock(s, n/4, lat)
	}
	m := map[string][]float64{}
	add := func(k string, v float64) { m[k] = append(m[k], v) }
	var res [2]benchBlock
	round := 0
	b.ReportAllocs()
	for b.Loop() {
		for j := range sides {
			i := j
			if round%2 == 1 {
				i = 1 - j
			}
			res[i] = runBlock(sides[i], n, lat)
		}
		round++
		o, d := res[0], res[1]
		add("own-allocs/req", o.allocs)
		add("allocs/req", d.allocs)
		if serial {
			add("p50-x", float64(d.p50)/float64(o.p50))
			add("p90-x", float64(d.p90)/float64(o.p90))
			add("own-p50-µs", float64(o.p50)/1e3)
			add("own-p90-µs", float64(o.p90)/1e3)
		} else {
			add("tput-x", d.tput/o.tput)
			add("own-req/s", o.tput)
		}
	}
	for k, v := range m {
		b.ReportMetric(median(v), k)
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// benchDialers returns a Dialer (policy TCP) on each engine of
// testEngines, in order.
func benchDialers(b *testing.B) []*Dialer {
	var ds []*Dialer
	for _, e := range testEngines {
		d := &Dialer{Options: Options{Policy: TCPOnly, TCPEngine: e}}
		b.Cleanup(func() { d.Close() })
		ds = append(ds, d)
	}
	return ds
}

// benchSides names the sides of a client benchmark: the client's own
// dialer, one per engine (dial gives the engine's Dialer's method), and
// the control.
func benchSides[F any](ds []*Dialer, dial func(*Dialer) F) []struct {
	name string
	dial F
} {
	type side = struct {
		name string
		dial F
	}
	var zero F
	sides := []side{{"own", zero}}
	for i, d := range ds {
		sides = append(sides, side{testEngines[i].String(), dial(d)})
	}
	return append(sides, side{"control", zero})
}

// serial runs f n times, one after the other, and records each latency.
func serial(f func()) func(int, []time.Duration) {
	return func(n int, lat []time.Duration) {
		for i := range n {
			t := time.Now()
			f()
			lat[i] = time.Since(t)
		}
	}
}

// parallel runs f n times over benchParallel goroutines.
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
	for _, c := range benchSides(ds, func(d *Dialer) func(context.Context, string, string) (net.Conn, error) { return d.DialContext }) {
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
	workloads := []struct {
		name   string
		n      int
		serial bool
		run    func(rdb *redis.Client) func(int, []time.Duration)
	}{
		{"serial", benchSerialBlock, true, func(rdb *redis.Client) func(int, []time.Duration) {
			return serial(func() { get(rdb) })
		}},
		{"parallel50", benchParallelBlock, false, func(rdb *redis.Client) func(int, []time.Duration) {
			return func(n int, _ []time.Duration) { parallel(n, func() { get(rdb) }) }
		}},
		{"pipeline100", benchPipelineBlock * benchPipeline, false, func(rdb *redis.Client) func(int, []time.Duration) {
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
		}},
	}
	for _, w := range workloads {
		for _, c := range clients[1:] {
			b.Run(w.name+"/engine="+c.name, func(b *testing.B) {
				compare(b, w.n, w.serial, benchSide{"own", w.run(clients[0].rdb)}, benchSide{c.name, w.run(c.rdb)})
			})
		}
	}
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
	for _, c := range benchSides(ds, func(d *Dialer) func(context.Context, string, *net.Dialer, *tls.Config) (net.Conn, error) {
		return d.DialValkey
	}) {
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
	get := func(c client) {
		if err := c.vk.Do(ctx, c.get).Error(); err != nil {
			b.Error(err)
		}
	}
	workloads := []struct {
		name   string
		n      int
		serial bool
		run    func(c client) func(int, []time.Duration)
	}{
		{"serial", benchSerialBlock, true, func(c client) func(int, []time.Duration) {
			return serial(func() { get(c) })
		}},
		{"parallel50", benchParallelBlock, false, func(c client) func(int, []time.Duration) {
			return func(n int, _ []time.Duration) { parallel(n, func() { get(c) }) }
		}},
		{"pipeline100", benchPipelineBlock * benchPipeline, false, func(c client) func(int, []time.Duration) {
			return func(n int, _ []time.Duration) {
				for range n / benchPipeline {
					for _, r := range c.vk.DoMulti(ctx, c.gets...) {
						if err := r.Error(); err != nil {
							b.Error(err)
						}
					}
				}
			}
		}},
	}
	for _, w := range workloads {
		for _, c := range clients[1:] {
			b.Run(w.name+"/engine="+c.name, func(b *testing.B) {
				compare(b, w.n, w.serial, benchSide{"own", w.run(clients[0])}, benchSide{c.name, w.run(c)})
			})
		}
	}
}
