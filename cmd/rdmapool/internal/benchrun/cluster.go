package benchrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seed54442f1a/rdmapool/pool"
)

// tagPlaceholder marks, in a cluster run, where a key's hash tag goes:
// valkey-benchmark's "{tag}", whose three letters each request gets from a
// slot of its client's primary.
const tagPlaceholder = "{tag}"

// Cluster is a Valkey cluster's primaries and the slots each serves, as
// CLUSTER SLOTS says (--cluster). Client i of a run connects to primary
// i mod the number of primaries, as valkey-benchmark's clients do, and
// each of its batches carries the hash tag of a random slot of that
// primary. A MOVED, ASK or CLUSTERDOWN reply reads CLUSTER SLOTS again;
// the client reads the rest of its batch, and sends the requests that
// were redirected again, on the same connection, with the tag of a slot
// its primary serves now.
type Cluster struct {
	setup   [][]byte
	timeout time.Duration

	mu     sync.RWMutex
	nodes  []ClusterNode  // primaries, in the order CLUSTER SLOTS first names them
	byAddr map[string]int // nodes' indexes by address
	gen    int            // counts the refreshes

	offsMu  sync.Mutex
	offsReq []byte // the request offs are of
	offs    []int
}

// ClusterNode is one primary.
type ClusterNode struct {
	Addr  string // host:port
	ID    string
	Slots []uint16
}

// DiscoverCluster reads CLUSTER SLOTS from the node at addr, over a TCP
// connection that first sends setup (AUTH, HELLO 3).
func DiscoverCluster(ctx context.Context, addr string, setup [][]byte, timeout time.Duration) (*Cluster, error) {
	c := &Cluster{setup: setup, timeout: timeout}
	if err := c.refresh(ctx, []string{addr}); err != nil {
		return nil, err
	}
	return c, nil
}

// Nodes returns the primaries.
func (c *Cluster) Nodes() []ClusterNode {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.nodes)
}

// refresh reads CLUSTER SLOTS from the first of addrs that answers.
func (c *Cluster) refresh(ctx context.Context, addrs []string) error {
	var errs []error
	for _, addr := range addrs {
		nodes, err := clusterSlots(ctx, addr, c.setup, c.timeout)
		if err != nil {
			errs = append(errs, fmt.Errorf("CLUSTER SLOTS from %s: %w", addr, err))
			continue
		}
		if len(nodes) == 0 {
			errs = append(errs, fmt.Errorf("CLUSTER SLOTS from %s: no primary serves a slot", addr))
			continue
		}
		byAddr := make(map[string]int, len(nodes))
		for i, n := range nodes {
			byAddr[n.Addr] = i
		}
		c.mu.Lock()
		c.nodes, c.byAddr = nodes, byAddr
		c.gen++
		c.mu.Unlock()
		return nil
	}
	return errors.Join(errs...)
}

func clusterSlots(ctx context.Context, addr string, setup [][]byte, timeout time.Duration) ([]ClusterNode, error) {
	var d net.Dialer
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(timeout))
	stop := context.AfterFunc(ctx, func() { nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	cl := &client{conn: nc, in: make([]byte, 64<<10)}
	for _, req := range setup {
		if _, err := cl.roundTrip(req); err != nil {
			return nil, err
		}
	}
	reply, err := cl.roundTrip(multiBulk("CLUSTER", "SLOTS"))
	if err != nil {
		return nil, err
	}
	host, _, _ := net.SplitHostPort(addr)
	return parseClusterSlots(reply, host)
}

// parseClusterSlots reads CLUSTER SLOTS' reply: an array of [start, end,
// [ip, port, id, ...], replicas...]. An empty ip is the host asked.
func parseClusterSlots(reply []byte, host string) ([]ClusterNode, error) {
	v, rest, err := parseValue(reply, 0)
	if err != nil {
		return nil, err
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("%w: bytes after CLUSTER SLOTS' reply", errProtocol)
	}
	ranges, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%w: CLUSTER SLOTS' reply is not an array", errProtocol)
	}
	byAddr := map[string]int{}
	var nodes []ClusterNode
	for _, r := range ranges {
		e, ok := r.([]any)
		if !ok || len(e) < 3 {
			return nil, fmt.Errorf("%w: a slot range of CLUSTER SLOTS is not [start, end, primary, ...]", errProtocol)
		}
		start, ok1 := e[0].(int64)
		end, ok2 := e[1].(int64)
		prim, ok3 := e[2].([]any)
		if !ok1 || !ok2 || !ok3 || len(prim) < 2 || start < 0 || end > 16383 || start > end {
			return nil, fmt.Errorf("%w: a bad slot range in CLUSTER SLOTS", errProtocol)
		}
		ip, _ := prim[0].(string)
		port, ok := prim[1].(int64)
		if !ok {
			return nil, fmt.Errorf("%w: a bad primary in CLUSTER SLOTS", errProtocol)
		}
		if ip == "" || ip == "?" {
			ip = host
		}
		addr := net.JoinHostPort(ip, strconv.FormatInt(port, 10))
		i, seen := byAddr[addr]
		if !seen {
			i = len(nodes)
			byAddr[addr] = i
			id := ""
			if len(prim) > 2 {
				id, _ = prim[2].(string)
			}
			nodes = append(nodes, ClusterNode{Addr: addr, ID: id})
		}
		for s := start; s <= end; s++ {
			nodes[i].Slots = append(nodes[i].Slots, uint16(s))
		}
	}
	return nodes, nil
}

// parseValue parses one RESP2/RESP3 reply into strings, int64s, []any
// (arrays, sets, maps as key, value, ...) and nil.
func parseValue(b []byte, depth int) (any, []byte, error) {
	n, err := skip(b, depth)
	if err != nil {
		return nil, nil, err
	}
	if n == 0 {
		return nil, nil, fmt.Errorf("%w: a reply cut short", errProtocol)
	}
	line := lineEnd(b)
	head := string(b[1:line])
	switch b[0] {
	case '+', '(':
		return head, b[line+2:], nil
	case ':':
		v, err := strconv.ParseInt(head, 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: bad integer %q", errProtocol, head)
		}
		return v, b[line+2:], nil
	case '$', '=':
		l, _ := atoi(b[1:line])
		if l < 0 {
			return nil, b[line+2:], nil
		}
		return string(b[line+2 : line+2+l]), b[line+2+l+2:], nil
	case '_':
		return nil, b[line+2:], nil
	case '*', '~', '%', '>':
		l, _ := atoi(b[1:line])
		if b[0] == '%' {
			l *= 2
		}
		rest := b[line+2:]
		var out []any
		for range max(l, 0) {
			var v any
			v, rest, err = parseValue(rest, depth+1)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, v)
		}
		return out, rest, nil
	}
	return nil, b[n:], nil // the rest: skipped
}

// connect opens cfg.Clients connections, client i's to primary i mod the
// primaries, each primary through a pool of its own. poolOf(i) is client
// i's pool, addrs[i] its primary's address; closeAll closes them.
func (c *Cluster) connect(ctx context.Context, cfg Config) (conns []pool.PooledConn, addrs []string, poolOf func(int) *pool.Pool, closeAll func(), err error) {
	nodes := c.Nodes()
	addrs = make([]string, cfg.Clients)
	for i := range addrs {
		addrs[i] = nodes[i%len(nodes)].Addr
	}
	pools := make([]*pool.Pool, len(nodes))
	closeAll = func() {
		for _, p := range pools {
			if p != nil {
				p.Close()
			}
		}
	}
	conns = make([]pool.PooledConn, cfg.Clients)
	for j, n := range nodes {
		nc := cfg
		// Each node's RDMA address is its own: RDMAAddrOf's, or its
		// host's with RDMAPort.
		nc.Addr, nc.RDMAAddr = n.Addr, ""
		nc.Clients = (cfg.Clients - j + len(nodes) - 1) / len(nodes)
		if nc.Clients == 0 {
			continue
		}
		if pools[j], err = newPool(nc); err != nil {
			break
		}
		var got []pool.PooledConn
		if got, err = connect(ctx, pools[j], nc); err != nil {
			err = &ConnectError{Addr: failedAddr(nc, err), Err: err}
			break
		}
		for k, pc := range got {
			conns[j+k*len(nodes)] = pc
		}
	}
	if err != nil {
		for _, pc := range conns {
			if pc != nil {
				pc.Discard()
			}
		}
		closeAll()
		return nil, nil, nil, nil, err
	}
	return conns, addrs, func(i int) *pool.Pool { return pools[i%len(pools)] }, closeAll, nil
}

// retag writes, into the k requests of cl's batch, the hash tag of a
// random slot of cl's primary (cl.node; when that serves no slot any more,
// primary cl.index mod the primaries), in place of req's {tag}s.
func (c *Cluster) retag(cl *client, req []byte, k int) {
	offs := c.tagOffsets(req)
	if len(offs) == 0 {
		return
	}
	c.mu.RLock()
	j, ok := c.byAddr[cl.node]
	if !ok || len(c.nodes[j].Slots) == 0 {
		j = cl.index % len(c.nodes)
	}
	n := c.nodes[j]
	c.mu.RUnlock()
	tag := slotTags()[n.Slots[cl.next()%uint64(len(n.Slots))]]
	for r := range k {
		base := r * cl.reqLen
		for _, o := range offs {
			copy(cl.out[base+o+1:base+o+4], tag[:])
		}
	}
}

// tagOffsets returns the offsets of {tag} in req, found once per request.
func (c *Cluster) tagOffsets(req []byte) []int {
	c.offsMu.Lock()
	defer c.offsMu.Unlock()
	if len(c.offsReq) == 0 || &c.offsReq[0] != &req[0] || len(c.offsReq) != len(req) {
		c.offsReq, c.offs = req, nil
		for i := 0; ; {
			j := bytes.Index(req[i:], []byte(tagPlaceholder))
			if j < 0 {
				break
			}
			c.offs = append(c.offs, i+j)
			i += j + len(tagPlaceholder)
		}
	}
	return c.offs
}

// redirected reports whether err is a reply that the cluster's slots moved.
func redirected(err error) bool {
	var se *ServerError
	if !errors.As(err, &se) {
		return false
	}
	return redirectedMsg(se.Msg)
}

// redirectedMsg reports whether an error reply's text says that the
// cluster's slots moved.
func redirectedMsg(msg string) bool {
	for _, p := range []string{"MOVED ", "ASK ", "CLUSTERDOWN "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// maxRedirects is how many redirections in a row a client follows before
// the run fails.
const maxRedirects = 16

// follower follows a cluster's redirections for a run's clients: on a
// MOVED, ASK or CLUSTERDOWN it reads CLUSTER SLOTS again, once for the
// clients that meet one together. The client has read its batch to the
// end (client.follows), so its connection, to the same primary, serves
// the requests sent again.
type follower struct {
	c   *Cluster
	ctx context.Context
	mu  sync.Mutex // held while CLUSTER SLOTS is read again
	// Each client's redirections since the last of its requests was
	// answered, read and written only by what drives the client (its
	// goroutine, or its event loop).
	streak []int
	doneAt []uint64
}

func (c *Cluster) newFollower(ctx context.Context, clients int) *follower {
	return &follower{c: c, ctx: ctx, streak: make([]int, clients), doneAt: make([]uint64, clients)}
}

// follow deals with err, met by cl: when it is a redirection, and cl has
// not met too many since its last answer, it reads the slots again and
// returns true: cl then sends the redirected requests again. Else (false)
// err stands.
func (f *follower) follow(cl *client, err error) bool {
	if !redirected(err) {
		return false
	}
	c, i := f.c, cl.index
	if d := cl.done.Load(); d != f.doneAt[i] {
		f.doneAt[i], f.streak[i] = d, 0
	}
	if f.streak[i]++; f.streak[i] > maxRedirects {
		return false
	}
	var se *ServerError
	if errors.As(err, &se) && strings.HasPrefix(se.Msg, "CLUSTERDOWN") {
		time.Sleep(time.Second) // as valkey-benchmark: the cluster usually recovers
	}
	c.mu.RLock()
	gen := c.gen
	var addrs []string
	for _, n := range c.nodes {
		addrs = append(addrs, n.Addr)
	}
	c.mu.RUnlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	c.mu.RLock()
	stale := c.gen == gen
	c.mu.RUnlock()
	return !stale || c.refresh(f.ctx, addrs) == nil
}

// slotTags is, for each of the 16384 slots, a tag of three bytes whose
// hash is that slot: one to three letters or digits, padded with '}' as
// valkey-benchmark's crc16_slot_table is, so that "{" + tag + "}" hashes to
// the slot.
var slotTags = sync.OnceValue(func() *[16384][3]byte {
	var t [16384][3]byte
	var have [16384]bool
	left := len(t)
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	try := func(s []byte) {
		slot := crc16(s) & 16383
		if !have[slot] {
			have[slot] = true
			left--
			t[slot] = [3]byte{'}', '}', '}'}
			copy(t[slot][:], s)
		}
	}
	var b [3]byte
	for _, x := range []byte(alphabet) {
		b[0] = x
		try(b[:1])
	}
	for _, x := range []byte(alphabet) {
		for _, y := range []byte(alphabet) {
			b[0], b[1] = x, y
			try(b[:2])
		}
	}
	for _, x := range []byte(alphabet) {
		for _, y := range []byte(alphabet) {
			for _, z := range []byte(alphabet) {
				if left == 0 {
					return &t
				}
				b[0], b[1], b[2] = x, y, z
				try(b[:3])
			}
		}
	}
	if left != 0 {
		panic("benchrun: no three-letter tag for some slots") // cannot happen: checked by a test
	}
	return &t
})

// crc16 is the cluster's key hash: CRC-16/XMODEM.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
