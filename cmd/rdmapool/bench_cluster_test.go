package main

import (
	"net"
	"strings"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// valkeyCluster starts three Debian valkey-servers as a cluster of three
// primaries without replicas and returns their addresses once it is up.
func valkeyCluster(t *testing.T) []string {
	t.Helper()
	return testutil.StartValkeyCluster(t, 3, 0).Addrs()
}

// TestBenchCluster: --cluster against a three-primary valkey-server
// cluster names the primaries, runs every test with keys on each, and
// refuses a command without {tag}.
func TestBenchCluster(t *testing.T) {
	addrs := valkeyCluster(t)
	host, port, _ := net.SplitHostPort(addrs[2])
	code, stdout, stderr := runBench(t, "--cluster", "-h", host, "-p", port, "--transport", "tcp", "-n", "120", "-c", "3", "-r", "1000", "-t", "set,get,lpush,mset")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s\n%s", code, stderr, stdout)
	}
	for _, want := range []string{"Cluster has 3 primary nodes:\n\nPrimary 0: ", "  cluster mode: yes (3 primaries)\n", "  node [2] configuration:\n    save: NONE\n    appendonly: no\n",
		"====== MSET (10 keys) ======"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	for _, a := range addrs {
		_, p, _ := net.SplitHostPort(a)
		keys := valkeyCLI(t, p, "KEYS", "*")
		if !strings.Contains(keys, "key:{") || !strings.Contains(keys, "mylist:{") {
			t.Errorf("%s holds %q", a, keys)
		}
	}
	// With -q, the primaries go to stderr with the transport.
	code, stdout, stderr = runBench(t, "--cluster", "-p", port, "-n", "50", "-c", "3", "-q", "--", "SET", "k:{tag}:__rand_int__", "v")
	if code != 0 || !strings.HasPrefix(stderr, "Cluster has 3 primary nodes:") || !strings.HasPrefix(stdout, "SET k:{tag}:__rand_int__ v: ") {
		t.Errorf("a command with {tag}: exit %d, stdout %s, stderr %s", code, stdout, stderr)
	}
	code, _, stderr = runBench(t, "--cluster", "-p", port, "-n", "50", "SET", "k", "v")
	if code != 2 || !strings.Contains(stderr, "must put {tag} in its key") {
		t.Errorf("a command without {tag}: exit %d, %s", code, stderr)
	}
	code, _, stderr = runBench(t, "--cluster", "-p", port, "-n", "50", "-c", "2")
	if code != 2 || !strings.Contains(stderr, "-c 2: a cluster of 3 primaries needs at least one client for each") {
		t.Errorf("-c 2: exit %d, %s", code, stderr)
	}
	// A node that is not in cluster mode.
	vport := valkeyPort(t)
	code, _, stderr = runBench(t, "--cluster", "-p", vport, "-n", "50")
	if code != 1 || !strings.Contains(stderr, "cannot fetch the cluster's configuration") || !strings.Contains(stderr, "cluster support disabled") {
		t.Errorf("not a cluster: exit %d, %s", code, stderr)
	}
}

// TestBenchEmbeddedCluster: --cluster with neither -h nor -p starts an
// embedded cluster of --cluster-nodes nodes and runs against it as
// against a real one.
func TestBenchEmbeddedCluster(t *testing.T) {
	code, stdout, stderr := runBench(t, "--cluster", "--cluster-nodes", "2", "--transport", "tcp", "-n", "200", "-c", "4", "-r", "1000", "-t", "set,get,mset")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s\n%s", code, stderr, stdout)
	}
	for _, want := range []string{"Cluster has 2 primary nodes:\n\nPrimary 0: ", "server: embedded cluster; transport: tcp (--transport tcp)", "  cluster mode: yes (2 primaries)\n",
		"====== MSET (10 keys) ======", "200 requests completed"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}
