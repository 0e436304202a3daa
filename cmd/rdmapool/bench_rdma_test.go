package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/seed54442f1a/rdmapool/loader/rdmatest"
)

// TestBenchRDMAFlags: over RDMA to the embedded server, every test runs,
// and -a, -3, a command line, -k 0 and -I work as over TCP (the VM runs
// it: make test-rxe VM_PKGS=./cmd/rdmapool VM_RUN=TestBenchRDMAFlags).
func TestBenchRDMAFlags(t *testing.T) {
	rdmatest.Require(t)
	code, stdout, stderr := runBench(t, "--transport", "rdma", "-a", "pw", "-3", "-n", "60", "-c", "2", "-P", "3", "-r", "100", "-q")
	if got := quietTests(stdout); code != 0 || strings.Join(got, "|") != strings.Join(allTests, "|") || !strings.Contains(stderr, "transport: rdma") {
		t.Errorf("every test: exit %d, tests %q, stderr %s", code, got, stderr)
	}
	code, stdout, stderr = runBench(t, "--transport", "rdma", "-n", "50", "-c", "2", "-q", "-r", "10", "--", "SET", "key:__rand_int__", "v")
	if code != 0 || !strings.HasPrefix(stdout, "SET key:__rand_int__ v: ") {
		t.Errorf("a command: exit %d, %q, %s", code, stdout, stderr)
	}
	code, stdout, stderr = runBench(t, "--transport", "rdma", "-k", "0", "-a", "pw", "-n", "20", "-c", "2", "-t", "ping_mbulk")
	if code != 0 || !strings.Contains(stdout, "  keep alive: 0\n") || !strings.Contains(stdout, "20 requests completed") {
		t.Errorf("-k 0: exit %d, stdout %s, stderr %s", code, stdout, stderr)
	}
	// -I holds its connections until a signal (here its context's end),
	// given once it says which transport they use.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb syncBuffer
	exited := make(chan int, 1)
	go func() { exited <- bench(ctx, []string{"--transport", "rdma", "-I", "-c", "4"}, &out, &errb, false) }()
	waitFor(t, func() string { return out.String() + errb.String() }, regexp.MustCompile(`transport: \w+|rdmapool bench: `))
	cancel()
	if code := <-exited; code != 0 ||
		!strings.Contains(out.String(), "transport: rdma") || !strings.HasPrefix(out.String(), "Creating 4 idle connections") {
		t.Errorf("-I: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// TestBenchEmbeddedClusterRDMA: `bench --cluster` against the embedded
// cluster, over RDMA (each primary at its RDMA address) and over TCP, in
// the VM (make test-rxe VM_PKGS=./cmd/rdmapool
// VM_RUN=TestBenchEmbeddedClusterRDMA).
func TestBenchEmbeddedClusterRDMA(t *testing.T) {
	rdmatest.Require(t)
	// --transport tcp starts no RDMA listener: no primary has an RDMA address.
	for tr, rdmaAddrs := range map[string]int{"rdma": 3, "tcp": 0} {
		code, stdout, stderr := runBench(t, "--cluster", "--transport", tr, "-n", "300", "-c", "3", "-P", "4", "-r", "1000", "-t", "set,get,lpush", "-q")
		if code != 0 || strings.Count(stderr, " (rdma ") != rdmaAddrs || !strings.Contains(stderr, "server: embedded cluster; transport: "+tr+" ") ||
			strings.Join(quietTests(stdout), "|") != "SET|GET|LPUSH" {
			t.Errorf("--transport %s: exit %d, stdout %s, stderr %s", tr, code, stdout, stderr)
		}
	}
}
