// Package benchrun is the load generator behind `rdmapool bench`: a
// valkey-benchmark-like workload of pipelined RESP commands sent by many
// clients, each on its own connection from a pool.Pool, with latencies in an
// HDR histogram and reports in valkey-benchmark's formats.
package benchrun

import (
	"bytes"
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
	// valueReply: a reply carries a value of dataSize bytes (GET, LPOP),
	// which grows the client's reply buffer to hold it.
	valueReply bool
}

// testOrder lists every test in the order valkey-benchmark runs them.
var testOrder = []struct {
	flag string
	test Test
}{
	{"ping_inline", Test{"PING_INLINE", func([]byte) []byte { return []byte("PING\r\n") }, false}},
	{"ping_mbulk", Test{"PING_MBULK", func([]byte) []byte { return multiBulk("PING") }, false}},
	{"set", Test{"SET", func(d []byte) []byte { return multiBulk("SET", "key:"+randPlaceholder, string(d)) }, false}},
	{"get", Test{"GET", func([]byte) []byte { return multiBulk("GET", "key:"+randPlaceholder) }, true}},
	{"incr", Test{"INCR", func([]byte) []byte { return multiBulk("INCR", "counter:"+randPlaceholder) }, false}},
	{"lpush", Test{"LPUSH", func(d []byte) []byte { return multiBulk("LPUSH", "mylist", string(d)) }, false}},
	{"lpop", Test{"LPOP", func([]byte) []byte { return multiBulk("LPOP", "mylist") }, true}},
	{"mset", Test{"MSET (10 keys)", func(d []byte) []byte {
		args := []string{"MSET"}
		for range 10 {
			args = append(args, "key:"+randPlaceholder, string(d))
		}
		return multiBulk(args...)
	}, false}},
}

// TestNames are the names -t accepts; "ping" means both PING tests.
func TestNames() []string {
	names := []string{"ping"}
	for _, t := range testOrder {
		names = append(names, t.flag)
	}
	return names
}

// ParseTests parses -t: comma-separated test names, case-insensitive, run
// in valkey-benchmark's order whatever the order given. Empty means every
// test; blanks and commas alone name none, an error.
func ParseTests(s string) ([]Test, error) {
	if s != "" && strings.Trim(s, ", \t") == "" {
		return nil, fmt.Errorf("no test named in %q (known: %s)", s, strings.Join(TestNames(), ", "))
	}
	want := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.ToLower(strings.TrimSpace(f))
		switch f {
		case "":
			continue
		case "ping":
			want["ping_inline"], want["ping_mbulk"] = true, true
			continue
		}
		known := false
		for _, t := range testOrder {
			if t.flag == f {
				known = true
			}
		}
		if !known {
			return nil, fmt.Errorf("unknown test %q (known: %s)", f, strings.Join(TestNames(), ", "))
		}
		want[f] = true
	}
	var tests []Test
	for _, t := range testOrder {
		if len(want) == 0 || want[t.flag] {
			tests = append(tests, t.test)
		}
	}
	return tests, nil
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
