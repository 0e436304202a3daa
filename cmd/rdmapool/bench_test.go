package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/cmd/rdmapool/internal/benchrun"
	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
)

// runBench runs `rdmapool bench args...` without a terminal.
func runBench(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = bench(context.Background(), args, &out, &errb, false)
	if s := errb.String() + out.String(); strings.Contains(s, "goroutine ") || strings.Contains(s, "panic") {
		t.Errorf("bench %q: a stack trace:\n%s", args, s)
	}
	return code, out.String(), errb.String()
}

func TestBenchBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-t", "set,nope"}, `-t: unknown test "nope"`},
		{[]string{"--transport", "udp"}, `--transport "udp": want rdma, tcp, auto or both`},
		{[]string{"--tcp-engine", "epoll"}, `--tcp-engine "epoll": want netpoll or gnet`},
		{[]string{"--tcp-engine", ""}, `--tcp-engine "": want netpoll or gnet`},
		{[]string{"-c", "0"}, "-c 0: need at least 1 client"},
		{[]string{"-n", "0"}, "-n 0: need at least 1 request"},
		{[]string{"-P", "0"}, "-P 0: the pipeline must be at least 1"},
		{[]string{"-d", "-1"}, "-d -1 is out of range"},
		{[]string{"-r", "-5"}, "-r -5: the keyspace must not be negative"},
		{[]string{"-p", "70000"}, "-p 70000 is not a port"},
		{[]string{"--rdma-port", "-1", "-p", "6379"}, "--rdma-port -1 is not a port"},
		{[]string{"--csv", "--json"}, "--csv and --json cannot be used together"},
		{[]string{"--duration", "-1s"}, "--duration -1s must not be negative"},
		{[]string{"--threads", "-2"}, "--threads -2 must not be negative"},
		{[]string{"--nope"}, "flag provided but not defined: -nope"},
		{[]string{"-c", "x"}, `invalid value "x" for flag -c`},
		{[]string{"--spin-wait", "1"}, `invalid value "1" for flag -spin-wait`},
		// A word after the flags is a command to benchmark, as
		// valkey-benchmark's; with -t it is refused.
		{[]string{"-t", "get", "extra"}, `-t and a command ("extra") cannot be used together`},
		{[]string{"-d", "5", "--", "SET", "k", "v"}, `-d and a command ("SET k v") cannot be used together`},
		{[]string{"-I", "PING"}, `-I and a command ("PING") cannot be used together`},
		{[]string{"", "k"}, "the command's name is empty"},
		{[]string{"-t", "get,,set"}, `-t: an empty test name in "get,,set"`},
		{[]string{"-t", "set,"}, `-t: an empty test name in "set,"`},
		{[]string{"--user", "bob"}, "--user needs -a"},
		{[]string{"--dbnum", "-1"}, "--dbnum -1 must not be negative"},
		{[]string{"-k", "2"}, "-k 2: want 1 (keep alive) or 0 (reconnect)"},
		{[]string{"--precision", "0"}, "--precision 0: want 1 to 4 significant figures"},
		{[]string{"--precision", "5"}, "--precision 5: want 1 to 4 significant figures"},
		{[]string{"--seed", "x"}, `invalid value "x" for flag -seed`},
		{[]string{"-l", "--json"}, "-l and --json cannot be used together"},
		{[]string{"-l", "--plot", "x.svg"}, "-l and --plot cannot be used together"},
		{[]string{"-l", "--transport", "both"}, "-l and --transport both cannot be used together"},
		{[]string{"-I", "--transport", "both"}, "-I and --transport both cannot be used together"},
		{[]string{"--cluster-nodes", "2"}, "--cluster-nodes 2 needs --cluster"},
		{[]string{"--cluster", "--cluster-nodes", "2", "-p", "7000"}, "--cluster-nodes 2 is the size of the embedded cluster"},
		{[]string{"--cluster", "--cluster-nodes", "0"}, "--cluster-nodes 0: want 1 to 64"},
		{[]string{"--cluster", "--dbnum", "1", "-p", "6379"}, "--dbnum 1: a cluster has only db 0"},
		{[]string{"--plot", "x.txt"}, "--plot x.txt: want a file name ending in .svg or .png"},
		{[]string{"--plot", "lat"}, "--plot lat: want a file name ending in .svg or .png"},
		{[]string{"--timeout", "0s"}, "--timeout 0s must be positive"},
		{[]string{"-t", ","}, `-t: no test named in ","`},
		{[]string{"-t", " "}, `-t: no test named in " "`},
		{[]string{"-t", ""}, "-t is empty"},
		{[]string{"--rdma-port", "6380"}, "--rdma-port is the port of a server given by -h or -p"},
		{[]string{"-n", "-5", "--duration", "200ms"}, "-n -5: need at least 1 request"},
		// Buffers: -c × -P × the request (MSET's 10 values of -d bytes).
		{[]string{"-n", "1000000000", "-P", "10000000", "-t", "set,mset", "-r", "100"}, "the clients would need about 156 GiB of memory in MSET (10 keys) (50 clients × pipeline 10000000 × 335 bytes, the size of its request"},
		{[]string{"-c", "1", "-d", "536870912", "-t", "mset"}, "the clients would need about 5 GiB of memory in MSET (10 keys) (pipeline 1 × 5 GiB, the size of its request"},
		{[]string{"-c", strconv.FormatUint(openFilesLimit()+1, 10), "-p", "6379"}, "more connections than the " + strconv.FormatUint(openFilesLimit(), 10) + " files this process may open allow (ulimit -n)"},
	} {
		code, _, stderr := runBench(t, tc.args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || len(lines) != 1 || !strings.HasPrefix(stderr, "rdmapool bench: ") || !strings.Contains(stderr, tc.want) {
			t.Errorf("bench %q: exit %d, stderr:\n%s\nwant exit 2 and one line with %q", tc.args, code, stderr, tc.want)
		}
	}
	// Through the command's dispatch too.
	var out, errb bytes.Buffer
	if code := run([]string{"bench", "-t", "hsetx"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), `unknown test "hsetx"`) {
		t.Errorf("run bench -t hsetx: exit %d, %s", code, errb.String())
	}
	if code := run([]string{"bench", "--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "usage: rdmapool bench") || !strings.Contains(out.String(), "-transport") {
		t.Errorf("bench --help: exit %d, %s", code, out.String())
	}
}

func TestBenchUnreachable(t *testing.T) {
	port := strconv.Itoa(freePort(t))
	for _, tr := range []string{"tcp", "auto"} {
		code, stdout, stderr := runBench(t, "-h", "127.0.0.1", "-p", port, "--transport", tr, "-c", "3", "-q")
		if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "rdmapool bench: cannot connect to 127.0.0.1:"+port) ||
			!strings.Contains(stderr, "connection refused") {
			t.Errorf("--transport %s to a closed port: exit %d, stdout %q, stderr %q", tr, code, stdout, stderr)
		}
	}
}

// TestBenchDefault is the default run against the embedded server: RDMA
// where a device can be used (the VM), else TCP with the reason.
func TestBenchDefault(t *testing.T) {
	code, stdout, stderr := runBench(t, "-n", "300", "-c", "5")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if rdmatest.Available() {
		if !strings.Contains(stdout, "transport: rdma (auto: RDMA connected)") {
			t.Errorf("RDMA is usable, but:\n%s", stdout)
		}
	} else if !strings.Contains(stdout, "transport: tcp (auto: RDMA unavailable: RDMA cannot be used") {
		t.Errorf("want TCP and why:\n%s", stdout)
	}
	for _, want := range []string{"====== PING_INLINE ======", "====== MSET (10 keys) ======", "300 requests completed", "5 parallel clients",
		"Latency by percentile distribution:", "throughput summary:"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}

	procs := runtime.GOMAXPROCS(0)
	code, stdout, stderr = runBench(t, "-n", "200", "-c", "2", "-q", "-t", "get,set", "--threads", "1")
	if runtime.GOMAXPROCS(0) != procs {
		t.Errorf("--threads 1 left GOMAXPROCS at %d, want it back at %d", runtime.GOMAXPROCS(0), procs)
	}
	// -q: valkey-benchmark's lines alone on stdout, the transport on stderr.
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(stderr, "server: embedded") || strings.Count(stderr, "\n") != 1 ||
		!strings.HasPrefix(lines[0], "SET: ") || !strings.Contains(lines[1], "GET: ") || !strings.Contains(lines[1], "requests per second, p50=") {
		t.Errorf("-q: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	// --spin-wait reaches both ends of the RDMA connections; a negative
	// one (never poll) makes every wait park and still serves.
	code, stdout, stderr = runBench(t, "-n", "200", "-c", "2", "-q", "-t", "ping_mbulk", "--spin-wait", "-1ns")
	wantTransport := "transport: tcp"
	if rdmatest.Available() {
		wantTransport = "transport: rdma"
	}
	if code != 0 || !strings.HasPrefix(stdout, "PING_MBULK: ") || !strings.Contains(stderr, wantTransport) {
		t.Errorf("--spin-wait -1ns: exit %d, stdout %q, stderr %q; want %q", code, stdout, stderr, wantTransport)
	}
}

func TestBenchCSV(t *testing.T) {
	code, stdout, stderr := runBench(t, "-n", "200", "-c", "2", "-t", "set,get,incr", "--csv", "-r", "100", "-P", "4")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	// valkey-benchmark's format: every field quoted, numbers included.
	quoted := regexp.MustCompile(`^"[^"]*"(,"[^"]*"){7}$`)
	for _, l := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		if !quoted.MatchString(l) {
			t.Errorf("csv line %q is not 8 quoted fields", l)
		}
	}
	recs, err := csv.NewReader(strings.NewReader(stdout)).ReadAll()
	if err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if len(recs) != 4 || strings.Join(recs[0], ",") != "test,rps,avg_latency_ms,min_latency_ms,p50_latency_ms,p95_latency_ms,p99_latency_ms,max_latency_ms" {
		t.Fatalf("csv:\n%s", stdout)
	}
	for i, name := range []string{"SET", "GET", "INCR"} {
		r := recs[i+1]
		if r[0] != name {
			t.Errorf("row %d: %q", i+1, r)
		}
		for _, f := range r[1:] {
			if _, err := strconv.ParseFloat(f, 64); err != nil {
				t.Errorf("row %q: %v", r, err)
			}
		}
	}
	if !strings.Contains(stderr, "transport: ") {
		t.Errorf("the transport line should be on stderr with --csv: %q", stderr)
	}
}

func TestBenchJSON(t *testing.T) {
	code, stdout, stderr := runBench(t, "-n", "200", "-c", "2", "-t", "ping,lpush,lpop", "--json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	var rep benchrun.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v:\n%s", err, stdout)
	}
	if rep.Server != "embedded" || len(rep.Runs) != 1 || rep.Runs[0].Reason == "" || len(rep.Runs[0].Results) != 4 {
		t.Fatalf("json: %+v\n%s", rep, stdout)
	}
	var raw map[string]any
	json.Unmarshal([]byte(stdout), &raw)
	res := raw["runs"].([]any)[0].(map[string]any)["results"].([]any)[3].(map[string]any)
	if res["test"] != "LPOP" || res["requests"] != 200.0 {
		t.Errorf("json result: %v", res)
	}
	for _, k := range benchrun.CSVHeader {
		if _, ok := res[k]; !ok {
			t.Errorf("json result lacks %q", k)
		}
	}
}

// TestBenchTCPEngine: --tcp-engine reaches the pool, and the reports name
// the engine that ran: the transport line, --json's tcp_engine.
func TestBenchTCPEngine(t *testing.T) {
	for _, engine := range []string{"netpoll", "gnet"} {
		code, stdout, stderr := runBench(t, "--transport", "tcp", "--tcp-engine", engine, "-n", "200", "-c", "2", "-P", "4", "-t", "set,get", "--json")
		if code != 0 {
			t.Fatalf("--tcp-engine %s: exit %d, stderr %s", engine, code, stderr)
		}
		var rep benchrun.Report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("%v:\n%s", err, stdout)
		}
		if len(rep.Runs) != 1 || rep.Runs[0].TCPEngine != engine || len(rep.Runs[0].Results) != 2 {
			t.Errorf("--tcp-engine %s: json %s", engine, stdout)
		}
	}
	code, _, stderr := runBench(t, "--transport", "tcp", "-n", "100", "-c", "1", "-t", "ping_inline", "-q")
	if code != 0 || !strings.Contains(stderr, "transport: tcp (--transport tcp); tcp engine: netpoll") {
		t.Errorf("default engine: exit %d, stderr %q", code, stderr)
	}
}

// TestBenchBoth: with RDMA (the VM) both transports run and are compared;
// without, TCP runs, the output says why RDMA did not, and the exit is 1.
func TestBenchBoth(t *testing.T) {
	code, stdout, stderr := runBench(t, "--transport", "both", "-n", "200", "-c", "3", "-t", "set,get")
	if !strings.Contains(stdout, "rps rdma/tcp") || !strings.Contains(stdout, "SET") {
		t.Errorf("no comparison table:\n%s", stdout)
	}
	// -q: each transport's line per test, and the ratios.
	qcode, quiet, _ := runBench(t, "--transport", "both", "-n", "200", "-c", "3", "-t", "get", "-q")
	if !strings.Contains(quiet, "GET (tcp): ") || qcode != code {
		t.Errorf("-q: exit %d, stdout:\n%s", qcode, quiet)
	}
	if rdmatest.Available() {
		if code != 0 || strings.Contains(stdout, "n/a") {
			t.Errorf("exit %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
		}
		if !strings.Contains(quiet, "GET (rdma): ") || !strings.Contains(quiet, "GET rdma/tcp: ") {
			t.Errorf("-q: stdout:\n%s", quiet)
		}
		return
	}
	if code != 1 || !strings.Contains(stdout, "rdma: did not run: RDMA cannot be used") ||
		!strings.Contains(stderr, "rdmapool bench: --transport both: RDMA did not run:") {
		t.Errorf("exit %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}

	code, stdout, _ = runBench(t, "--transport", "both", "-n", "100", "-c", "2", "-t", "set", "--json")
	var rep benchrun.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != 1 || rep.Unavailable["rdma"] == "" || len(rep.Runs) != 1 {
		t.Errorf("--json: exit %d, %v, %s", code, err, stdout)
	}
}

func TestBenchRDMAOnlyUnavailable(t *testing.T) {
	if rdmatest.Available() {
		t.Skip("RDMA is usable here")
	}
	code, _, stderr := runBench(t, "--transport", "rdma", "-n", "10")
	if code != 1 || !strings.Contains(stderr, "rdmapool bench: --transport rdma: RDMA is unavailable: RDMA cannot be used") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// TestBenchPlot: --plot writes the plot after the run, whatever the output
// format, and says where in the text output; a file that cannot be written
// fails the run, before it.
func TestBenchPlot(t *testing.T) {
	dir := t.TempDir()
	svg := filepath.Join(dir, "out.svg")
	code, stdout, stderr := runBench(t, "-n", "200", "-c", "2", "-t", "get,set", "--plot", svg)
	if code != 0 || !strings.HasSuffix(stdout, "latency plot: "+svg+"\n") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr: %s", code, stdout, stderr)
	}
	b, err := os.ReadFile(svg)
	if err != nil || !bytes.HasPrefix(b, []byte("<?xml")) || !bytes.Contains(b, []byte(" SET")) || !bytes.Contains(b, []byte(" GET")) {
		t.Errorf("%s: %v, %d bytes starting %q", svg, err, len(b), b[:min(len(b), 16)])
	}

	png := filepath.Join(dir, "out.png")
	code, stdout, _ = runBench(t, "-n", "200", "-c", "2", "-t", "get", "--json", "--plot", png)
	if b, err := os.ReadFile(png); code != 0 || err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) || !json.Valid([]byte(stdout)) {
		t.Errorf("--json: exit %d, %v, stdout:\n%s", code, err, stdout)
	}

	// --transport both plots every transport that ran.
	both := filepath.Join(dir, "both.svg")
	code, _, stderr = runBench(t, "--transport", "both", "-n", "100", "-c", "2", "-t", "set", "--plot", both)
	b, err = os.ReadFile(both)
	if err != nil || !bytes.Contains(b, []byte("tcp SET")) || rdmatest.Available() != bytes.Contains(b, []byte("rdma SET")) {
		t.Errorf("--transport both: exit %d, %v, stderr %s", code, err, stderr)
	}

	for _, bad := range []string{filepath.Join(dir, "no", "such", "dir.svg"), filepath.Join(dir, "dir.svg")} {
		os.Mkdir(filepath.Join(dir, "dir.svg"), 0o755)
		code, stdout, stderr = runBench(t, "-n", "50", "-c", "1", "-t", "get", "--plot", bad)
		if code != 1 || stdout != "" || !strings.HasPrefix(stderr, "rdmapool bench: --plot: open "+bad+": ") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("unwritable plot %s: exit %d, stdout %q, stderr %q", bad, code, stdout, stderr)
		}
	}
	// Checking leaves no file behind.
	if _, err := os.Stat(filepath.Join(dir, "no")); err == nil {
		t.Error("the check made a directory")
	}
	code, _, _ = runBench(t, "-n", "50", "-c", "1", "-t", "get", "-h", "127.0.0.1", "-p", strconv.Itoa(freePort(t)), "--plot", filepath.Join(dir, "new.svg"))
	if _, err := os.Stat(filepath.Join(dir, "new.svg")); code != 1 || err == nil {
		t.Errorf("a failed run: exit %d, and the plot's file was left: %v", code, err)
	}
}

// slowServer answers PING_INLINE's "PING" lines with +PONG, each after
// delay, so that a run lasts long enough for the progress bar to show.
func slowServer(t *testing.T, delay time.Duration) (port string) {
	t.Helper()
	a := testutil.TCPServer(t, func(c net.Conn) {
		r := bufio.NewReader(c)
		for {
			if _, err := r.ReadString('\n'); err != nil {
				return
			}
			time.Sleep(delay)
			if _, err := c.Write([]byte("+PONG\r\n")); err != nil {
				return
			}
		}
	})
	return strconv.Itoa(a.Port)
}

// screen is what a terminal shows of out: each "\r" returns to the start
// of the line, which the text after it overwrites; trailing blanks are
// dropped.
func screen(out string) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var cur []rune
		pos := 0
		for _, r := range l {
			switch {
			case r == '\r':
				pos = 0
				continue
			case pos < len(cur):
				cur[pos] = r
			default:
				cur = append(cur, r)
			}
			pos++
		}
		lines = append(lines, strings.TrimRight(string(cur), " "))
	}
	return lines
}

// TestBenchProgress runs with the progress bar on, as on a terminal: the bar
// shows the test, the count and the rate while the test runs, is cleared
// at its end, so the terminal shows the report exactly as without it, and
// leaves no goroutine behind.
func TestBenchProgress(t *testing.T) {
	port := slowServer(t, 2*time.Millisecond)
	report := regexp.MustCompile(`^PING_INLINE: [0-9.]+ requests per second, p50=[0-9.]+ msec$`)
	for _, tc := range []struct {
		args []string
		bar  *regexp.Regexp // a rendering of the bar
	}{
		{[]string{"-n", "400"}, regexp.MustCompile(`\rPING_INLINE: +[0-9]+% \|[^|]*\| \([0-9]+/400, [0-9]+ req/s\) \[[0-9]+s:[0-9]+s\]`)},
		{[]string{"--duration", "800ms"}, regexp.MustCompile(`\r[|/\\-] PING_INLINE: \([0-9]+, [0-9]+ req/s\) \[[0-9]+s\]`)},
	} {
		before := runtime.NumGoroutine()
		args := append([]string{"-h", "127.0.0.1", "-p", port, "--transport", "tcp", "-c", "1", "-t", "ping_inline", "-q"}, tc.args...)
		var out, errb bytes.Buffer
		if code := bench(context.Background(), args, &out, &errb, true); code != 0 {
			t.Fatalf("bench %q: exit %d, %s", args, code, errb.String())
		}
		if !tc.bar.MatchString(out.String()) {
			t.Errorf("bench %q: no progress bar like %s in %q", args, tc.bar, out.String())
		}
		lines := screen(out.String())
		if len(lines) != 1 || !report.MatchString(lines[0]) || !strings.HasPrefix(errb.String(), "server: 127.0.0.1:"+port+"; transport: tcp") {
			t.Errorf("bench %q: the terminal shows %q, stderr %q", args, lines, errb.String())
		}
		deadline := time.Now().Add(time.Minute)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			t.Errorf("bench %q: %d goroutines before, %d after", args, before, n)
		}
	}

	// --transport both names the transport in the bar.
	var out, errb bytes.Buffer
	bench(context.Background(), []string{"-h", "127.0.0.1", "-p", port, "--transport", "both", "-c", "1", "-t", "ping_inline", "-n", "300"}, &out, &errb, true)
	if !strings.Contains(out.String(), "\rPING_INLINE (tcp): ") {
		t.Errorf("--transport both: %q", out.String())
	}
}

// TestBenchRealServer: `rdmapool bench -h -p` against Debian's
// valkey-server over TCP runs every test, and the server holds what the
// writes put there.
func TestBenchRealServer(t *testing.T) {
	addr := testutil.ValkeyServer(t)
	host, port, _ := net.SplitHostPort(addr)
	code, stdout, stderr := runBench(t, "-h", host, "-p", port, "--transport", "tcp", "-n", "400", "-c", "4", "-P", "4", "-r", "100", "-q")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	for _, test := range []string{"PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "LPUSH", "LPOP", "MSET (10 keys)"} {
		if !strings.Contains("\n"+stdout, "\n"+test+": ") {
			t.Errorf("no %s line:\n%s", test, stdout)
		}
	}
	if !strings.HasPrefix(stderr, "server: "+addr+"; transport: tcp") {
		t.Errorf("stderr does not name the server and transport:\n%s", stderr)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := c.Write([]byte("DBSIZE\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, ":"))); err != nil || n == 0 {
		t.Errorf("DBSIZE after the run: %q, %v; want keys", line, err)
	}
}

// silentServer accepts connections and reads what they send, but never
// replies: a server that is stuck.
func silentServer(t *testing.T) (port string) {
	t.Helper()
	return strconv.Itoa(testutil.TCPServer(t, func(c net.Conn) { io.Copy(io.Discard, c) }).Port)
}

// TestBenchStalled: against a server that never replies, --timeout and
// --duration end the run with an error, and an interrupt stops it.
func TestBenchStalled(t *testing.T) {
	port := silentServer(t)
	base := []string{"-p", port, "-t", "ping_inline", "-n", "100", "-c", "2", "-q"}
	// Ended by the flag's limit, not by the default --timeout: the stall
	// the message gives is the one the run was stopped at, about the
	// flag's limit (or a second after --duration), where the default's
	// would be at least benchrun.DefaultTimeout.
	stalled := regexp.MustCompile(`^server: .*\nrdmapool bench: PING_INLINE: no reply from the server for ([0-9.]+m?s)\n$`)
	for _, args := range [][]string{{"--timeout", "300ms"}, {"--duration", "500ms"}} {
		code, _, stderr := runBench(t, append(base, args...)...)
		m := stalled.FindStringSubmatch(stderr)
		var stall time.Duration
		if m != nil {
			stall, _ = time.ParseDuration(m[1])
		}
		if code != 1 || m == nil || stall >= benchrun.DefaultTimeout {
			t.Errorf("bench %q: exit %d, stderr %q", args, code, stderr)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	var out, errb bytes.Buffer
	code := bench(ctx, base, &out, &errb, false)
	if code != 1 || !strings.HasSuffix(errb.String(), "\nrdmapool bench: interrupted\n") {
		t.Errorf("interrupted: exit %d, stderr %q", code, errb.String())
	}
}

// TestBenchSignal: SIGINT stops the binary stuck on a server that never
// replies.
func TestBenchSignal(t *testing.T) {
	bin := buildBinary(t)
	port := silentServer(t)
	cmd := exec.Command(bin, "bench", "-p", port, "-t", "ping_inline", "-n", "100", "-c", "2", "-q")
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waitFor(t, func() string { return stdout.String() + stderr.String() }, regexp.MustCompile(`transport: tcp`))
	time.Sleep(100 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.HasSuffix(stderr.String(), "\nrdmapool bench: interrupted\n") {
			t.Errorf("after SIGINT: %v, stderr %q", err, stderr.String())
		}
	case <-time.After(time.Minute):
		t.Fatal("rdmapool bench did not stop after SIGINT")
	}
}

// rawValkey starts Debian's valkey-server and connects to it; it returns
// the server's port, the connection (closed when the test ends) and a
// reader on it.
func rawValkey(t *testing.T) (port string, c net.Conn, r *bufio.Reader) {
	t.Helper()
	addr := testutil.ValkeyServer(t)
	_, port, _ = net.SplitHostPort(addr)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return port, c, bufio.NewReader(c)
}

// TestBenchServerErrors: as valkey-benchmark, the first error reply of a
// real valkey-server stops the run: "error from server: ..." on stderr,
// exit 1; so does a server at maxclients, which replies with an error and
// closes, and one that wants a password.
func TestBenchServerErrors(t *testing.T) {
	port, c, r := rawValkey(t)
	do := func(cmd string) {
		t.Helper()
		c.SetDeadline(time.Now().Add(time.Minute))
		if _, err := c.Write([]byte(cmd + "\r\n")); err != nil {
			t.Fatal(err)
		}
		if line, err := r.ReadString('\n'); err != nil || line[0] == '-' {
			t.Fatalf("%s: %q, %v", cmd, line, err)
		}
	}
	do("LPUSH key:__rand_int__ x")
	for _, tc := range []struct {
		setup string
		args  []string
		want  string
	}{
		{"", []string{"-t", "get", "-n", "100", "-c", "2"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"CONFIG SET maxclients 2", []string{"-t", "ping_mbulk", "-n", "100", "-c", "5"}, "ERR max number of clients reached"},
		{"CONFIG SET requirepass secret", []string{"-t", "set", "-n", "100", "-c", "1", "--csv"}, "NOAUTH Authentication required."},
	} {
		if tc.setup != "" {
			do(tc.setup)
		}
		code, stdout, stderr := runBench(t, append([]string{"-p", port, "--transport", "tcp", "-q"}, tc.args...)...)
		if code != 1 || !strings.HasSuffix("\n"+stderr, "\nrdmapool bench: error from server: "+tc.want+"\n") || strings.Contains(stdout, "requests per second") {
			t.Errorf("bench %q: exit %d, stdout %q, stderr %q", tc.args, code, stdout, stderr)
		}
	}
}

// TestBenchDurationAndRequests: --duration with -n stops at the first of
// the two; --duration alone runs at least a pipeline per client.
func TestBenchDurationAndRequests(t *testing.T) {
	requests := func(args ...string) []uint64 {
		t.Helper()
		code, stdout, stderr := runBench(t, append([]string{"-c", "2", "-t", "get,set", "--json"}, args...)...)
		var rep benchrun.Report
		if err := json.Unmarshal([]byte(stdout), &rep); code != 0 || err != nil || len(rep.Runs) != 1 {
			t.Fatalf("bench %q: exit %d, %v, stderr %s", args, code, err, stderr)
		}
		var n []uint64
		for _, r := range rep.Runs[0].Results {
			n = append(n, r.Requests)
		}
		return n
	}
	start := time.Now()
	if n := requests("-n", "50", "--duration", "2m"); len(n) != 2 || n[0] != 50 || n[1] != 50 || time.Since(start) >= 2*time.Minute {
		t.Errorf("-n 50 --duration 2m: %v requests after %v, want 50 each, before the duration", n, time.Since(start))
	}
	if n := requests("--duration", "1ns", "-P", "3"); len(n) != 2 || n[0] < 6 || n[1] < 6 {
		t.Errorf("--duration 1ns -P 3: %v requests, want at least a pipeline per client", n)
	}
}

// TestBenchWriteError: a report that cannot be written fails the run, in
// every format.
func TestBenchWriteError(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	testutil.Require(t, err == nil, "no /dev/full")
	defer full.Close()
	for _, format := range []string{"-q", "--csv", "--json"} {
		var errb bytes.Buffer
		code := bench(context.Background(), []string{"-n", "20", "-c", "1", "-t", "get", format}, full, &errb, false)
		if code != 1 || !strings.HasSuffix(errb.String(), "rdmapool bench: cannot write the report: write /dev/full: no space left on device\n") {
			t.Errorf("%s to /dev/full: exit %d, stderr %q", format, code, errb.String())
		}
	}
}

// TestBenchBothWarmup: --transport both warms each test up on each
// transport, a tenth of -n, unless --warmup is given; the server counts
// the requests (its RDMA run is refused: the valkey-server has TCP alone).
func TestBenchBothWarmup(t *testing.T) {
	port, c, r := rawValkey(t)
	calls := func(cmd string) int {
		t.Helper()
		c.SetDeadline(time.Now().Add(time.Minute))
		fmt.Fprintf(c, "INFO commandstats\r\n")
		head, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(strings.TrimSpace(head[1:]))
		body := make([]byte, n+2)
		if _, err := io.ReadFull(r, body); err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`cmdstat_` + cmd + `:calls=([0-9]+),`).FindSubmatch(body)
		if m == nil {
			return 0
		}
		v, _ := strconv.Atoi(string(m[1]))
		return v
	}
	for _, tc := range []struct {
		args []string
		want int
	}{
		{nil, 220},                        // 200 measured, 20 warming up
		{[]string{"--warmup", "0s"}, 200}, // none
	} {
		before := calls("get")
		runBench(t, append([]string{"-p", port, "--transport", "both", "-t", "get", "-n", "200", "-c", "2", "-q"}, tc.args...)...)
		if got := calls("get") - before; got != tc.want {
			t.Errorf("--transport both %q: %d GETs, want %d", tc.args, got, tc.want)
		}
	}
}
