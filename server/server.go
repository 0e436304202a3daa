// Package server is a small Valkey-compatible server: the RESP2 and
// RESP3 protocols, the commands that go-redis, valkey-go, valkey-cli and
// valkey-benchmark need, and in-memory databases (16 by default, as
// valkey's) of strings, lists, hashes, sets and sorted sets with expiry.
//
// It serves any net.Listener: a TCP one from net.Listen, and a
// Valkey-over-RDMA one from qp.Listen, at the same time:
//
//	srv := server.New(nil)
//	tcp, _ := net.Listen("tcp", "127.0.0.1:6379")
//	go srv.Serve(tcp)
//	rdma, err := qp.Listen("192.0.2.1:6379", nil)
//	if err == nil {
//		go srv.Serve(rdma)
//	}
//	...
//	srv.Close()
//
// A TCP connection is served on gnet's event loops (Options.TCPEngine;
// TCPNetpoll gives it a goroutine instead), an RDMA one by a goroutine of
// its own. Either way the bytes that arrive go into a buffer, requests are
// parsed in place, and replies are appended to an output buffer written
// once no complete request is left in the input: a pipeline of requests
// costs one write. On the event loops, an idle connection holds neither
// buffer. Transactions (MULTI, EXEC, WATCH) and pub/sub (channels,
// patterns, shard channels; RESP2's subscribed state and RESP3's pushes)
// are valkey's; a subscriber that leaves more than Options.PubsubLimit
// unread is closed, and publishers never wait for one. Client-side
// caching (CLIENT TRACKING with OPTIN, OPTOUT, NOLOOP, REDIRECT, BCAST
// and PREFIX) sends valkey's invalidations. Blocking commands (BLPOP,
// BLMOVE, BZPOPMIN and the like) wait holding no lock and no event loop,
// and are served in the order they blocked, as valkey's. It is
// rdmapool's benchmark server and its tests' peer, not a database. It has
// 223 of valkey-server 8.0.1's 241 commands (COMMAND COUNT; each checked
// against valkey-server's COMMAND INFO and by the differential test):
// strings and bit operations, lists with the blocking commands, hashes,
// sets, sorted sets, streams with consumer groups, HyperLogLog, GEO,
// scripting (EVAL and FUNCTION, on gopher-lua), transactions, pub/sub and
// client-side caching, CLIENT LIST and the server's introspection. It has
// no persistence (SAVE, BGSAVE, DUMP, RESTORE), no replication, no ACL
// users beyond AUTH's password, no MONITOR or CLIENT PAUSE yet, and no
// memory limits or eviction.
//
// Servers in one process can be the nodes of a Valkey Cluster, each
// serving some hash slots and redirecting the others (Cluster).
package server

import (
	"errors"
	"hash/maphash"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
)

// Options configure a Server. The zero value is valkey's defaults.
type Options struct {
	// Password, when set, must be given with AUTH or HELLO ... AUTH before
	// any other command (valkey's requirepass). Until then, as in valkey, a
	// request may have at most 10 arguments of at most 16 KiB each: a
	// larger one is a protocol error, and the connection closes.
	Password string
	// MaxBulkLen bounds one argument of a request; 0 means 512 MiB
	// (valkey's proto-max-bulk-len). A longer one is a protocol error.
	MaxBulkLen int
	// MaxQueryBuffer bounds the input buffer of a connection, and so the
	// size of one request; 0 means 1 GiB (valkey's
	// client-query-buffer-limit). A connection that exceeds it is closed.
	MaxQueryBuffer int
	// MaxClients bounds the connections served at once; 0 means 10000
	// (valkey's maxclients). One accepted beyond it is sent the error "max
	// number of clients reached" and closed.
	MaxClients int
	// TCPEngine serves the TCP (and Unix socket) connections; RDMA
	// connections always have a goroutine each.
	TCPEngine TCPEngine
	// Databases is the number of databases, which SELECT picks by index
	// from 0; 0 means 16 (valkey's databases), and more than MaxDatabases
	// is MaxDatabases. A database takes memory from its first use on. A
	// Cluster's node serves database 0 alone, as valkey's do.
	Databases int
	// PubsubLimit bounds the output a client that has subscribed leaves
	// unread (valkey's client-output-buffer-limit pubsub): a client over
	// it is closed, and publishers never wait for it.
	PubsubLimit OutputLimit
	// ScriptTimeLimit is how long a script runs before other clients'
	// commands get the BUSY error and SCRIPT KILL may stop it (valkey's
	// busy-reply-threshold); 0 means 5 s.
	ScriptTimeLimit time.Duration
}

// MaxDatabases bounds Options.Databases.
const MaxDatabases = 1 << 16

// TCPEngine is how a Server serves TCP connections.
type TCPEngine int

const (
	// TCPGnet (the default) serves them on gnet's event loops, one per P:
	// no goroutine per connection, and no buffer held by an idle one.
	TCPGnet TCPEngine = iota
	// TCPNetpoll gives each connection a goroutine on the Go runtime's
	// netpoller, with buffers of its own.
	TCPNetpoll
)

func (e TCPEngine) String() string {
	switch e {
	case TCPGnet:
		return "gnet"
	case TCPNetpoll:
		return "netpoll"
	}
	return "TCPEngine(" + strconv.Itoa(int(e)) + ")"
}

// ErrServerClosed is returned by Serve after Close.
var ErrServerClosed = errors.New("server: Server closed")

// Server serves RESP connections on any number of listeners.
type Server struct {
	opts    Options
	ks      *keyspace    // database 0
	cluster *clusterNode // a Cluster's node (Cluster.NewServer), or nil
	// dbs are the databases, each made by its first use (db); dbs[0] is
	// ks. seed is the hash seed they share.
	dbs []atomic.Pointer[keyspace]
	// dbMu is held for writing while a database is made, and for reading
	// by EXEC: no database appears while a transaction runs (multi.go).
	dbMu sync.RWMutex
	seed maphash.Seed
	// dropped counts the bytes of connections' buffers given up, for the
	// hand-back (expire.go).
	dropped atomic.Int64

	mu        sync.Mutex
	closed    bool
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	wg        sync.WaitGroup // Serve calls, connections, background
	enrolling sync.WaitGroup // connections being handed to the event loops
	loop      loopEngine
	// stop, once the first Serve has started the background goroutine
	// (active expiry, memory handed back), is closed by Close to end it.
	stop chan struct{}

	hub *hub      // subscriptions (pubsub.go); a Cluster's nodes share one
	trk *tracking // client-side caching's table (tracking.go)
	// scripts: the script cache and Lua states (script.go).
	scripts scripting
	funcs   functions // FUNCTION's libraries (function.go)
	// outputLimitClosed counts the clients closed at PubsubLimit.
	outputLimitClosed atomic.Uint64
	// blockedClients counts the clients blocked now (blocking.go).
	blockedClients atomic.Int64

	started time.Time // New's time: LASTSAVE's answer (servercmds.go)
	// noActiveExpire: DEBUG SET-ACTIVE-EXPIRE 0 stopped the active expiry
	// cycle (expire.go); keys still expire when touched.
	noActiveExpire atomic.Bool
	nextID         atomic.Int64
	accepted       atomic.Uint64
	rejected       atomic.Uint64
	commands       atomic.Uint64
}

// Stats are a Server's counters.
type Stats struct {
	Connections      int    // open now
	TotalConnections uint64 // accepted since New, not counting rejected ones
	// RejectedConnections: accepted since New, then closed because
	// MaxClients were open.
	RejectedConnections uint64
	// Commands executed since New. A connection adds its count after each
	// batch of pipelined commands.
	Commands uint64
	// OutputLimitClosed: connections closed since New for leaving more
	// than Options.PubsubLimit of pub/sub output unread.
	OutputLimitClosed uint64
}

// New returns a Server with an empty keyspace; opts may be nil.
func New(opts *Options) *Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxBulkLen <= 0 {
		o.MaxBulkLen = 512 << 20
	}
	if o.MaxQueryBuffer <= 0 {
		o.MaxQueryBuffer = 1 << 30
	}
	o.MaxQueryBuffer = max(o.MaxQueryBuffer, initialBuffer)
	if o.MaxClients <= 0 {
		o.MaxClients = 10000
	}
	if o.Databases <= 0 {
		o.Databases = 16
	}
	o.Databases = min(o.Databases, MaxDatabases)
	o.PubsubLimit = o.PubsubLimit.withDefaults()
	s := &Server{
		started:   time.Now(),
		hub:       newHub(),
		opts:      o,
		dbs:       make([]atomic.Pointer[keyspace], o.Databases),
		seed:      maphash.MakeSeed(),
		listeners: map[net.Listener]struct{}{},
		conns:     map[*conn]struct{}{},
	}
	s.trk = newTracking(s)
	s.ks = newKeyspace(s.seed)
	s.ks.setTracking(s.trk)
	s.dbs[0].Store(s.ks)
	return s
}

// Serve accepts connections on l and serves each, a TCP or Unix one on
// the event loops (see Options.TCPEngine), any other on its own goroutine,
// until l fails or is closed, or the Server is closed. It closes l when it
// returns, and returns ErrServerClosed after Close, else the error from
// Accept (after l.Close, one that matches net.ErrClosed).
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.Close()
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	if s.stop == nil {
		s.stop = make(chan struct{})
		stop := s.stop
		s.wg.Go(func() { s.background(stop) })
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
		l.Close()
		s.wg.Done()
	}()

	var backoff time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.isClosed() {
				return ErrServerClosed
			}
			if ne, ok := err.(interface{ Temporary() bool }); ok && ne.Temporary() {
				// Out of file descriptors and the like: wait, as net/http does.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		s.start(nc)
	}
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Server) start(nc net.Conn) {
	var cli *gnet.Client // the event loops', for this connection
	if s.opts.TCPEngine == TCPGnet && loopable(nc) {
		cli = s.loop.client(s)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close() // not under s.mu: an RDMA connection's Close waits for its teardown
		return
	}
	if len(s.conns) >= s.opts.MaxClients {
		s.rejected.Add(1)
		s.wg.Add(1)
		s.mu.Unlock()
		go s.reject(nc)
		return
	}
	s.accepted.Add(1)
	c := newConn(s, nc)
	if cli != nil {
		c.nc, c.out = nil, nil
		s.enrolling.Add(1)
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	if cli != nil {
		s.enroll(cli, c, nc)
		s.enrolling.Done()
		return
	}
	go func() {
		defer s.wg.Done()
		c.serve()
		c.endBlock()
		c.endTx()
		c.endPubsub()
		c.endTracking()
		nc.Close()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
}

// rejectTimeout bounds the write of the error to a rejected connection.
const rejectTimeout = time.Second

// reject sends a connection over MaxClients valkey's error, and closes it.
// It runs on its own goroutine: an RDMA connection's Write and Close may
// wait for the peer.
func (s *Server) reject(nc net.Conn) {
	defer s.wg.Done()
	nc.SetWriteDeadline(time.Now().Add(rejectTimeout))
	io.WriteString(nc, "-ERR max number of clients reached\r\n")
	nc.Close()
}

// Close closes every listener being served and every connection, and
// waits until every Serve call, connection and the background goroutine
// has ended, and the event loops have stopped.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.stop != nil && !s.closed {
		close(s.stop)
	}
	s.closed = true
	var ls []net.Listener
	for l := range s.listeners {
		ls = append(ls, l)
	}
	var cs []*conn
	for c := range s.conns {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, l := range ls {
		l.Close()
	}
	// In parallel: an RDMA connection's Close waits for its teardown.
	for _, c := range cs {
		if nc := c.nc; nc != nil {
			s.wg.Go(func() { nc.Close() })
		}
	}
	// Stopping the event loops closes their connections; no connection
	// is on its way to them once closed is set and enrolling is done.
	s.enrolling.Wait()
	s.loop.stop()
	s.wg.Wait()
	return nil
}

// Stats returns the Server's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	open := len(s.conns)
	s.mu.Unlock()
	return Stats{
		Connections:         open,
		TotalConnections:    s.accepted.Load(),
		RejectedConnections: s.rejected.Load(),
		Commands:            s.commands.Load(),
		OutputLimitClosed:   s.outputLimitClosed.Load(),
	}
}
