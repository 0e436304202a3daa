package bench

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/stages"
	"github.com/seed54442f1a/rdmapool/qp"
)

// echoEnv makes the test binary an echo server ("tcp" or "rdma ADDR") that
// prints its address on stdout and serves until stdin closes.
const echoEnv = "RDMAPOOL_BENCH_ECHO"

// spinEnv, a duration, sets qp.Options.SpinWait for both ends of the RDMA
// connections (the child inherits it); unset, the default.
const spinEnv = "RDMAPOOL_BENCH_SPINWAIT"

// recvEnv, a byte count, sets qp.Options.RecvBufferSize for both ends of
// the RDMA connections (the child inherits it); unset, the default.
const recvEnv = "RDMAPOOL_BENCH_RECVBUF"

// keepaliveEnv, a duration, sets qp.Options.KeepaliveInterval for both ends
// of the RDMA connections (the child inherits it); unset, the default.
const keepaliveEnv = "RDMAPOOL_BENCH_KEEPALIVE"

// depthEnv, a count, sets qp.Options.QueueDepth for both ends of the RDMA
// connections (the child inherits it); unset, the default.
const depthEnv = "RDMAPOOL_BENCH_QUEUEDEPTH"

// rdmaOptions are the options of both ends of an RDMA connection.
func rdmaOptions() (*qp.Options, error) {
	var opts qp.Options
	for _, e := range []struct {
		name string
		set  func(string) error
	}{
		{spinEnv, func(v string) (err error) { opts.SpinWait, err = time.ParseDuration(v); return err }},
		{recvEnv, func(v string) (err error) { opts.RecvBufferSize, err = strconv.Atoi(v); return err }},
		{keepaliveEnv, func(v string) (err error) { opts.KeepaliveInterval, err = time.ParseDuration(v); return err }},
		{depthEnv, func(v string) (err error) { opts.QueueDepth, err = strconv.Atoi(v); return err }},
	} {
		if v := os.Getenv(e.name); v != "" {
			if err := e.set(v); err != nil {
				return nil, fmt.Errorf("%s: %w", e.name, err)
			}
		}
	}
	return &opts, nil
}

func TestMain(m *testing.M) {
	if v := os.Getenv(serviceEnv); v != "" { // listen_test.go
		os.Exit(serveService(v))
	}
	if v := os.Getenv(echoEnv); v != "" {
		code := echoServer(v)
		saveTimeline() // only with -tags rdmapool_stages
		os.Exit(code)
	}
	cleanup := startTimeline()
	code := m.Run()
	stages.Print(os.Stderr, "client") // only with -tags rdmapool_stages
	writeTimeline(os.Stderr)
	cleanup()
	os.Exit(code)
}

func echoServer(mode string) int {
	var l net.Listener
	var err error
	switch kind, addr, _ := strings.Cut(mode, " "); kind {
	case "tcp":
		l, err = net.Listen("tcp", "127.0.0.1:0")
	case "rdma":
		var opts *qp.Options
		if opts, err = rdmaOptions(); err == nil {
			l, err = qp.Listen(addr+":0", opts)
		}
	default:
		err = fmt.Errorf("unknown echo server %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(l.Addr())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		l.Close()
	}()
	for {
		c, err := l.Accept()
		if err != nil {
			stages.Print(os.Stderr, "server") // only with -tags rdmapool_stages
			return 0
		}
		go func() {
			io.CopyBuffer(c, c, make([]byte, 64<<10))
			c.Close()
		}()
	}
}

// startEcho runs an echo server ("tcp" or "rdma ADDR") in a child process
// and returns its address; it stops when the benchmark ends.
func startEcho(tb testing.TB, mode string) string {
	tb.Helper()
	addr, _ := startEchoProcess(tb, mode)
	return addr
}

// startEchoProcess is startEcho that also returns the child's pid.
func startEchoProcess(tb testing.TB, mode string) (addr string, pid int) {
	tb.Helper()
	return startChild(tb, echoEnv, mode)
}

// startChild runs this test binary as a server, with env set to mode, and
// returns the address it prints and its pid; it stops when the benchmark
// ends.
func startChild(tb testing.TB, env, mode string) (addr string, pid int) {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), env+"="+mode)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("the %s server did not start: %v", mode, err)
	}
	return strings.TrimSpace(line), cmd.Process.Pid
}
