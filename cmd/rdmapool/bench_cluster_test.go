package main

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// valkeyCluster starts three Debian valkey-servers in cluster mode, joins
// them with valkey-cli --cluster create (three primaries, no replicas), and
// returns their addresses once the cluster is up; they are killed when the
// test ends.
func valkeyCluster(t *testing.T) []string {
	t.Helper()
	server, err := exec.LookPath("valkey-server")
	testutil.Require(t, err == nil, "valkey-server is not installed (scripts/deps.sh test installs it from bookworm-backports)")
	cli, err := exec.LookPath("valkey-cli")
	testutil.Require(t, err == nil, "valkey-cli is not installed")
	dir := t.TempDir()
	var addrs []string
	for i := range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		_, port, _ := net.SplitHostPort(addr)
		cmd := exec.Command(server, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--protected-mode", "no",
			"--cluster-enabled", "yes", "--cluster-config-file", fmt.Sprintf("%s/nodes-%d.conf", dir, i), "--dir", dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		addrs = append(addrs, addr)
	}
	for _, a := range addrs {
		for i := 0; ; i++ {
			c, err := net.Dial("tcp", a)
			if err == nil {
				c.Close()
				break
			}
			if i > 200 {
				t.Fatalf("valkey-server did not start on %s", a)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	out, err := exec.Command(cli, append(append([]string{"--cluster", "create"}, addrs...), "--cluster-replicas", "0", "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("valkey-cli --cluster create: %v\n%s", err, out)
	}
	_, port, _ := net.SplitHostPort(addrs[0])
	deadline := time.Now().Add(60 * time.Second) // a loaded machine
	for {
		ok := true
		for _, a := range addrs {
			_, p, _ := net.SplitHostPort(a)
			info, _ := exec.Command(cli, "-p", p, "CLUSTER", "INFO").Output()
			ok = ok && strings.Contains(string(info), "cluster_state:ok")
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			info, _ := exec.Command(cli, "-p", port, "CLUSTER", "INFO").Output()
			t.Fatalf("the cluster is not up: %s", info)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return addrs
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
