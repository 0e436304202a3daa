package testutil

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ValkeyCluster is a Valkey Cluster of Debian's valkey-server processes
// on loopback, each in a temporary directory of its own, started by
// StartValkeyCluster and killed when the test ends.
type ValkeyCluster struct {
	tb    testing.TB
	cli   string
	Nodes []*ValkeyNode
	// How the nodes start: Debian's valkey-server on loopback unless
	// StartValkeyRDMACluster (valkey_rdma.go) says otherwise.
	bin       string
	host      string // the address the nodes bind and announce
	noCluster bool   // a plain server (StartValkeyRDMA)
	// rdma, if set, gives the node on TCP port its RDMA address (host:port)
	// and the arguments that make it serve there.
	rdma func(port int) (addr string, args []string)
}

// ValkeyNode is one valkey-server of a ValkeyCluster.
type ValkeyNode struct {
	Addr string
	// RDMAAddr is where the node serves RDMA (host:port), or empty.
	RDMAAddr string
	Dir      string
	cmd      *exec.Cmd
	done     chan struct{}
}

// NodeTimeout is the cluster-node-timeout of a ValkeyCluster: a master
// unreachable for that long is failed over to its replica. At 1 s, a
// loaded 2-core machine delayed the nodes' pings enough for a failover
// nobody asked for, in the middle of a resharding.
const NodeTimeout = 5 * time.Second

// StartValkeyCluster starts masters*(1+replicas) valkey-server processes
// in cluster mode, joins them with `valkey-cli --cluster create`, and waits
// (60 s at most) until every node reports cluster_state:ok, agrees on the
// slots and every replica's link to its master is up. Without valkey-server
// or valkey-cli the test fails in CI and skips otherwise.
func StartValkeyCluster(tb testing.TB, masters, replicas int) *ValkeyCluster {
	tb.Helper()
	c := StartValkeyClusterNodes(tb, masters*(1+replicas))
	c.create(replicas)
	return c
}

// create joins c's nodes into one cluster with valkey-cli --cluster create
// and waits until it is healthy.
func (c *ValkeyCluster) create(replicas int) {
	c.tb.Helper()
	args := []string{"--cluster", "create"}
	args = append(args, c.Addrs()...)
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	if out, err := c.CLI(60*time.Second, args...); err != nil {
		c.tb.Fatalf("valkey-cli --cluster create: %v\n%s", err, out)
	}
	c.WaitHealthy(60 * time.Second) // a loaded machine
}

// StartValkeyClusterNodes starts n valkey-server processes in cluster
// mode, each a cluster of its own that serves no slot (CLUSTER KEYSLOT
// answers, a key's command does not).
func StartValkeyClusterNodes(tb testing.TB, n int) *ValkeyCluster {
	tb.Helper()
	bin, err := exec.LookPath("valkey-server")
	Require(tb, err == nil, "valkey-server is not installed (scripts/deps.sh test installs it from bookworm-backports)")
	cli, err := exec.LookPath("valkey-cli")
	Require(tb, err == nil, "valkey-cli is not installed (it comes with valkey-server's package, valkey-tools)")
	c := &ValkeyCluster{tb: tb, cli: cli, bin: bin, host: "127.0.0.1"}
	c.startNodes(n)
	return c
}

// startNodes starts n nodes as c says, killed when the test ends.
func (c *ValkeyCluster) startNodes(n int) {
	tb := c.tb
	for i := range n {
		c.Nodes = append(c.Nodes, c.startNode(c.bin, i))
	}
	tb.Cleanup(func() {
		for _, nd := range c.Nodes {
			nd.cmd.Process.Kill()
			<-nd.done
		}
		if tb.Failed() {
			for _, nd := range c.Nodes {
				b, _ := os.ReadFile(filepath.Join(nd.Dir, "log"))
				tb.Logf("log of %s (end):\n%s", nd.Addr, logEnd(b))
			}
		}
	})
}

func (c *ValkeyCluster) startNode(bin string, i int) *ValkeyNode {
	tb := c.tb
	for try := 0; ; try++ {
		port := freePortPair(tb, c.host)
		dir := tb.TempDir()
		nd := &ValkeyNode{Addr: net.JoinHostPort(c.host, strconv.Itoa(port)), Dir: dir, done: make(chan struct{})}
		args := []string{
			"--port", strconv.Itoa(port), "--bind", c.host, "--protected-mode", "no",
			"--dir", dir, "--logfile", filepath.Join(dir, "log"),
			"--save", "", "--appendonly", "no",
		}
		if !c.noCluster {
			args = append(args,
				"--cluster-enabled", "yes", "--cluster-config-file", filepath.Join(dir, "nodes.conf"),
				"--cluster-node-timeout", strconv.Itoa(int(NodeTimeout/time.Millisecond)),
				"--cluster-replica-validity-factor", "0",
			)
		}
		if c.rdma != nil {
			var more []string
			nd.RDMAAddr, more = c.rdma(port)
			args = append(args, more...)
		}
		nd.cmd = exec.Command(bin, args...)
		// What the process itself prints (libc's abort message) is not in
		// its log; Died reads both.
		if f, err := os.Create(filepath.Join(dir, "stderr")); err == nil {
			nd.cmd.Stdout, nd.cmd.Stderr = f, f
			defer f.Close() // the child has its own copy
		}
		if err := nd.cmd.Start(); err != nil {
			tb.Fatal(err)
		}
		go func() { nd.cmd.Wait(); close(nd.done) }()
		err := waitListening(nd.Addr, nd.done, 10*time.Second)
		if err == nil && nd.RDMAAddr != "" {
			err = waitLogged(filepath.Join(dir, "log"), "Ready to accept connections rdma", nd.done, 10*time.Second)
		}
		if err == nil {
			return nd
		} else if try >= 3 {
			b, _ := os.ReadFile(filepath.Join(dir, "log"))
			tb.Fatalf("valkey-server %d on %s: %v\n%s", i, nd.Addr, err, b)
		}
		nd.cmd.Process.Kill()
		<-nd.done
	}
}

// freePortPair returns a port p such that p and p+10000 (the cluster bus)
// are free on host now.
func freePortPair(tb testing.TB, host string) int {
	for range 1000 {
		p := 20000 + rand.IntN(35000)
		l1, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			continue
		}
		l2, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p+10000)))
		l1.Close()
		if err != nil {
			continue
		}
		l2.Close()
		return p
	}
	tb.Fatalf("no free pair of ports on %s", host)
	return 0
}

func waitListening(addr string, exited <-chan struct{}, timeout time.Duration) error {
	end := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("exited before it listened")
		default:
		}
		if time.Now().After(end) {
			return fmt.Errorf("not listening after %v: %w", timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Addrs returns every node's address, host:port.
func (c *ValkeyCluster) Addrs() []string {
	var a []string
	for _, nd := range c.Nodes {
		a = append(a, nd.Addr)
	}
	return a
}

// Node returns the node at addr, or nil.
func (c *ValkeyCluster) Node(addr string) *ValkeyNode {
	for _, nd := range c.Nodes {
		if nd.Addr == addr {
			return nd
		}
	}
	return nil
}

// Alive reports whether the node's process is running.
func (nd *ValkeyNode) Alive() bool {
	select {
	case <-nd.done:
		return false
	default:
		return true
	}
}

// Kill kills the node's process with SIGKILL and waits for it to exit.
func (nd *ValkeyNode) Kill() {
	nd.cmd.Process.Kill()
	<-nd.done
}

// CLI runs valkey-cli with args, for timeout at most, and returns its
// output.
func (c *ValkeyCluster) CLI(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, c.cli, args...).CombinedOutput()
	if ctx.Err() != nil {
		err = fmt.Errorf("valkey-cli %s: no answer in %v", strings.Join(args, " "), timeout)
	}
	return string(out), err
}

// Call runs one command on the node at addr with valkey-cli and returns
// its reply as valkey-cli prints it (raw).
func (c *ValkeyCluster) Call(addr string, args ...string) (string, error) {
	host, port, _ := net.SplitHostPort(addr)
	out, err := c.CLI(10*time.Second, append([]string{"-h", host, "-p", port, "--raw"}, args...)...)
	return strings.TrimSpace(out), err
}

// ClusterNode is a line of CLUSTER NODES.
type ClusterNode struct {
	ID, Addr, MasterID string
	Master, Failed     bool
	Slots              int      // how many slots it serves
	Ranges             [][2]int // the slots it serves, first and last of each range
}

// ClusterNodes returns the cluster as the node at addr sees it.
func (c *ValkeyCluster) ClusterNodes(addr string) ([]ClusterNode, error) {
	out, err := c.Call(addr, "cluster", "nodes")
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, out)
	}
	var ns []ClusterNode
	for line := range strings.SplitSeq(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		n := ClusterNode{ID: f[0], Addr: f[1], MasterID: f[3]}
		if i := strings.IndexAny(n.Addr, "@,"); i >= 0 {
			n.Addr = n.Addr[:i]
		}
		n.Master = strings.Contains(f[2], "master")
		n.Failed = strings.Contains(f[2], "fail") && !strings.Contains(f[2], "fail?")
		for _, r := range f[8:] {
			if r[0] == '[' {
				continue // a slot in migration
			}
			lo, hi, ok := strings.Cut(r, "-")
			a, _ := strconv.Atoi(lo)
			b := a
			if ok {
				b, _ = strconv.Atoi(hi)
			}
			n.Slots += b - a + 1
			n.Ranges = append(n.Ranges, [2]int{a, b})
		}
		ns = append(ns, n)
	}
	return ns, nil
}

// Masters returns the masters that serve slots, as the first live node
// sees them.
func (c *ValkeyCluster) Masters() []ClusterNode {
	c.tb.Helper()
	for _, nd := range c.Nodes {
		if !nd.Alive() {
			continue
		}
		ns, err := c.ClusterNodes(nd.Addr)
		if err != nil {
			c.tb.Fatal(err)
		}
		var ms []ClusterNode
		for _, n := range ns {
			if n.Master && !n.Failed && n.Slots > 0 {
				ms = append(ms, n)
			}
		}
		return ms
	}
	c.tb.Fatal("no node alive")
	return nil
}

// WaitHealthy waits, for timeout at most, until every live node reports
// cluster_state:ok with all 16384 slots, they agree on who serves how
// many slots, and every live replica's link to its master is up.
func (c *ValkeyCluster) WaitHealthy(timeout time.Duration) {
	c.tb.Helper()
	end := time.Now().Add(timeout)
	var why string
	for {
		if why = c.unhealthy(); why == "" {
			return
		}
		if time.Now().After(end) {
			c.tb.Fatalf("cluster not healthy after %v: %s", timeout, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (c *ValkeyCluster) unhealthy() string {
	var view string
	for _, nd := range c.Nodes {
		if !nd.Alive() {
			continue
		}
		info, err := c.Call(nd.Addr, "cluster", "info")
		if err != nil {
			return fmt.Sprintf("%s: %v", nd.Addr, err)
		}
		if !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_slots_ok:16384") {
			return fmt.Sprintf("%s: %s", nd.Addr, firstLines(info, 3))
		}
		ns, err := c.ClusterNodes(nd.Addr)
		if err != nil {
			return err.Error()
		}
		var ms []string
		for _, n := range ns {
			if n.Master && n.Slots > 0 && !n.Failed {
				ms = append(ms, fmt.Sprintf("%s=%d", n.Addr, n.Slots))
			}
		}
		slices.Sort(ms)
		if v := strings.Join(ms, " "); view == "" {
			view = v
		} else if view != v {
			return fmt.Sprintf("nodes disagree: %q and %q", view, v)
		}
		repl, err := c.Call(nd.Addr, "info", "replication")
		if err != nil {
			return err.Error()
		}
		if strings.Contains(repl, "role:slave") && !strings.Contains(repl, "master_link_status:up") {
			return fmt.Sprintf("%s: replica's link is not up", nd.Addr)
		}
	}
	return ""
}

func firstLines(s string, n int) string {
	ls := strings.SplitN(s, "\n", n+1)
	return strings.Join(ls[:min(n, len(ls))], " ")
}
