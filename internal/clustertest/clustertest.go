// Package clustertest holds the scenarios that rdmapool's tests run
// against a Valkey Cluster through a pool.Dialer, with go-redis's
// ClusterClient and valkey-go alike: reads and writes across all slots,
// pipelines that span slots, and load that records what the cluster
// acknowledged, for resharding and failover.
package clustertest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"
)

// Slots is the number of hash slots of a Valkey Cluster.
const Slots = 16384

// KeySlot is the hash slot of key: CRC16 (XMODEM) of its hash tag, the
// part between the first '{' and the next '}' if that is not empty, else of
// the whole key, modulo 16384.
func KeySlot(key string) int {
	if i := indexByte(key, '{'); i >= 0 {
		if j := indexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % Slots
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// KeyPerSlot returns Slots keys starting with prefix, the i-th of which
// hashes to slot i.
func KeyPerSlot(prefix string) []string {
	keys := make([]string, Slots)
	left := Slots
	for i := 0; left > 0; i++ {
		k := prefix + strconv.Itoa(i)
		if s := KeySlot(k); keys[s] == "" {
			keys[s] = k
			left--
		}
	}
	return keys
}

// KV is what the scenarios ask of a cluster client.
type KV interface {
	Set(ctx context.Context, key, val string) error
	Get(ctx context.Context, key string) (string, error)
	// SetWait sets key on its master and, on the same connection, runs
	// WAIT 1 timeout: it returns how many replicas acknowledged the write.
	SetWait(ctx context.Context, key, val string, timeout time.Duration) (int64, error)
	// PipeSet and PipeGet send their commands at once, whatever their
	// slots; the client splits them by node.
	PipeSet(ctx context.Context, keys, vals []string) error
	PipeGet(ctx context.Context, keys []string) ([]string, error)
}

// GoRedis is a KV of a go-redis ClusterClient.
func GoRedis(c *redis.ClusterClient) KV { return goRedis{c} }

type goRedis struct{ c *redis.ClusterClient }

func (g goRedis) Set(ctx context.Context, k, v string) error { return g.c.Set(ctx, k, v, 0).Err() }
func (g goRedis) Get(ctx context.Context, k string) (string, error) {
	return g.c.Get(ctx, k).Result()
}

func (g goRedis) SetWait(ctx context.Context, k, v string, timeout time.Duration) (int64, error) {
	node, err := g.c.MasterForKey(ctx, k)
	if err != nil {
		return 0, err
	}
	var wait *redis.Cmd
	_, err = node.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, k, v, 0)
		wait = p.Do(ctx, "wait", 1, timeout.Milliseconds())
		return nil
	})
	if err != nil {
		return 0, err
	}
	return wait.Int64()
}

func (g goRedis) PipeSet(ctx context.Context, keys, vals []string) error {
	_, err := g.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			p.Set(ctx, k, vals[i], 0)
		}
		return nil
	})
	return err
}

func (g goRedis) PipeGet(ctx context.Context, keys []string) ([]string, error) {
	cmds := make([]*redis.StringCmd, len(keys))
	_, err := g.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.Get(ctx, k)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	vals := make([]string, len(keys))
	for i, c := range cmds {
		vals[i] = c.Val()
	}
	return vals, nil
}

// Valkey is a KV of a valkey-go client of a cluster.
func Valkey(c valkey.Client) KV { return valkeyGo{c} }

type valkeyGo struct{ c valkey.Client }

func (v valkeyGo) Set(ctx context.Context, k, val string) error {
	return v.c.Do(ctx, v.c.B().Set().Key(k).Value(val).Build()).Error()
}

func (v valkeyGo) Get(ctx context.Context, k string) (string, error) {
	return v.c.Do(ctx, v.c.B().Get().Key(k).Build()).ToString()
}

func (v valkeyGo) SetWait(ctx context.Context, k, val string, timeout time.Duration) (int64, error) {
	// A keyless command in a DoMulti goes to the node of the others'
	// slot, on the same connection, after them.
	rs := v.c.DoMulti(ctx,
		v.c.B().Set().Key(k).Value(val).Build(),
		v.c.B().Wait().Numreplicas(1).Timeout(timeout.Milliseconds()).Build())
	if err := rs[0].Error(); err != nil {
		return 0, err
	}
	return rs[1].AsInt64()
}

func (v valkeyGo) PipeSet(ctx context.Context, keys, vals []string) error {
	cmds := make(valkey.Commands, len(keys))
	for i, k := range keys {
		cmds[i] = v.c.B().Set().Key(k).Value(vals[i]).Build()
	}
	for i, r := range v.c.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			return fmt.Errorf("SET %s: %w", keys[i], err)
		}
	}
	return nil
}

func (v valkeyGo) PipeGet(ctx context.Context, keys []string) ([]string, error) {
	cmds := make(valkey.Commands, len(keys))
	for i, k := range keys {
		cmds[i] = v.c.B().Get().Key(k).Build()
	}
	vals := make([]string, len(keys))
	for i, r := range v.c.DoMulti(ctx, cmds...) {
		s, err := r.ToString()
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", keys[i], err)
		}
		vals[i] = s
	}
	return vals, nil
}

// ReadWriteAllSlots sets a key in each of the 16384 slots, from a few
// goroutines, and reads each back.
func ReadWriteAllSlots(t *testing.T, kv KV, prefix string) {
	t.Helper()
	// 32768 round trips: 2 minutes over soft-RoCE under emulation.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	keys := KeyPerSlot(prefix)
	const workers = 8
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(keys); i += workers {
				val := "v" + strconv.Itoa(i)
				if err := kv.Set(ctx, keys[i], val); err != nil {
					errs <- fmt.Errorf("SET %s (slot %d): %w", keys[i], i, err)
					return
				}
				got, err := kv.Get(ctx, keys[i])
				if err != nil || got != val {
					errs <- fmt.Errorf("GET %s (slot %d) = %q, %v; want %q", keys[i], i, got, err, val)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// Pipeline sends pipelines of SETs and then GETs, each over keys of many
// slots (so of every node), and checks every answer.
func Pipeline(t *testing.T, kv KV, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	keys := KeyPerSlot(prefix)
	for off := 0; off < len(keys); off += 1000 {
		// Every 7th slot from off: 1000 keys spread over the whole range.
		var ks, vs []string
		for i := range 1000 {
			s := (off + i*7) % Slots
			ks = append(ks, keys[s])
			vs = append(vs, fmt.Sprintf("p%d-%d", off, s))
		}
		if err := kv.PipeSet(ctx, ks, vs); err != nil {
			t.Fatalf("pipelined SETs from slot %d: %v", off, err)
		}
		got, err := kv.PipeGet(ctx, ks)
		if err != nil {
			t.Fatalf("pipelined GETs from slot %d: %v", off, err)
		}
		for i := range ks {
			if got[i] != vs[i] {
				t.Fatalf("pipelined GET %s (slot %d) = %q, want %q", ks[i], KeySlot(ks[i]), got[i], vs[i])
			}
		}
	}
}

// Load is writes and reads from a few goroutines until Stop, each
// goroutine on keys of its own, recording what it wrote.
type Load struct {
	kv     KV
	stop   chan struct{}
	wg     sync.WaitGroup
	ops    atomic.Int64
	mu     sync.Mutex
	errs   []error
	last   map[string]string // key: the last value written with success
	unsure map[string]bool   // keys whose last write failed: either value
	acked  map[string]string // SetWait: keys a replica acknowledged
}

// StartLoad starts workers that write keys prefix+"w:n", for n in 0..999,
// over and over, and read each back. With wait, each write is a SetWait
// of a new key, and the keys a replica acknowledged are recorded (Acked).
func StartLoad(kv KV, prefix string, workers int, wait bool) *Load {
	l := &Load{kv: kv, stop: make(chan struct{}), last: map[string]string{}, unsure: map[string]bool{}, acked: map[string]string{}}
	for w := range workers {
		l.wg.Go(func() { l.work(fmt.Sprintf("%s%d:", prefix, w), wait) })
	}
	return l
}

func (l *Load) work(prefix string, wait bool) {
	for n := 0; ; n++ {
		select {
		case <-l.stop:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if wait {
			k := prefix + strconv.Itoa(n)
			v := "a" + strconv.Itoa(n)
			acks, err := l.kv.SetWait(ctx, k, v, time.Second)
			if err == nil && acks >= 1 {
				l.mu.Lock()
				l.acked[k] = v
				l.mu.Unlock()
			}
			l.record(err)
		} else {
			k := prefix + strconv.Itoa(n%1000)
			v := "v" + strconv.Itoa(n)
			err := l.kv.Set(ctx, k, v)
			l.mu.Lock()
			if err == nil {
				l.last[k] = v
				delete(l.unsure, k)
			} else {
				l.unsure[k] = true
			}
			l.mu.Unlock()
			if err == nil {
				var got string
				got, err = l.kv.Get(ctx, k)
				if err == nil && got != v {
					err = fmt.Errorf("GET %s = %q right after SET %q", k, got, v)
				}
			}
			l.record(err)
		}
		cancel()
	}
}

func (l *Load) record(err error) {
	l.ops.Add(1)
	if err == nil {
		return
	}
	l.mu.Lock()
	if len(l.errs) < 1000 {
		l.errs = append(l.errs, err)
	}
	l.mu.Unlock()
	time.Sleep(10 * time.Millisecond) // no busy loop on a node that is down
}

// Ops is how many operations the workers have done.
func (l *Load) Ops() int64 { return l.ops.Load() }

// Stop stops the workers and waits for them.
func (l *Load) Stop() {
	close(l.stop)
	l.wg.Wait()
}

// Errors returns the errors the workers met (1000 at most).
func (l *Load) Errors() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

// Acked returns the keys that a replica acknowledged (SetWait), with
// their values.
func (l *Load) Acked() map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	m := make(map[string]string, len(l.acked))
	for k, v := range l.acked {
		m[k] = v
	}
	return m
}

// Verify reads back every key the workers wrote (after Stop) and fails t
// for each whose value is not the last one written, or, for a key whose
// last write failed, not one of the last two; and for each acknowledged
// key (SetWait) that is missing or changed.
func (l *Load) Verify(t *testing.T, kv KV) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	bad := 0
	check := func(k, want string, sure bool) {
		// Each GET is bounded against a hang, not the whole pass: a
		// minute for thousands of reads in turn ran out on a loaded
		// 2-core host under emulation, every read after it "wrong".
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		got, err := kv.Get(ctx, k)
		if errors.Is(err, redis.Nil) || valkey.IsValkeyNil(err) {
			got, err = "(nil)", nil
		}
		if err != nil || (got != want && sure) {
			if bad++; bad <= 10 {
				t.Errorf("GET %s (slot %d) = %q, %v; want %q", k, KeySlot(k), got, err, want)
			}
		}
	}
	for k, v := range l.last {
		check(k, v, !l.unsure[k])
	}
	for k, v := range l.acked {
		check(k, v, true)
	}
	if bad > 10 {
		t.Errorf("... %d keys wrong in all", bad)
	}
}
