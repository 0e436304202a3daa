package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/valkey-io/valkey-go"
)

// Tests with the clients rdmapool serves: go-redis v9 and valkey-go, in
// RESP2 and RESP3.

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func goRedis(t *testing.T, addr string, protocol int, opts ...func(*redis.Options)) *redis.Client {
	o := &redis.Options{Addr: addr, Protocol: protocol, MaxRetries: -1}
	for _, f := range opts {
		f(o)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { c.Close() })
	return c
}

func TestGoRedis(t *testing.T) {
	for _, protocol := range []int{2, 3} {
		t.Run(fmt.Sprint("RESP", protocol), func(t *testing.T) {
			_, addr := startServer(t, nil)
			ctx := ctxT(t)
			c := goRedis(t, addr, protocol, func(o *redis.Options) { o.ClientName = "tester" })
			check := func(what string, got, want any) {
				t.Helper()
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s: got %v, want %v", what, got, want)
				}
			}
			check("ping", c.Ping(ctx).Val(), "PONG")
			check("echo", c.Echo(ctx, "hi").Val(), "hi")
			check("client getname", c.ClientGetName(ctx).Val(), "tester")
			check("set", c.Set(ctx, "k", "v", 0).Val(), "OK")
			check("get", c.Get(ctx, "k").Val(), "v")
			_, err := c.Get(ctx, "missing").Result()
			check("get missing", err, redis.Nil)
			check("set nx", c.SetNX(ctx, "k", "w", 0).Val(), false)
			check("set xx", c.SetXX(ctx, "k", "w", time.Minute).Val(), true)
			check("ttl", c.TTL(ctx, "k").Val(), time.Minute)
			check("set get", c.SetArgs(ctx, "k", "x", redis.SetArgs{Get: true, KeepTTL: true}).Val(), "w")
			check("pttl kept", c.PTTL(ctx, "k").Val() > 59*time.Second, true)
			check("exists", c.Exists(ctx, "k", "missing").Val(), 1)
			check("incr", c.Incr(ctx, "n").Val(), 1)
			check("incrby", c.IncrBy(ctx, "n", 41).Val(), 42)
			check("decr", c.Decr(ctx, "n").Val(), 41)
			check("mset", c.MSet(ctx, "a", "1", "b", "2").Val(), "OK")
			check("mget", c.MGet(ctx, "a", "nokey", "b").Val(), []any{"1", nil, "2"})
			check("lpush", c.LPush(ctx, "l", "a", "b").Val(), 2)
			check("rpush", c.RPush(ctx, "l", "c").Val(), 3)
			check("lrange", c.LRange(ctx, "l", 0, -1).Val(), []string{"b", "a", "c"})
			check("llen", c.LLen(ctx, "l").Val(), 3)
			check("lpop", c.LPop(ctx, "l").Val(), "b")
			check("rpopcount", c.RPopCount(ctx, "l", 5).Val(), []string{"c", "a"})
			check("sadd", c.SAdd(ctx, "s", "x", "y").Val(), 2)
			check("smembers", len(c.SMembers(ctx, "s").Val()), 2)
			check("scard", c.SCard(ctx, "s").Val(), 2)
			check("spop", len(c.SPop(ctx, "s").Val()), 1)
			check("hset", c.HSet(ctx, "h", "f1", "v1", "f2", "v2").Val(), 2)
			check("hget", c.HGet(ctx, "h", "f1").Val(), "v1")
			check("hlen", c.HLen(ctx, "h").Val(), 2)
			check("hgetall", c.HGetAll(ctx, "h").Val(), map[string]string{"f1": "v1", "f2": "v2"})
			check("zadd", c.ZAdd(ctx, "z", redis.Z{Score: 1.5, Member: "a"}, redis.Z{Score: 1, Member: "b"}).Val(), 2)
			check("zscore", c.ZScore(ctx, "z", "a").Val(), 1.5)
			check("zcard", c.ZCard(ctx, "z").Val(), 2)
			check("zcard missing", c.ZCard(ctx, "nokey").Val(), 0)
			check("zrange", c.ZRangeWithScores(ctx, "z", 0, -1).Val(), []redis.Z{{Score: 1, Member: "b"}, {Score: 1.5, Member: "a"}})
			check("zpopmin", c.ZPopMin(ctx, "z").Val(), []redis.Z{{Score: 1, Member: "b"}})
			check("zpopmin 2", c.ZPopMin(ctx, "z", 2).Val(), []redis.Z{{Score: 1.5, Member: "a"}})
			id := c.XAdd(ctx, &redis.XAddArgs{Stream: "st", Values: []string{"f", "v"}}).Val()
			check("xadd id", strings.Contains(id, "-"), true)
			check("xlen", c.XLen(ctx, "st").Val(), 1)
			check("type", c.Type(ctx, "h").Val(), "hash")
			check("expire", c.Expire(ctx, "h", time.Hour).Val(), true)
			check("config get", c.ConfigGet(ctx, "save").Val(), map[string]string{"save": ""})
			check("info", strings.Contains(c.Info(ctx).Val(), "# Keyspace"), true)
			check("dbsize", c.DBSize(ctx).Val(), 7) // k n a b s h st; l and z were emptied

			err = c.LPush(ctx, "k", "x").Err()
			check("wrongtype", err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE"), true)
			err = c.SCard(ctx, "k").Err()
			check("scard wrongtype", err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE"), true)
			err = c.Do(ctx, "nosuch", "a").Err()
			check("unknown", err, "ERR unknown command 'nosuch', with args beginning with: 'a' ")
			err = c.Do(ctx, "get").Err()
			check("arity", err, "ERR wrong number of arguments for 'get' command")

			check("flushall", c.FlushAll(ctx).Val(), "OK")
			check("dbsize", c.DBSize(ctx).Val(), 0)
		})
	}
}

func TestGoRedisPipelineAndLargeValues(t *testing.T) {
	for _, protocol := range []int{2, 3} {
		t.Run(fmt.Sprint("RESP", protocol), func(t *testing.T) {
			_, addr := startServer(t, nil)
			ctx := ctxT(t)
			c := goRedis(t, addr, protocol)

			pipe := c.Pipeline()
			for i := range 1000 {
				pipe.Set(ctx, fmt.Sprint("key", i), i, 0)
			}
			gets := make([]*redis.StringCmd, 1000)
			for i := range 1000 {
				gets[i] = pipe.Get(ctx, fmt.Sprint("key", i))
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			for i, g := range gets {
				if g.Val() != strconv.Itoa(i) {
					t.Fatalf("GET key%d in a pipeline: %q", i, g.Val())
				}
			}

			for _, n := range []int{1 << 20, 3<<20 + 1} {
				v := strings.Repeat("x", n-1) + "y"
				if err := c.Set(ctx, "big", v, 0).Err(); err != nil {
					t.Fatal(err)
				}
				if got := c.Get(ctx, "big").Val(); got != v {
					t.Fatalf("GET of %d bytes: got %d bytes", n, len(got))
				}
			}
			// Large values in a pipeline, with small ones between them.
			pipe = c.Pipeline()
			for i := range 8 {
				pipe.Set(ctx, fmt.Sprint("big", i), strings.Repeat(string(rune('a'+i)), 1<<20), 0)
				pipe.Ping(ctx)
			}
			bigs := make([]*redis.StringCmd, 8)
			for i := range 8 {
				bigs[i] = pipe.Get(ctx, fmt.Sprint("big", i))
			}
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
			for i, g := range bigs {
				if g.Val() != strings.Repeat(string(rune('a'+i)), 1<<20) {
					t.Errorf("big%d: %d bytes", i, len(g.Val()))
				}
			}
		})
	}
}

func TestGoRedisPassword(t *testing.T) {
	_, addr := startServer(t, &Options{Password: "pw"})
	ctx := ctxT(t)
	for _, protocol := range []int{2, 3} {
		ok := goRedis(t, addr, protocol, func(o *redis.Options) { o.Password = "pw" })
		if err := ok.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Errorf("RESP%d with the password: %v", protocol, err)
		}
		bad := goRedis(t, addr, protocol, func(o *redis.Options) { o.Password = "wrong" })
		if err := bad.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("RESP%d with a wrong password: %v", protocol, err)
		}
		none := goRedis(t, addr, protocol)
		if err := none.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
			t.Errorf("RESP%d without a password: %v", protocol, err)
		}
	}
}

func valkeyGo(t *testing.T, addr string, resp2 bool) valkey.Client {
	c, err := valkey.NewClient(valkey.ClientOption{
		InitAddress: []string{addr},
		// Client-side caching is TestTrackingValkeyGo's.
		DisableCache: true,
		AlwaysRESP2:  resp2,
		DisableRetry: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestValkeyGo(t *testing.T) {
	for _, resp2 := range []bool{false, true} {
		t.Run(fmt.Sprint("RESP2=", resp2), func(t *testing.T) {
			_, addr := startServer(t, nil)
			ctx := ctxT(t)
			c := valkeyGo(t, addr, resp2)
			b := c.B()
			str := func(cmd valkey.Completed) string {
				t.Helper()
				s, err := c.Do(ctx, cmd).ToString()
				if err != nil {
					t.Errorf("%v: %v", cmd.Commands(), err)
				}
				return s
			}
			if got := str(b.Ping().Build()); got != "PONG" {
				t.Errorf("PING: %q", got)
			}
			str(b.Set().Key("k").Value("v").ExSeconds(100).Build())
			if got := str(b.Get().Key("k").Build()); got != "v" {
				t.Errorf("GET: %q", got)
			}
			if err := c.Do(ctx, b.Get().Key("missing").Build()).Error(); !valkey.IsValkeyNil(err) {
				t.Errorf("GET missing: %v", err)
			}
			if n, _ := c.Do(ctx, b.Incrby().Key("n").Increment(5).Build()).AsInt64(); n != 5 {
				t.Errorf("INCRBY: %d", n)
			}
			c.Do(ctx, b.Hset().Key("h").FieldValue().FieldValue("f", "v").FieldValue("g", "w").Build())
			if m, err := c.Do(ctx, b.Hgetall().Key("h").Build()).AsStrMap(); err != nil || m["f"] != "v" || m["g"] != "w" {
				t.Errorf("HGETALL: %v %v", m, err)
			}
			c.Do(ctx, b.Zadd().Key("z").ScoreMember().ScoreMember(2.5, "m").Build())
			if f, err := c.Do(ctx, b.Zscore().Key("z").Member("m").Build()).AsFloat64(); err != nil || f != 2.5 {
				t.Errorf("ZSCORE: %v %v", f, err)
			}
			if l, err := c.Do(ctx, b.Mget().Key("k", "missing").Build()).ToArray(); err != nil || len(l) != 2 {
				t.Errorf("MGET: %v %v", l, err)
			}
			err := c.Do(ctx, b.Lpush().Key("k").Element("x").Build()).Error()
			if err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
				t.Errorf("LPUSH on a string: %v", err)
			}
			err = c.Do(ctx, b.Arbitrary("NOSUCH").Args("x").Build()).Error()
			if err == nil || !strings.HasSuffix(err.Error(), "unknown command 'NOSUCH', with args beginning with: 'x' ") {
				t.Errorf("unknown command: %v", err)
			}

			cmds := make(valkey.Commands, 0, 1000)
			for i := range 500 {
				cmds = append(cmds, b.Set().Key(fmt.Sprint("p", i)).Value(strconv.Itoa(i)).Build())
				cmds = append(cmds, b.Get().Key(fmt.Sprint("p", i)).Build())
			}
			for i, r := range c.DoMulti(ctx, cmds...) {
				s, err := r.ToString()
				if err != nil || i%2 == 1 && s != strconv.Itoa(i/2) {
					t.Fatalf("pipelined reply %d: %q %v", i, s, err)
				}
			}

			big := strings.Repeat("0123456789abcdef", 1<<16) + "!" // 1 MiB + 1
			str(b.Set().Key("big").Value(big).Build())
			if got := str(b.Get().Key("big").Build()); got != big {
				t.Errorf("GET big: %d bytes", len(got))
			}
		})
	}
}

// TestConcurrentClients: many clients at once, on shared and own keys (run
// it with -race).
func TestConcurrentClients(t *testing.T) {
	srv, addr := startServer(t, nil)
	ctx := ctxT(t)
	const clients, rounds = 16, 200
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2 + i%2, PoolSize: 2})
			defer c.Close()
			own := fmt.Sprint("own", i)
			for r := range rounds {
				c.Incr(ctx, "shared")
				c.RPush(ctx, "list", r)
				c.HSet(ctx, "hash", fmt.Sprint(i, ":", r), r)
				if err := c.Set(ctx, own, r, 0).Err(); err != nil {
					t.Error(err)
					return
				}
				if got := c.Get(ctx, own).Val(); got != strconv.Itoa(r) {
					t.Errorf("client %d: GET %q, want %d", i, got, r)
					return
				}
				if r%50 == 0 {
					pipe := c.Pipeline()
					for range 100 {
						pipe.Incr(ctx, "piped")
					}
					if _, err := pipe.Exec(ctx); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	c := goRedis(t, addr, 3)
	if n := c.Get(ctx, "shared").Val(); n != strconv.Itoa(clients*rounds) {
		t.Errorf("shared counter %s, want %d", n, clients*rounds)
	}
	if n := c.Get(ctx, "piped").Val(); n != strconv.Itoa(clients*4*100) {
		t.Errorf("piped counter %s, want %d", n, clients*4*100)
	}
	if n := c.LLen(ctx, "list").Val(); n != clients*rounds {
		t.Errorf("list length %d", n)
	}
	if n := c.HLen(ctx, "hash").Val(); n != clients*rounds {
		t.Errorf("hash length %d", n)
	}
	if st := srv.Stats(); st.TotalConnections < clients || st.Commands < clients*rounds*5 {
		t.Errorf("stats %+v", st)
	}
}
