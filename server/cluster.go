package server

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// NumSlots is the number of hash slots of a Valkey Cluster.
const NumSlots = 16384

// SlotRange is the hash slots First to Last, both included.
type SlotRange struct{ First, Last int }

// Cluster is the topology of a Valkey Cluster of Servers in one process:
// each node is a Server (NewServer) that serves some of the 16384 hash
// slots and answers MOVED for the keys of the others' slots. The nodes
// share the Cluster, so there is no gossip, no replica and no failover; a
// slot moves from one node to another by MigrateSlot, MoveKeys and
// FinishMigration, during which the nodes answer ASK as valkey's do.
//
// A command with keys in more than one slot is refused (CROSSSLOT), as is
// one on a slot that no node serves (CLUSTERDOWN). A node answers CLUSTER
// INFO, MYID, SLOTS, SHARDS, NODES, KEYSLOT, COUNTKEYSINSLOT and
// GETKEYSINSLOT, and ASKING.
type Cluster struct {
	mu    sync.Mutex // nodes, epoch, and the owners' and migrations' changes
	nodes []*clusterNode
	epoch int64

	owner  [NumSlots]atomic.Pointer[clusterNode]
	target [NumSlots]atomic.Pointer[clusterNode] // a slot in migration: where to
	// slotMu is held for reading by each command on the slot, from its
	// routing to its end, and for writing while keys of the slot move or
	// its owner changes: a command never runs on a node the slot has left.
	slotMu [NumSlots]sync.RWMutex
	moving sync.Mutex // one MoveKeys or FinishMigration at a time

	asks, moved atomic.Uint64 // redirections answered, for tests

	// hub: the nodes share their subscriptions, so a PUBLISH on one
	// reaches the subscribers of all, as valkey's cluster bus carries it.
	hub *hub
}

type clusterNode struct {
	cl    *Cluster
	id    string
	host  string
	port  int
	epoch int64
	srv   *Server
}

func (n *clusterNode) addr() string { return net.JoinHostPort(n.host, strconv.Itoa(n.port)) }

// NewCluster returns a Cluster with no node.
func NewCluster() *Cluster { return &Cluster{hub: newHub()} }

// AddNode adds a node that clients reach at addr (host:port, as CLUSTER
// SLOTS and MOVED announce it) and that serves the slots of ranges, and
// returns its ID. Give the ID to NewServer.
func (cl *Cluster) AddNode(addr string, ranges ...SlotRange) (string, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("server: cluster node address %q: %w", addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port <= 0 || port > 65535 {
		return "", fmt.Errorf("server: cluster node address %q: bad port", addr)
	}
	var b [20]byte
	rand.Read(b[:])
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for _, r := range ranges {
		if r.First < 0 || r.Last >= NumSlots || r.First > r.Last {
			return "", fmt.Errorf("server: cluster node %s: slot range %d-%d is not within 0-%d", addr, r.First, r.Last, NumSlots-1)
		}
		for s := r.First; s <= r.Last; s++ {
			if o := cl.owner[s].Load(); o != nil {
				return "", fmt.Errorf("server: cluster node %s: slot %d is already %s's", addr, s, o.addr())
			}
		}
	}
	for _, n := range cl.nodes {
		if n.addr() == addr {
			return "", fmt.Errorf("server: cluster node %s added twice", addr)
		}
	}
	cl.epoch++
	n := &clusterNode{cl: cl, id: hex.EncodeToString(b[:]), host: host, port: port, epoch: cl.epoch}
	cl.nodes = append(cl.nodes, n)
	for _, r := range ranges {
		for s := r.First; s <= r.Last; s++ {
			cl.owner[s].Store(n)
		}
	}
	return n.id, nil
}

// NewServer returns the Server of the node id, as New does with opts.
// Serve it on a listener at the node's address.
func (cl *Cluster) NewServer(id string, opts *Options) (*Server, error) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	n := cl.node(id)
	if n == nil {
		return nil, fmt.Errorf("server: cluster has no node %q", id)
	}
	if n.srv != nil {
		return nil, fmt.Errorf("server: cluster node %s has a Server already", id)
	}
	n.srv = New(opts)
	n.srv.cluster = n
	n.srv.hub = cl.hub
	return n.srv, nil
}

func (cl *Cluster) node(id string) *clusterNode {
	for _, n := range cl.nodes {
		if n.id == id {
			return n
		}
	}
	return nil
}

// Owner returns the ID of the node that serves slot, or "".
func (cl *Cluster) Owner(slot int) string {
	if slot < 0 || slot >= NumSlots {
		return ""
	}
	if n := cl.owner[slot].Load(); n != nil {
		return n.id
	}
	return ""
}

// MigrateSlot starts moving slot to the node to: the owner then answers
// ASK for the keys of the slot it no longer holds, and to serves them to
// a client that sent ASKING. MoveKeys moves the keys, FinishMigration
// makes to the owner.
func (cl *Cluster) MigrateSlot(slot int, to string) error {
	if slot < 0 || slot >= NumSlots {
		return fmt.Errorf("server: slot %d is not within 0-%d", slot, NumSlots-1)
	}
	cl.mu.Lock()
	defer cl.mu.Unlock()
	dst := cl.node(to)
	switch own := cl.owner[slot].Load(); {
	case dst == nil:
		return fmt.Errorf("server: cluster has no node %q", to)
	case dst.srv == nil:
		return fmt.Errorf("server: cluster node %s has no Server", to)
	case own == nil:
		return fmt.Errorf("server: slot %d has no owner", slot)
	case own == dst:
		return fmt.Errorf("server: slot %d is %s's already", slot, to)
	case own.srv == nil:
		return fmt.Errorf("server: cluster node %s has no Server", own.id)
	case cl.target[slot].Load() != nil:
		return fmt.Errorf("server: slot %d is in migration already", slot)
	}
	cl.target[slot].Store(dst)
	return nil
}

// MoveKeys moves up to n keys of slot, which is in migration, from its
// owner to the migration's target, and returns how many it moved.
func (cl *Cluster) MoveKeys(slot, n int) (int, error) {
	cl.moving.Lock()
	defer cl.moving.Unlock()
	if slot < 0 || slot >= NumSlots {
		return 0, fmt.Errorf("server: slot %d is not within 0-%d", slot, NumSlots-1)
	}
	src, dst := cl.owner[slot].Load(), cl.target[slot].Load()
	if dst == nil {
		return 0, fmt.Errorf("server: slot %d is not in migration", slot)
	}
	cl.slotMu[slot].Lock()
	defer cl.slotMu[slot].Unlock()
	return moveKeys(src.srv.ks, dst.srv.ks, slot, n), nil
}

// FinishMigration moves the keys of slot left on its owner to the
// migration's target and makes the target the owner, with a new epoch.
func (cl *Cluster) FinishMigration(slot int) error {
	cl.moving.Lock()
	defer cl.moving.Unlock()
	if slot < 0 || slot >= NumSlots {
		return fmt.Errorf("server: slot %d is not within 0-%d", slot, NumSlots-1)
	}
	src, dst := cl.owner[slot].Load(), cl.target[slot].Load()
	if dst == nil {
		return fmt.Errorf("server: slot %d is not in migration", slot)
	}
	cl.slotMu[slot].Lock()
	defer cl.slotMu[slot].Unlock()
	moveKeys(src.srv.ks, dst.srv.ks, slot, -1)
	cl.mu.Lock()
	cl.epoch++
	dst.epoch = cl.epoch
	cl.owner[slot].Store(dst)
	cl.target[slot].Store(nil)
	cl.mu.Unlock()
	return nil
}

// moveKeys moves up to n (all: n < 0) live keys of slot from src to dst,
// replacing keys of the same name there. The caller holds the slot's lock,
// so no command of the slot runs on either.
func moveKeys(src, dst *keyspace, slot, n int) int {
	moved := 0
	now := nowMS()
	for i := range src.shards {
		s := &src.shards[i]
		s.mu.Lock()
		for k, e := range s.m {
			if n >= 0 && moved >= n {
				break
			}
			if keySlot([]byte(k)) != slot {
				continue
			}
			if e.expired(now) {
				s.drop([]byte(k), e)
				continue
			}
			at := e.expireAt
			delete(s.m, k)
			s.unlink(e) // clears expireAt
			s.touchKey(k)
			e.expireAt = at
			d := dst.shard([]byte(k))
			d.mu.Lock()
			if old := d.m[k]; old != nil {
				d.drop([]byte(k), old)
			}
			d.add([]byte(k), e)
			d.mu.Unlock()
			moved++
		}
		s.mu.Unlock()
	}
	return moved
}

// keySlot is the hash slot of key: CRC16 (XMODEM) of its hash tag (what
// lies between the first '{' and the next '}', if that is not empty), else
// of the whole key, modulo 16384.
func keySlot(key []byte) int {
	if i := slices.Index(key, '{'); i >= 0 {
		if j := slices.Index(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for _, b := range key {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^b]
	}
	return int(crc) & (NumSlots - 1)
}

var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// runRouted runs cmd, on a node of a cluster only if this node serves the
// slot of its keys (its row's key positions); else it answers MOVED, ASK,
// CROSSSLOT or CLUSTERDOWN as valkey does.
func (c *conn) runRouted(cmd *command, args [][]byte) {
	n := c.srv.cluster
	if n == nil {
		cmd.run(c, args)
		return
	}
	asking := c.asking
	c.asking = false
	c.keyBuf = cmd.keys.appendKeys(c.keyBuf[:0], args)
	keys := c.keyBuf
	slot, ok := keysSlot(keys)
	switch {
	case !ok:
		c.addError(msgCrossSlot)
		return
	case slot < 0:
		cmd.run(c, args)
		return
	}
	cl := n.cl
	cl.slotMu[slot].RLock()
	defer cl.slotMu[slot].RUnlock()
	if msg := c.redirect(slot, keys, asking); msg != "" {
		c.addError(msg)
		return
	}
	cmd.run(c, args)
}

const msgCrossSlot = "CROSSSLOT Keys in request don't hash to the same slot"

// keysSlot returns the slot of keys, -1 if there are none; false if they
// are in more than one.
func keysSlot(keys [][]byte) (int, bool) {
	slot := -1
	for _, k := range keys {
		s := keySlot(k)
		if slot >= 0 && s != slot {
			return 0, false
		}
		slot = s
	}
	return slot, true
}

// redirect returns the error that sends a request on keys, all of slot,
// to another node (MOVED, ASK, TRYAGAIN, CLUSTERDOWN), or "" if this node
// serves it. The caller holds the slot's lock for reading.
func (c *conn) redirect(slot int, keys [][]byte, asking bool) string {
	n := c.srv.cluster
	cl := n.cl
	owner, target := cl.owner[slot].Load(), cl.target[slot].Load()
	switch {
	case owner == nil:
		return "CLUSTERDOWN Hash slot not served"
	case owner == n && target != nil:
		// Migrating: the keys still here are served here, the others
		// (moved, or new) by the target.
		present, missing := 0, 0
		for _, k := range keys {
			if c.db.has(k) {
				present++
			} else {
				missing++
			}
		}
		switch {
		case missing == 0:
			return ""
		case present == 0:
			cl.asks.Add(1)
			return "ASK " + strconv.Itoa(slot) + " " + target.addr()
		default:
			return "TRYAGAIN Multiple keys request during rehashing of slot"
		}
	case owner == n, target == n && asking:
		return ""
	default:
		cl.moved.Add(1)
		return "MOVED " + strconv.Itoa(slot) + " " + owner.addr()
	}
}

// has reports whether key holds a live entry.
func (ks *keyspace) has(key []byte) bool {
	s := ks.shard(key)
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.get(key) != nil
}

func cmdAsking(c *conn, _ [][]byte) {
	if c.srv.cluster == nil {
		c.addError(msgClusterDisabled)
		return
	}
	c.asking = true
	c.addOK()
}

const msgClusterDisabled = "ERR This instance has cluster support disabled"

// CLUSTER subcommands: valkey-go asks on connect and, on a server that
// is not a cluster's node, falls back to a standalone client on valkey's
// error. Each answers that error outside cluster mode.

// clusterNode returns the node c's server is, or replies valkey's error.
func (c *conn) clusterNode() *clusterNode {
	if c.srv.cluster == nil {
		c.addError(msgClusterDisabled)
	}
	return c.srv.cluster
}

func cmdClusterMyID(c *conn, _ [][]byte) {
	if n := c.clusterNode(); n != nil {
		c.addBulkString(n.id)
	}
}

func cmdClusterKeySlot(c *conn, args [][]byte) {
	if c.clusterNode() != nil {
		c.addInt(int64(keySlot(args[2])))
	}
}

func cmdClusterCountKeysInSlot(c *conn, args [][]byte) {
	if c.clusterNode() == nil {
		return
	}
	if slot, ok := parseSlot(c, args[2]); ok {
		c.addInt(int64(len(c.srv.ks.keysInSlot(c, slot, -1))))
	}
}

func cmdClusterGetKeysInSlot(c *conn, args [][]byte) {
	if c.clusterNode() == nil {
		return
	}
	slot, ok := parseSlot(c, args[2])
	if !ok {
		return
	}
	count, err := strconv.Atoi(string(args[3]))
	if err != nil || count < 0 {
		c.addError("ERR Invalid number of keys")
		return
	}
	keys := c.srv.ks.keysInSlot(c, slot, count)
	c.addArray(len(keys))
	for _, k := range keys {
		c.addBulkString(k)
	}
}

func cmdClusterInfo(c *conn, _ [][]byte) {
	if n := c.clusterNode(); n != nil {
		c.addVerbatim(n.cl.info(n))
	}
}

func cmdClusterSlots(c *conn, _ [][]byte) {
	if n := c.clusterNode(); n != nil {
		n.cl.slots(c)
	}
}

func cmdClusterShards(c *conn, _ [][]byte) {
	if n := c.clusterNode(); n != nil {
		n.cl.shards(c)
	}
}

func cmdClusterNodes(c *conn, _ [][]byte) {
	if n := c.clusterNode(); n != nil {
		c.addVerbatim(n.cl.nodesText(n))
	}
}

func parseSlot(c *conn, b []byte) (int, bool) {
	s, err := strconv.Atoi(string(b))
	if err != nil || s < 0 || s >= NumSlots {
		c.addError("ERR Invalid slot")
		return 0, false
	}
	return s, true
}

// keysInSlot returns up to n (all: n < 0) live keys of slot. It looks at
// every key: valkey keeps an index by slot, this server does not.
func (ks *keyspace) keysInSlot(c *conn, slot, n int) []string {
	var keys []string
	now := nowMS()
	for i := range ks.shards {
		s := &ks.shards[i]
		s.rlock(c)
		for k, e := range s.m {
			if n >= 0 && len(keys) >= n {
				break
			}
			if !e.expired(now) && keySlot([]byte(k)) == slot {
				keys = append(keys, k)
			}
		}
		s.runlock(c)
	}
	return keys
}

// ranges returns the slot ranges that n serves.
func (cl *Cluster) ranges(n *clusterNode) []SlotRange {
	var rs []SlotRange
	for s := 0; s < NumSlots; s++ {
		if cl.owner[s].Load() != n {
			continue
		}
		if len(rs) > 0 && rs[len(rs)-1].Last == s-1 {
			rs[len(rs)-1].Last = s
		} else {
			rs = append(rs, SlotRange{s, s})
		}
	}
	return rs
}

func (cl *Cluster) snapshot() ([]*clusterNode, int64) {
	cl.mu.Lock()
	defer cl.mu.Unlock()
	return slices.Clone(cl.nodes), cl.epoch
}

func (cl *Cluster) info(self *clusterNode) string {
	nodes, epoch := cl.snapshot()
	assigned, size := 0, 0
	for _, n := range nodes {
		k := 0
		for _, r := range cl.ranges(n) {
			k += r.Last - r.First + 1
		}
		assigned += k
		if k > 0 {
			size++
		}
	}
	state := "ok"
	if assigned < NumSlots {
		state = "fail"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "cluster_state:%s\r\ncluster_slots_assigned:%d\r\ncluster_slots_ok:%d\r\ncluster_slots_pfail:0\r\ncluster_slots_fail:0\r\n", state, assigned, assigned)
	fmt.Fprintf(&b, "cluster_known_nodes:%d\r\ncluster_size:%d\r\ncluster_current_epoch:%d\r\ncluster_my_epoch:%d\r\n", len(nodes), size, epoch, self.epoch)
	b.WriteString("cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\ntotal_cluster_links_buffer_limit_exceeded:0\r\n")
	return b.String()
}

// slots answers CLUSTER SLOTS: each range with its node, ordered by slot.
func (cl *Cluster) slots(c *conn) {
	nodes, _ := cl.snapshot()
	type row struct {
		r SlotRange
		n *clusterNode
	}
	var rows []row
	for _, n := range nodes {
		for _, r := range cl.ranges(n) {
			rows = append(rows, row{r, n})
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return a.r.First - b.r.First })
	c.addArray(len(rows))
	for _, r := range rows {
		c.addArray(3)
		c.addInt(int64(r.r.First))
		c.addInt(int64(r.r.Last))
		c.addArray(4)
		c.addBulkString(r.n.host)
		c.addInt(int64(r.n.port))
		c.addBulkString(r.n.id)
		c.addMap(0)
	}
}

// shards answers CLUSTER SHARDS: a shard per node, each of one master.
func (cl *Cluster) shards(c *conn) {
	nodes, _ := cl.snapshot()
	c.addArray(len(nodes))
	for _, n := range nodes {
		rs := cl.ranges(n)
		c.addMap(2)
		c.addBulkString("slots")
		c.addArray(2 * len(rs))
		for _, r := range rs {
			c.addInt(int64(r.First))
			c.addInt(int64(r.Last))
		}
		c.addBulkString("nodes")
		c.addArray(1)
		c.addMap(7)
		c.addBulkString("id")
		c.addBulkString(n.id)
		c.addBulkString("port")
		c.addInt(int64(n.port))
		c.addBulkString("ip")
		c.addBulkString(n.host)
		c.addBulkString("endpoint")
		c.addBulkString(n.host)
		c.addBulkString("role")
		c.addBulkString("master")
		c.addBulkString("replication-offset")
		c.addInt(0)
		c.addBulkString("health")
		c.addBulkString("online")
	}
}

// nodesText is CLUSTER NODES, as self sees the cluster: a slot in
// migration shows as [slot->-target] on its owner's line and
// [slot-<-owner] on its target's, when self is that node.
func (cl *Cluster) nodesText(self *clusterNode) string {
	nodes, _ := cl.snapshot()
	var b strings.Builder
	for _, n := range nodes {
		flags := "master"
		if n == self {
			flags = "myself,master"
		}
		fmt.Fprintf(&b, "%s %s@%d %s - 0 0 %d connected", n.id, n.addr(), n.port+10000, flags, n.epoch)
		for _, r := range cl.ranges(n) {
			if r.First == r.Last {
				fmt.Fprintf(&b, " %d", r.First)
			} else {
				fmt.Fprintf(&b, " %d-%d", r.First, r.Last)
			}
		}
		if n == self {
			for s := 0; s < NumSlots; s++ {
				t := cl.target[s].Load()
				switch o := cl.owner[s].Load(); {
				case t == nil:
				case o == n:
					fmt.Fprintf(&b, " [%d->-%s]", s, t.id)
				case t == n:
					fmt.Fprintf(&b, " [%d-<-%s]", s, o.id)
				}
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}
