package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/qp"
)

func TestServeBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--nope"}, "flag provided but not defined: -nope"},
		{[]string{"--port", "x"}, `invalid value "x" for flag -port`},
		{[]string{"--port", "70000"}, "--port 70000 is not a port"},
		{[]string{"--rdma-port", "-1"}, "--rdma-port -1 is not a port"},
		{[]string{"--rdma-rx-size", "1kb"}, "--rdma-rx-size 1024 is out of range"},
		{[]string{"--rdma-rx-size", "32mb"}, "--rdma-rx-size 33554432 is out of range (4kb to 16mb)"},
		{[]string{"--rdma-rx-size", "lots"}, `invalid value "lots" for flag -rdma-rx-size`},
		{[]string{"--spin-wait", "soon"}, `invalid value "soon" for flag -spin-wait`},
		{[]string{"--tcp-engine", "epoll"}, `--tcp-engine "epoll": want gnet or netpoll`},
		{[]string{"--databases", "0"}, "--databases 0 is out of range (1 to 65536)"},
		{[]string{"--databases", "65537"}, "--databases 65537 is out of range"},
		{[]string{"--port", "0"}, "nothing to serve"},
		{[]string{"--bind", " "}, "--bind is empty"},
		{[]string{"extra"}, `unexpected argument "extra"`},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"serve"}, tc.args...), &out, &errb)
		stderr := errb.String()
		if code != 2 || !strings.Contains(stderr, tc.want) || strings.Count(stderr, "\n") != 1 ||
			!strings.HasPrefix(stderr, "rdmapool serve: ") || !strings.HasSuffix(stderr, "(rdmapool serve --help for usage)\n") || out.Len() != 0 {
			t.Errorf("serve %q: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and one line with %q and where the usage is", tc.args, code, out.String(), stderr, tc.want)
		}
		if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic") {
			t.Errorf("serve %q: a stack trace:\n%s", tc.args, stderr)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"serve", "--help"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "usage: rdmapool serve") ||
		!strings.Contains(out.String(), "-rdma-bind") || errb.Len() != 0 {
		t.Errorf("serve --help: exit %d, stdout %s, stderr %s", code, out.String(), errb.String())
	}
}

func TestMemSize(t *testing.T) {
	for in, want := range map[string]int64{"4096": 4096, "1mb": 1 << 20, "512KB": 512 << 10, "2k": 2000, "1m": 1e6, "1gb": 1 << 30, "7b": 7} {
		var m memSize
		if err := m.Set(in); err != nil || int64(m) != want {
			t.Errorf("memSize %q: %d, %v; want %d", in, m, err, want)
		}
	}
	for _, in := range []string{"", "mb", "-1", "1tb", "1.5mb"} {
		var m memSize
		if err := m.Set(in); err == nil {
			t.Errorf("memSize %q: no error", in)
		}
	}
}

// freePort returns a TCP port of 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// syncBuffer is a bytes.Buffer that serve may write while the test reads.
type syncBuffer = testutil.SyncBuffer

// waitFor waits until f's output matches re, and returns the submatches.
func waitFor(t *testing.T, f func() string, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(f()); m != nil {
			return m
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %q in:\n%s", re, f())
	return nil
}

// talk checks a few commands over c.
func talk(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	io.WriteString(c, "PING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
	want := "+PONG\r\n+OK\r\n$5\r\nvalue\r\n"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(r, got); err != nil || string(got) != want {
		t.Errorf("replies %q, %v; want %q", got, err, want)
	}
}

// TestServeInProcess runs serve with RDMA asked for: without RDMA it says
// why and serves TCP; with it (in the VM) it serves both. It stops on a
// signal.
func TestServeInProcess(t *testing.T) {
	port := freePort(t)
	s := serveInProcess("--port", strconv.Itoa(port), "--rdma-bind", "auto", "--rdma-port", "0")
	stdout, stderr := &s.stdout, &s.stderr
	waitFor(t, stdout.String, regexp.MustCompile(`listening on tcp 127\.0\.0\.1:`+strconv.Itoa(port)+"\n"))
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	talk(t, c)

	out := func() string { return stdout.String() + stderr.String() }
	m := waitFor(t, out, regexp.MustCompile(`listening on rdma (\S+)\n|RDMA is off: (.*)\n`))
	conns := 1
	if m[1] != "" {
		conns++
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rc, err := qp.Dial(ctx, m[1], nil)
		if err != nil {
			t.Fatalf("dialing the RDMA listener %s: %v", m[1], err)
		}
		defer rc.Close()
		talk(t, rc)
	} else {
		t.Logf("RDMA not served here: %s", m[2])
		if !strings.HasSuffix(m[2], "; serving TCP only") {
			t.Errorf("the RDMA message does not say that TCP goes on: %q", m[0])
		}
	}

	s.terminate(t)
	want := fmt.Sprintf("received terminated, shutting down\nconnections served: %d, commands: %d\n", conns, 3*conns)
	if s := stdout.String(); !strings.Contains(s, want) {
		t.Errorf("stdout:\n%s", s)
	}
}

func TestServePortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out, errb bytes.Buffer
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	if code := serve([]string{"--port", port}, &out, &errb, nil); code != 1 || !strings.Contains(errb.String(), "address already in use") {
		t.Errorf("port in use: exit %d, stderr %q", code, errb.String())
	}
}

// servedBinary is a running `rdmapool serve`.
type servedBinary struct {
	cmd            *exec.Cmd
	stdout, stderr syncBuffer
	exited         chan error
}

func startBinary(t *testing.T, bin string, env []string, args ...string) *servedBinary {
	t.Helper()
	b := &servedBinary{cmd: exec.Command(bin, append([]string{"serve"}, args...)...), exited: make(chan error, 1)}
	b.cmd.Env = append(os.Environ(), env...)
	b.cmd.Stdout, b.cmd.Stderr = &b.stdout, &b.stderr
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { b.exited <- b.cmd.Wait() }()
	t.Cleanup(func() { b.cmd.Process.Kill() })
	return b
}

// stop sends SIGTERM and checks that the server exits 0.
func (b *servedBinary) stop(t *testing.T) {
	t.Helper()
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-b.exited:
		if err != nil {
			t.Errorf("rdmapool serve after SIGTERM: %v\nstderr:\n%s", err, b.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("rdmapool serve did not stop after SIGTERM")
	}
	t.Logf("stdout:\n%sstderr:\n%s", b.stdout.String(), b.stderr.String())
	for _, bad := range []string{"panic", "goroutine "} {
		if strings.Contains(b.stderr.String(), bad) {
			t.Errorf("stderr has %q", bad)
		}
	}
}

// TestServeBinary builds rdmapool, runs `rdmapool serve`, talks to it and
// stops it with SIGTERM, with a client still connected.
func TestServeBinary(t *testing.T) {
	bin := buildBinary(t)
	port := strconv.Itoa(freePort(t))
	b := startBinary(t, bin, nil, "--bind", "127.0.0.1", "--port", port, "--rdma-bind", "auto", "--rdma-port", "0")
	waitFor(t, b.stdout.String, regexp.MustCompile(`listening on tcp 127\.0\.0\.1:`+port+"\n"))
	c, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	talk(t, c)
	b.stop(t)
	if s := b.stdout.String(); !strings.Contains(s, "received terminated, shutting down\n") || !strings.Contains(s, "connections served: 1, commands: 3\n") {
		t.Errorf("stdout:\n%s", s)
	}
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the client's connection is still open")
	}
}

// TestServeWithoutRDMALibraries: RDMA asked for, its libraries missing
// (RDMAPOOL_LIBRARY_PATH names an empty directory): serve says so and
// serves TCP.
func TestServeWithoutRDMALibraries(t *testing.T) {
	bin := buildBinary(t)
	port := strconv.Itoa(freePort(t))
	b := startBinary(t, bin, []string{"RDMAPOOL_LIBRARY_PATH=" + t.TempDir()}, "--port", port, "--rdma-bind", "127.0.0.1")
	waitFor(t, b.stdout.String, regexp.MustCompile(`listening on tcp 127\.0\.0\.1:`+port+"\n"))
	waitFor(t, b.stderr.String, regexp.MustCompile(`rdmapool serve: RDMA is unavailable: listen rdma 127\.0\.0\.1:6379: rdmapool: cannot load libibverbs: .*; serving TCP only\n`))
	c, err := net.Dial("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	talk(t, c)
	b.stop(t)
}

// With several --rdma-bind addresses, one that cannot be served does not
// make the message say TCP only while another serves RDMA.
func TestServeOneRDMAAddressFails(t *testing.T) {
	port := freePort(t)
	// 192.0.2.1 (TEST-NET-1) is no address of this machine.
	s := serveInProcess("--port", strconv.Itoa(port), "--rdma-bind", "auto 192.0.2.1", "--rdma-port", "0")
	stdout, stderr := &s.stdout, &s.stderr
	waitFor(t, stdout.String, regexp.MustCompile(`listening on tcp 127\.0\.0\.1:`+strconv.Itoa(port)+"\n"))
	waitFor(t, stderr.String, regexp.MustCompile(`192\.0\.2\.1.*\n`))
	served := strings.Contains(stdout.String(), "listening on rdma ")
	t.Logf("RDMA served on another address: %v; stderr:\n%s", served, stderr.String())
	want := "; serving TCP only\n"
	if served {
		want = "; serving RDMA on the other addresses\n"
	}
	for _, line := range strings.SplitAfter(stderr.String(), "\n") {
		if line != "" && !strings.HasSuffix(line, want) {
			t.Errorf("RDMA served on another address: %v; the message does not end in %q: %q", served, want, line)
		}
	}
	s.terminate(t)
}

// inProcess is serve running in the test's process.
type inProcess struct {
	stdout, stderr syncBuffer
	stop           chan os.Signal
	code           chan int
}

func serveInProcess(args ...string) *inProcess {
	s := &inProcess{stop: make(chan os.Signal, 1), code: make(chan int, 1)}
	go func() { s.code <- serve(args, &s.stdout, &s.stderr, s.stop) }()
	return s
}

// terminate sends serve SIGTERM and wants it to exit 0.
func (s *inProcess) terminate(t *testing.T) {
	t.Helper()
	s.stop <- syscall.SIGTERM
	select {
	case n := <-s.code:
		if n != 0 {
			t.Errorf("exit %d after SIGTERM", n)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop after SIGTERM")
	}
}
