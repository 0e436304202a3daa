package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// allTests are the titles of every test, in valkey-benchmark's order.
var allTests = []string{"PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "LPUSH", "RPUSH", "LPOP", "RPOP", "SADD", "HSET",
	"SPOP", "ZADD", "ZPOPMIN", "LPUSH (needed to benchmark LRANGE)", "LRANGE_100 (first 100 elements)",
	"LRANGE_300 (first 300 elements)", "LRANGE_500 (first 500 elements)", "LRANGE_600 (first 600 elements)", "MSET (10 keys)", "XADD"}

// valkeyCLI runs valkey-cli against port and returns its output, trimmed.
func valkeyCLI(t *testing.T, port string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("valkey-cli")
	testutil.Require(t, err == nil, "valkey-cli is not installed (scripts/deps.sh test installs it)")
	out, err := exec.Command(bin, append([]string{"-p", port}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("valkey-cli %q: %v: %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func valkeyPort(t *testing.T) string {
	_, port, _ := net.SplitHostPort(testutil.ValkeyServer(t))
	return port
}

// quietTests returns the tests of -q lines in out, in order.
func quietTests(out string) []string {
	var tests []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if i := strings.Index(l, ": "); i > 0 && strings.Contains(l, " requests per second, p50=") {
			tests = append(tests, l[:i])
		}
	}
	return tests
}

// TestBenchAllTests: every test of valkey-benchmark runs against the
// embedded server and against valkey-server, with and without -r, in
// RESP2 and RESP3.
func TestBenchAllTests(t *testing.T) {
	port := valkeyPort(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"embedded", nil},
		{"embedded -r -3", []string{"-r", "100", "-3"}},
		{"valkey-server", []string{"-p", port}},
		{"valkey-server -r -3 -P", []string{"-p", port, "-r", "100", "-3", "-P", "3"}},
	} {
		code, stdout, stderr := runBench(t, append([]string{"--transport", "tcp", "-n", "60", "-c", "2", "-q"}, tc.args...)...)
		if got := quietTests(stdout); code != 0 || strings.Join(got, "|") != strings.Join(allTests, "|") {
			t.Errorf("%s: exit %d, tests %q\nstdout:\n%s\nstderr:\n%s", tc.name, code, got, stdout, stderr)
		}
	}
	// The LRANGE group alone still fills the list first.
	code, stdout, _ := runBench(t, "-p", port, "-n", "30", "-c", "1", "-q", "-t", "lrange")
	if got := strings.Join(quietTests(stdout), "|"); code != 0 || got != strings.Join(allTests[14:19], "|") {
		t.Errorf("-t lrange: exit %d, %s", code, got)
	}
	if n := valkeyCLI(t, port, "LLEN", "mylist"); n == "0" {
		t.Errorf("LLEN mylist = %s after the LRANGE tests", n)
	}
}

// TestBenchTextReport: the text report has valkey-benchmark's sections,
// the server's configuration among them.
func TestBenchTextReport(t *testing.T) {
	port := valkeyPort(t)
	code, stdout, stderr := runBench(t, "-p", port, "-n", "300", "-c", "2", "-t", "set")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"====== SET ======\n", "  keep alive: 1\n", "  host configuration \"save\": \n", "  host configuration \"appendonly\": no\n",
		"  multi-thread: no\n", "\nLatency by percentile distribution:\n", "\nCumulative distribution of latencies:\n", "\nSummary:\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the report lacks %q:\n%s", want, stdout)
		}
	}
	cum := stdout[strings.Index(stdout, "Cumulative distribution"):strings.Index(stdout, "Summary:")]
	if !regexp.MustCompile(`(?m)^100\.000% <= [0-9.]+ milliseconds \(cumulative count 300\)$`).MatchString(cum) {
		t.Errorf("the cumulative distribution does not end at 100%%:\n%s", cum)
	}
}

// TestBenchCommandLine: a command after the flags is benchmarked, its
// __rand_int__ replaced by 12 digits below -r.
func TestBenchCommandLine(t *testing.T) {
	port := valkeyPort(t)
	code, stdout, stderr := runBench(t, "-p", port, "-n", "200", "-c", "2", "-r", "10", "SET", "key:__rand_int__", "v")
	if code != 0 || !strings.Contains(stdout, "====== SET key:__rand_int__ v ======\n") || !strings.Contains(stdout, "  43 bytes payload\n") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}
	keys := strings.Fields(valkeyCLI(t, port, "KEYS", "key:*"))
	if len(keys) == 0 || len(keys) > 10 {
		t.Errorf("keys after SET key:__rand_int__ with -r 10: %q", keys)
	}
	for _, k := range keys {
		if !regexp.MustCompile(`^key:00000000000[0-9]$`).MatchString(k) {
			t.Errorf("key %q", k)
		}
	}
	// -r 0, as valkey-benchmark's: every __rand_int__ is 000000000000.
	valkeyCLI(t, port, "FLUSHALL")
	if code, _, stderr := runBench(t, "-p", port, "-n", "20", "-c", "1", "-q", "-r", "0", "-t", "set,zadd"); code != 0 {
		t.Fatalf("-r 0: exit %d, %s", code, stderr)
	}
	if keys := valkeyCLI(t, port, "KEYS", "*"); strings.Join(strings.Fields(keys), " ") != "key:000000000000 myzset" && strings.Join(strings.Fields(keys), " ") != "myzset key:000000000000" {
		t.Errorf("-r 0: keys %q", keys)
	}
	if m := valkeyCLI(t, port, "ZRANGE", "myzset", "0", "-1", "WITHSCORES"); strings.Join(strings.Fields(m), " ") != "element:000000000000 0" {
		t.Errorf("-r 0: myzset %q", m)
	}
	// After --, and against the embedded server.
	code, stdout, _ = runBench(t, "-n", "100", "-c", "2", "-q", "--", "lpush", "mylist", "__rand_int__")
	if code != 0 || !strings.HasPrefix(stdout, "lpush mylist __rand_int__: ") {
		t.Errorf("-- lpush: exit %d, %q", code, stdout)
	}
	// An unknown command is the server's error, as valkey-benchmark's.
	code, _, stderr = runBench(t, "-p", port, "-n", "10", "-c", "1", "-q", "NOSUCH")
	if code != 1 || !strings.Contains(stderr, "error from server: ERR unknown command 'NOSUCH'") {
		t.Errorf("NOSUCH: exit %d, %q", code, stderr)
	}
}

// TestBenchAuthDB: -a, --user, --dbnum and -3 reach valkey-server as
// valkey-benchmark sends them; a wrong password is the server's error.
func TestBenchAuthDB(t *testing.T) {
	port := valkeyPort(t)
	valkeyCLI(t, port, "ACL", "SETUSER", "bob", "on", ">bobpw", "~*", "+@all")
	valkeyCLI(t, port, "CONFIG", "SET", "requirepass", "secret")
	base := []string{"-p", port, "-n", "50", "-c", "2", "-q", "-t", "set"}
	for _, tc := range []struct {
		args []string
		want string // in stderr, with exit 1; empty: success
	}{
		{nil, "error from server: NOAUTH Authentication required."},
		{[]string{"-a", "wrong"}, "error from server: WRONGPASS invalid username-password pair or user is disabled."},
		{[]string{"-a", "secret"}, ""},
		{[]string{"--user", "bob", "-a", "bobpw", "-3"}, ""},
		{[]string{"--user", "bob", "-a", "secret"}, "WRONGPASS"},
		{[]string{"-a", "secret", "--dbnum", "3"}, ""},
		{[]string{"-a", "secret", "--dbnum", "99"}, "error from server: ERR DB index is out of range"},
	} {
		code, stdout, stderr := runBench(t, append(append([]string{}, base...), tc.args...)...)
		switch {
		case tc.want == "" && (code != 0 || !strings.HasPrefix(stdout, "SET: ")):
			t.Errorf("%q: exit %d, stdout %q, stderr %q", tc.args, code, stdout, stderr)
		case tc.want != "" && (code != 1 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 2):
			t.Errorf("%q: exit %d, stderr %q; want exit 1 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if n := valkeyCLI(t, port, "-a", "secret", "--no-auth-warning", "-n", "3", "DBSIZE"); n != "1" {
		t.Errorf("db 3 holds %s keys after --dbnum 3 -t set, want 1 (key:__rand_int__)", n)
	}
	// The embedded server takes -a as its password. It has only db 0.
	if code, stdout, stderr := runBench(t, "-a", "pw", "-n", "50", "-c", "2", "-q", "-t", "get,set", "-3"); code != 0 || len(quietTests(stdout)) != 2 {
		t.Errorf("embedded -a: exit %d, %q, %q", code, stdout, stderr)
	}
}

// TestBenchKeepAliveOff: -k 0 opens a connection for every request.
func TestBenchKeepAliveOff(t *testing.T) {
	port := valkeyPort(t)
	conns := func() int {
		for _, l := range strings.Split(valkeyCLI(t, port, "INFO", "stats"), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "total_connections_received:"); ok {
				n, _ := strconv.Atoi(v)
				return n
			}
		}
		t.Fatal("no total_connections_received")
		return 0
	}
	before := conns()
	code, stdout, stderr := runBench(t, "-p", port, "-k", "0", "-n", "100", "-c", "2", "-t", "ping_mbulk,set", "--dbnum", "2")
	if code != 0 || strings.Count(stdout, "  keep alive: 0\n") != 2 {
		t.Fatalf("exit %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}
	if got := conns() - before; got < 200 {
		t.Errorf("-k 0 -n 100, two tests: %d connections, want at least 200", got)
	}
	if n := valkeyCLI(t, port, "-n", "2", "DBSIZE"); n != "1" {
		t.Errorf("the new connections did not SELECT 2: db 2 holds %s keys", n)
	}
}

// TestBenchSeed: one --seed draws the same keys; another, others.
func TestBenchSeed(t *testing.T) {
	port := valkeyPort(t)
	keys := func(seed string) string {
		valkeyCLI(t, port, "FLUSHALL")
		if code, _, stderr := runBench(t, "-p", port, "-n", "30", "-c", "1", "-q", "-t", "set", "-r", "1000000000", "--seed", seed); code != 0 {
			t.Fatalf("--seed %s: exit %d, %s", seed, code, stderr)
		}
		k := strings.Fields(valkeyCLI(t, port, "KEYS", "*"))
		sort.Strings(k)
		return strings.Join(k, " ")
	}
	a, b, c := keys("42"), keys("42"), keys("43")
	// --json says the seed, also the one drawn from the time.
	for _, args := range [][]string{{"--seed", "42"}, nil} {
		code, stdout, _ := runBench(t, append([]string{"-p", port, "-n", "10", "-c", "1", "-t", "set", "--json"}, args...)...)
		var doc struct {
			Seed      *int64 `json:"seed"`
			KeepAlive bool   `json:"keep_alive"`
		}
		if err := json.Unmarshal([]byte(stdout), &doc); code != 0 || err != nil || doc.Seed == nil || args != nil && *doc.Seed != 42 || !doc.KeepAlive {
			t.Errorf("--json %q: exit %d, %v, %s", args, code, err, stdout)
		}
	}
	if a != b || a == c || len(strings.Fields(a)) < 25 {
		t.Errorf("--seed 42: %s\nagain: %s\n--seed 43: %s", a, b, c)
	}
}

// TestBenchLoopAndIdle: -l runs the tests again until a signal, -I holds
// idle connections until one; both then exit 0. The signal is the run's
// context ending, once the output shows what is asserted: a slow machine
// makes the wait longer, not the test fail.
func TestBenchLoopAndIdle(t *testing.T) {
	port := valkeyPort(t)
	// until runs bench with args until its stdout satisfies enough (a
	// minute bounds a hang), then cancels it, and returns its exit code and
	// output.
	until := func(args []string, enough func(stdout string) bool) (int, string, string) {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var out, errb syncBuffer
		exited := make(chan int, 1)
		go func() { exited <- bench(ctx, args, &out, &errb, false) }()
		for deadline := time.Now().Add(time.Minute); !enough(out.String()); time.Sleep(10 * time.Millisecond) {
			select {
			case code := <-exited:
				return code, out.String(), errb.String()
			default:
			}
			if time.Now().After(deadline) {
				cancel()
				<-exited
				t.Fatalf("bench %q: after a minute, stdout:\n%s\nstderr: %s", args, out.String(), errb.String())
			}
		}
		cancel()
		code := <-exited
		return code, out.String(), errb.String()
	}
	code, out, errs := until([]string{"-p", port, "-l", "-q", "-t", "ping_mbulk", "-n", "200", "-c", "2"},
		func(out string) bool { return len(quietTests(out)) >= 2 })
	if n := len(quietTests(out)); code != 0 || n < 2 || !strings.Contains(errs, "rdmapool bench: stopped after ") {
		t.Errorf("-l: exit %d, %d loops, stdout:\n%s\nstderr: %s", code, n, out, errs)
	}
	code, out, errs = until([]string{"-p", port, "-l", "--csv", "-t", "ping_mbulk,set", "-n", "100", "-c", "1"},
		func(out string) bool { return strings.Count(out, "\n") >= 5 })
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) < 5 || !strings.HasPrefix(lines[0], `"test","rps"`) || strings.Count(out, `"test"`) != 1 ||
		!strings.HasPrefix(lines[3], `"PING_MBULK"`) || !strings.HasPrefix(lines[4], `"SET"`) {
		t.Errorf("-l --csv: exit %d, stdout:\n%s\nstderr: %s", code, out, errs)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int)
	var iout, ierr bytes.Buffer
	go func() { done <- bench(ctx, []string{"-p", port, "-I", "-c", "7"}, &iout, &ierr, false) }()
	deadline := time.Now().Add(time.Minute)
	for {
		info := valkeyCLI(t, port, "INFO", "clients")
		if strings.Contains(info, "connected_clients:8") { // and valkey-cli's own
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("-I -c 7 did not open 7 connections: %s", info)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 0 || !strings.HasPrefix(iout.String(), "Creating 7 idle connections and waiting forever (Ctrl+C when done)\n") {
		t.Errorf("-I: exit %d, stdout %q, stderr %q", code, iout.String(), ierr.String())
	}
}

// TestHelpAndVersion: --help is the usage on stdout with exit 0 for every
// command; version, --version and bench --version print the version.
func TestHelpAndVersion(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"info", "--help"}, {"serve", "--help"}, {"bench", "--help"}, {"version", "--help"}, {"serve", "-h"}, {"info", "-help"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 || !strings.Contains(out.String(), "usage: rdmapool") || errb.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
	for _, args := range [][]string{{"info", "--bad"}, {"serve", "--bad"}, {"bench", "--bad"}, {"version", "x"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || strings.Count(errb.String(), "\n") != 1 || out.Len() != 0 ||
			!strings.HasPrefix(errb.String(), "rdmapool "+args[0]+": ") || !strings.HasSuffix(errb.String(), "--help for usage)\n") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2 and one line", args, code, out.String(), errb.String())
		}
	}
	for _, args := range [][]string{{"version"}, {"--version"}, {"bench", "--version"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 || !regexp.MustCompile(`^rdmapool \S+ .*go[0-9.]+\S* \w+/\w+\n$`).MatchString(out.String()) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out.String(), errb.String())
		}
	}
}
