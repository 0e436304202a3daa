// Package benchrun is the load generator behind `rdmapool bench`: a
// valkey-benchmark-like workload of pipelined RESP commands sent by many
// clients, each on its own connection from a pool.Pool, with latencies in an
// HDR histogram and reports in valkey-benchmark's formats.
package benchrun

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// randPlaceholder is replaced, when a keyspace is given (-r), by a
// zero-padded random number of the same length, as valkey-benchmark does.
// Without a keyspace it stays in the key literally.
const randPlaceholder = "__rand_int__"

// Test is one workload: the command every request sends.
type Test struct {
	// Name is valkey-benchmark's title of the test ("SET", "MSET (10 keys)").
	Name string
	// build returns one request for a value of dataSize bytes.
	build func(data []byte) []byte
	// replyValues is how many values of dataSize bytes a reply carries at
	// most (GET and LPOP one, LRANGE_600 600), which grow the client's
	// reply buffer to hold them.
	replyValues int
}

// testSpec is one of valkey-benchmark's tests: the name -t takes, the groups
// that also select it ("ping", "lrange"), and its command, with the key of
// valkey-benchmark's (src/valkey-benchmark.c: "key:__rand_int__", "mylist",
// "myset", ...). random is whether -r was given: ZADD's score is then
// random too; cluster, whether --cluster was: each key then has ":{tag}"
// after its name ("key:{tag}:__rand_int__", "mylist:{tag}"), as
// valkey-benchmark's keys do.
type testSpec struct {
	flag   string
	groups []string
	make   func(random, cluster bool) Test
}

// tagAt marks, in a key of testOrder, where a cluster run puts ":{tag}".
const tagAt = "\x00"

func fixed(name string, replyValues int, args ...string) func(bool, bool) Test {
	return func(_, cluster bool) Test { return command(name, replyValues, cluster, args...) }
}

// command is a test that sends args, where an argument "$data" is the
// value of dataSize bytes, and tagAt is ":{tag}" with cluster, else
// nothing.
func command(name string, replyValues int, cluster bool, args ...string) Test {
	tag := ""
	if cluster {
		tag = ":" + tagPlaceholder
	}
	return Test{Name: name, replyValues: replyValues, build: func(d []byte) []byte {
		a := make([]string, len(args))
		for i, s := range args {
			if s == "$data" {
				s = string(d)
			}
			a[i] = strings.ReplaceAll(s, tagAt, tag)
		}
		return multiBulk(a...)
	}}
}

// testOrder lists every test in the order valkey-benchmark runs them.
var testOrder = []testSpec{
	{"ping_inline", []string{"ping"}, func(bool, bool) Test {
		return Test{Name: "PING_INLINE", build: func([]byte) []byte { return []byte("PING\r\n") }}
	}},
	{"ping_mbulk", []string{"ping"}, fixed("PING_MBULK", 0, "PING")},
	{"set", nil, fixed("SET", 0, "SET", "key"+tagAt+":"+randPlaceholder, "$data")},
	{"get", nil, fixed("GET", 1, "GET", "key"+tagAt+":"+randPlaceholder)},
	{"incr", nil, fixed("INCR", 0, "INCR", "counter"+tagAt+":"+randPlaceholder)},
	{"lpush", nil, fixed("LPUSH", 0, "LPUSH", "mylist"+tagAt, "$data")},
	{"rpush", nil, fixed("RPUSH", 0, "RPUSH", "mylist"+tagAt, "$data")},
	{"lpop", nil, fixed("LPOP", 1, "LPOP", "mylist"+tagAt)},
	{"rpop", nil, fixed("RPOP", 1, "RPOP", "mylist"+tagAt)},
	{"sadd", nil, fixed("SADD", 0, "SADD", "myset"+tagAt, "element:"+randPlaceholder)},
	{"hset", nil, fixed("HSET", 0, "HSET", "myhash"+tagAt, "element:"+randPlaceholder, "$data")},
	{"spop", nil, fixed("SPOP", 0, "SPOP", "myset"+tagAt)},
	{"zadd", nil, func(random, cluster bool) Test {
		score := "0"
		if random {
			score = randPlaceholder
		}
		return command("ZADD", 0, cluster, "ZADD", "myzset"+tagAt, score, "element:"+randPlaceholder)
	}},
	{"zpopmin", nil, fixed("ZPOPMIN", 0, "ZPOPMIN", "myzset"+tagAt)},
	// valkey-benchmark fills the list before the LRANGE tests, as a test
	// of its own, whichever of them is selected.
	{"", []string{"lrange", "lrange_100", "lrange_300", "lrange_500", "lrange_600"},
		fixed("LPUSH (needed to benchmark LRANGE)", 0, "LPUSH", "mylist"+tagAt, "$data")},
	{"lrange_100", []string{"lrange"}, fixed("LRANGE_100 (first 100 elements)", 100, "LRANGE", "mylist"+tagAt, "0", "99")},
	{"lrange_300", []string{"lrange"}, fixed("LRANGE_300 (first 300 elements)", 300, "LRANGE", "mylist"+tagAt, "0", "299")},
	{"lrange_500", []string{"lrange"}, fixed("LRANGE_500 (first 500 elements)", 500, "LRANGE", "mylist"+tagAt, "0", "499")},
	{"lrange_600", []string{"lrange"}, fixed("LRANGE_600 (first 600 elements)", 600, "LRANGE", "mylist"+tagAt, "0", "599")},
	{"mset", nil, func(_, cluster bool) Test {
		args := []string{"MSET"}
		for range 10 {
			args = append(args, "key"+tagAt+":"+randPlaceholder, "$data")
		}
		return command("MSET (10 keys)", 0, cluster, args...)
	}},
	{"xadd", nil, fixed("XADD", 0, "XADD", "mystream"+tagAt, "*", "myfield", "$data")},
}

// TestNames are the names -t accepts: each test's, and the groups "ping"
// (both PING tests) and "lrange" (the four LRANGE tests).
func TestNames() []string {
	names := []string{"ping"}
	for _, t := range testOrder {
		if t.flag != "" {
			names = append(names, t.flag)
		}
	}
	return append(names, "lrange")
}

// ParseTests parses -t as Tests does, without -r or --cluster.
func ParseTests(s string) ([]Test, error) { return Tests(s, false, false) }

// Tests parses -t: comma-separated test names, case-insensitive, run in
// valkey-benchmark's order whatever the order given. Empty means every
// test; a name left empty ("get,,set", "set,") is an error, and so is an
// unknown one (valkey-benchmark skips it without a word). random is
// whether -r was given, cluster whether --cluster was.
func Tests(s string, random, cluster bool) ([]Test, error) {
	if s != "" && strings.Trim(s, ", \t") == "" {
		return nil, fmt.Errorf("no test named in %q (known: %s)", s, strings.Join(TestNames(), ", "))
	}
	want := map[string]bool{}
	if s != "" {
		for _, f := range strings.Split(s, ",") {
			f = strings.ToLower(strings.TrimSpace(f))
			if f == "" {
				return nil, fmt.Errorf("an empty test name in %q", s)
			}
			known := false
			for _, t := range testOrder {
				if t.flag == f || contains(t.groups, f) {
					known = true
				}
			}
			if !known {
				return nil, fmt.Errorf("unknown test %q (known: %s)", f, strings.Join(TestNames(), ", "))
			}
			want[f] = true
		}
	}
	var tests []Test
	for _, t := range testOrder {
		selected := len(want) == 0 || t.flag != "" && want[t.flag]
		for _, g := range t.groups {
			selected = selected || want[g]
		}
		if selected {
			tests = append(tests, t.make(random, cluster))
		}
	}
	return tests, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Command is the test of a command given on the command line, as
// valkey-benchmark runs one: every request sends args, with __rand_int__
// replaced as in the other tests, and the test's name is the arguments
// joined by spaces.
func Command(args []string) (Test, error) {
	if len(args) == 0 {
		return Test{}, errors.New("no command")
	}
	if args[0] == "" {
		return Test{}, errors.New("the command's name is empty")
	}
	req := multiBulk(args...)
	return Test{Name: strings.Join(args, " "), build: func([]byte) []byte { return req }}, nil
}

// Data is the value valkey-benchmark's tests send, of size bytes: its
// genBenchmarkRandomData's characters, a linear congruential sequence from
// 1234 mapped to '0' to 'o', so that SET, LPUSH and the others send the
// same bytes as it does.
func Data(size int) []byte {
	d := make([]byte, size)
	state := uint32(1234)
	for i := range d {
		state = state*1103515245 + 12345
		d[i] = '0' + byte((state>>16)&63)
	}
	return d
}

// multiBulk encodes a request as a RESP array of bulk strings.
func multiBulk(args ...string) []byte {
	var b bytes.Buffer
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	return b.Bytes()
}

// placeholders returns the offsets of randPlaceholder in cmd.
func placeholders(cmd []byte) []int {
	var offs []int
	for i := 0; ; {
		j := bytes.Index(cmd[i:], []byte(randPlaceholder))
		if j < 0 {
			return offs
		}
		offs = append(offs, i+j)
		i += j + len(randPlaceholder)
	}
}

// RequestSize is the size of t's request with no value: a command's whole
// request, which valkey-benchmark reports as a command's payload.
func RequestSize(t Test) int { return len(t.build(nil)) }
