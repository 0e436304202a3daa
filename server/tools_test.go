package server

import (
	"bytes"
	"context"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// Tests with valkey's own tools, when they are installed (Debian:
// valkey-tools; scripts/deps.sh test installs it).

func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	testutil.Require(t, err == nil, name+" is not on PATH (Debian: apt-get install valkey-tools)")
	return p
}

// runTool runs a tool and returns what it wrote to stdout and to stderr.
func runTool(t *testing.T, bin string, stdin string, args ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %q: %v\nstdout:\n%s\nstderr:\n%s", bin, args, err, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

func TestValkeyCLI(t *testing.T) {
	cli := lookTool(t, "valkey-cli")
	_, addr := startServer(t, nil)
	host, port, _ := net.SplitHostPort(addr)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"ping"}, "PONG\n"},
		{[]string{"set", "k", "hello world"}, "OK\n"},
		{[]string{"get", "k"}, "hello world\n"},
		{[]string{"-3", "get", "k"}, "hello world\n"},
		{[]string{"get", "missing"}, "\n"},
		{[]string{"--no-raw", "get", "missing"}, "(nil)\n"},
		{[]string{"-3", "--no-raw", "get", "missing"}, "(nil)\n"},
		{[]string{"--no-raw", "incrby", "n", "5"}, "(integer) 5\n"},
		{[]string{"rpush", "l", "a", "b"}, "2\n"},
		{[]string{"lrange", "l", "0", "-1"}, "a\nb\n"},
		{[]string{"-3", "--no-raw", "hset", "h", "f", "v"}, "(integer) 1\n"},
		{[]string{"-3", "--no-raw", "hgetall", "h"}, "1# \"f\" => \"v\"\n"},
		{[]string{"-3", "--no-raw", "zadd", "z", "1.5", "m"}, "(integer) 1\n"},
		{[]string{"-3", "--no-raw", "zscore", "z", "m"}, "(double) 1.5\n"},
		{[]string{"nosuch", "x"}, "ERR unknown command 'nosuch', with args beginning with: 'x' \n\n"},
		{[]string{"get"}, "ERR wrong number of arguments for 'get' command\n\n"},
	} {
		args := append([]string{"-h", host, "-p", port}, tc.args...)
		if got, stderr := runTool(t, cli, "", args...); got != tc.want || stderr != "" {
			t.Errorf("valkey-cli %q: %q, want %q; stderr %q", tc.args, got, tc.want, stderr)
		}
	}
	// Commands from standard input, one connection.
	got, _ := runTool(t, cli, "set a 1\nincr a\nget a\n", "-h", host, "-p", port)
	if got != "OK\n2\n2\n" {
		t.Errorf("valkey-cli with commands on stdin: %q", got)
	}
}

// TestValkeyBenchmark runs valkey-benchmark's default tests, unpipelined
// and pipelined, and checks that their commands took effect.
func TestValkeyBenchmark(t *testing.T) {
	bench := lookTool(t, "valkey-benchmark")
	srv, addr := startServer(t, nil)
	host, port, _ := net.SplitHostPort(addr)
	const n = 2000
	out, stderr := runTool(t, bench, "", "-h", host, "-p", port, "-n", strconv.Itoa(n), "-c", "4", "-q")
	out = strings.ReplaceAll(out, "\r", "\n")
	if strings.Contains(strings.ToLower(stderr), "error") {
		t.Errorf("valkey-benchmark reported errors:\n%s", stderr)
	}
	for _, test := range []string{"PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "LPUSH", "RPUSH", "LPOP", "RPOP",
		"SADD", "HSET", "SPOP", "ZADD", "ZPOPMIN", "LRANGE_100", "LRANGE_300", "LRANGE_500", "LRANGE_600", "MSET", "XADD"} {
		if !strings.Contains(out, "\n"+test+": ") && !strings.HasPrefix(out, test+": ") && !strings.Contains(out, "\n"+test+" (") {
			t.Errorf("valkey-benchmark did not report %s", test)
		}
	}
	if strings.Contains(strings.ToLower(out), "error") {
		t.Errorf("valkey-benchmark reported errors:\n%s", out)
	}
	rc := dialRaw(t, addr)
	rc.expectReply(t, []string{"get", "counter:__rand_int__"}, "$4\r\n2000\r\n")
	rc.expectReply(t, []string{"xlen", "mystream"}, ":2000\r\n")
	rc.expectReply(t, []string{"hlen", "myhash"}, ":1\r\n")
	rc.expectReply(t, []string{"exists", "key:__rand_int__", "mylist"}, ":2\r\n")

	out, stderr = runTool(t, bench, "", "-h", host, "-p", port, "-n", "20000", "-c", "4", "-P", "32", "-q", "-t", "ping,set,get,incr,lpush,lpop")
	if strings.Contains(strings.ToLower(out+stderr), "error") {
		t.Errorf("valkey-benchmark -P 32 reported errors:\n%s%s", out, stderr)
	}
	t.Logf("pipelined, 32 deep:\n%s", lastLines(out))
	rc.expectReply(t, []string{"get", "counter:__rand_int__"}, "$5\r\n22000\r\n")
	if st := srv.Stats(); st.Commands < 20*n {
		t.Errorf("stats %+v", st)
	}
}

// lastLines keeps what valkey-benchmark -q prints last on each line.
func lastLines(out string) string {
	var b strings.Builder
	for _, l := range strings.Split(out, "\n") {
		if i := strings.LastIndex(l, "\r"); i >= 0 {
			l = l[i+1:]
		}
		if strings.TrimSpace(l) != "" {
			b.WriteString(strings.TrimSpace(l) + "\n")
		}
	}
	return b.String()
}
