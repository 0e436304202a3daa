package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/seed54442f1a/rdmapool/loader"
	"github.com/seed54442f1a/rdmapool/loader/probe"
	"github.com/seed54442f1a/rdmapool/qp"
	"github.com/seed54442f1a/rdmapool/server"
)

const serveUsage = `usage: rdmapool serve [flags]

Serves a Valkey-compatible in-memory keyspace (RESP2 and RESP3) over TCP and,
when asked and available, over RDMA (the Valkey-over-RDMA protocol, as
valkey-server --rdma-bind serves it). Stops on SIGINT or SIGTERM.

flags:
`

// serveCmd is `rdmapool serve`: it serves until SIGINT or SIGTERM.
func serveCmd(args []string, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	return serve(args, stdout, stderr, sigs)
}

// serveFlags are serve's flags, named as valkey-server's.
type serveFlags struct {
	bind, rdmaBind  string
	port, rdmaPort  int
	rdmaRxSize      memSize
	spinWait        time.Duration
	requirePass     string
	tcpEngine       string
	databases       int
	tcpAddrs, rAddr []string
}

// parseServeFlags parses and checks the flags. With --help it prints the
// usage on stdout and returns exit status 0; with a bad flag, one line on
// stderr and 2.
func parseServeFlags(args []string, stdout, stderr io.Writer) (*serveFlags, int) {
	f := &serveFlags{rdmaRxSize: 1 << 20}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.bind, "bind", "127.0.0.1", "TCP addresses to listen on, space-separated")
	fs.IntVar(&f.port, "port", 6379, "TCP port; 0 turns TCP off")
	fs.StringVar(&f.rdmaBind, "rdma-bind", "", `RDMA addresses to listen on, space-separated; "auto" is the first IPv4 GID of an active RDMA port; empty turns RDMA off`)
	fs.IntVar(&f.rdmaPort, "rdma-port", 6379, "RDMA port")
	fs.Var(&f.rdmaRxSize, "rdma-rx-size", "receive buffer of each RDMA connection, as valkey's rdma-rx-size (bytes, or with a unit: 512kb, 1mb)")
	fs.DurationVar(&f.spinWait, "spin-wait", 0, "how long a waiting RDMA read or write polls its completion queue before it parks (qp.Options.SpinWait); 0 means the library's default (1ms), negative never polls")
	fs.StringVar(&f.requirePass, "requirepass", "", "password that clients must give with AUTH or HELLO")
	fs.StringVar(&f.tcpEngine, "tcp-engine", server.TCPGnet.String(), "what serves TCP connections: gnet (event loops shared by all of them) or netpoll (the Go netpoller, each connection read on its own)")
	fs.IntVar(&f.databases, "databases", 16, "number of databases, which SELECT picks from 0 (as valkey-server's databases)")
	bad := func(format string, a ...any) (*serveFlags, int) {
		fmt.Fprintf(stderr, "rdmapool serve: "+format+" (rdmapool serve --help for usage)\n", a...)
		return nil, 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, serveUsage)
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return nil, 0
		}
		return bad("%v", err)
	}
	switch {
	case fs.NArg() > 0:
		return bad("unexpected argument %q", fs.Arg(0))
	case f.port < 0 || f.port > 65535:
		return bad("--port %d is not a port (0 to 65535)", f.port)
	case f.rdmaPort < 0 || f.rdmaPort > 65535:
		return bad("--rdma-port %d is not a port (0 to 65535)", f.rdmaPort)
	case f.rdmaRxSize < 4<<10 || f.rdmaRxSize > 16<<20:
		// 16 MiB: valkey-server's largest, and what clients accept by
		// default (qp.Options.MaxPeerBufferSize).
		return bad("--rdma-rx-size %d is out of range (4kb to 16mb)", f.rdmaRxSize)
	case f.databases < 1 || f.databases > server.MaxDatabases:
		return bad("--databases %d is out of range (1 to %d)", f.databases, server.MaxDatabases)
	case f.tcpEngine != server.TCPGnet.String() && f.tcpEngine != server.TCPNetpoll.String():
		return bad("--tcp-engine %q: want gnet or netpoll", f.tcpEngine)
	case f.port == 0 && strings.TrimSpace(f.rdmaBind) == "":
		return bad("nothing to serve: --port 0 and no --rdma-bind")
	}
	if f.port != 0 {
		f.tcpAddrs = strings.Fields(f.bind)
		if len(f.tcpAddrs) == 0 {
			return bad("--bind is empty")
		}
	}
	f.rAddr = strings.Fields(f.rdmaBind)
	return f, 0
}

// serve runs the server until a value arrives on stop. Exit codes: 0 after
// stop (and for --help), 1 when it cannot listen (or every listener
// failed), 2 for bad flags.
func serve(args []string, stdout, stderr io.Writer, stop <-chan os.Signal) int {
	f, code := parseServeFlags(args, stdout, stderr)
	if f == nil {
		return code
	}
	opts := &server.Options{Password: f.requirePass, Databases: f.databases}
	if f.tcpEngine == server.TCPNetpoll.String() {
		opts.TCPEngine = server.TCPNetpoll
	}
	srv := server.New(opts)
	var listeners []net.Listener
	fail := func() int {
		for _, l := range listeners {
			l.Close()
		}
		srv.Close()
		return 1
	}

	for _, a := range f.tcpAddrs {
		l, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(f.port)))
		if err != nil {
			fmt.Fprintf(stderr, "rdmapool serve: %v\n", err)
			return fail()
		}
		fmt.Fprintf(stdout, "listening on tcp %s\n", l.Addr())
		listeners = append(listeners, l)
	}
	var rdmaErrs []error
	for _, a := range f.rAddr {
		l, err := listenRDMA(a, f)
		if err != nil {
			rdmaErrs = append(rdmaErrs, err)
			continue
		}
		fmt.Fprintf(stdout, "listening on rdma %s\n", l.Addr())
		listeners = append(listeners, l)
	}
	also := "" // what goes on, when an RDMA address could not be served
	switch {
	case len(rdmaErrs) < len(f.rAddr):
		also = "; serving RDMA on the other addresses"
	case len(f.tcpAddrs) > 0:
		also = "; serving TCP only"
	}
	for _, err := range rdmaErrs {
		fmt.Fprintf(stderr, "rdmapool serve: %v%s\n", err, also)
	}
	if len(listeners) == 0 {
		fmt.Fprintln(stderr, "rdmapool serve: no listener could be started")
		return fail()
	}

	type ended struct {
		l   net.Listener
		err error
	}
	done := make(chan ended, len(listeners))
	for _, l := range listeners {
		go func() { done <- ended{l, srv.Serve(l)} }()
	}
	for running := len(listeners); running > 0; running-- {
		select {
		case sig := <-stop:
			fmt.Fprintf(stdout, "received %v, shutting down\n", sig)
			srv.Close()
			st := srv.Stats()
			fmt.Fprintf(stdout, "connections served: %d, commands: %d\n", st.TotalConnections, st.Commands)
			return 0
		case e := <-done:
			// A listener failed on its own, such as an RDMA device removed.
			fmt.Fprintf(stderr, "rdmapool serve: %s %s stopped: %v\n", e.l.Addr().Network(), e.l.Addr(), e.err)
		}
	}
	fmt.Fprintln(stderr, "rdmapool serve: every listener stopped")
	return fail()
}

// listenRDMA listens on addr (an IP, or "auto") and f.rdmaPort. Its error
// says why RDMA cannot be served there.
func listenRDMA(addr string, f *serveFlags) (net.Listener, error) {
	if addr == "auto" {
		a, err := probe.Addr()
		if err != nil {
			return nil, fmt.Errorf("RDMA is off: --rdma-bind auto: %v", err)
		}
		addr = a.String()
	}
	hostPort := net.JoinHostPort(addr, strconv.Itoa(f.rdmaPort))
	l, err := qp.Listen(hostPort, &qp.Options{RecvBufferSize: int(f.rdmaRxSize), SpinWait: f.spinWait})
	if err != nil {
		if errors.Is(err, loader.ErrUnavailable) {
			return nil, fmt.Errorf("RDMA is unavailable: %v", err)
		}
		return nil, err
	}
	return l, nil
}

// memSize is a byte count written as valkey writes memory sizes: 1048576,
// 1024k (1000s), 1mb (1024s), 1gb.
type memSize int64

func (m *memSize) String() string { return strconv.FormatInt(int64(*m), 10) }

func (m *memSize) Set(s string) error {
	units := []struct {
		suffix string
		mul    int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"b", 1}}
	t := strings.ToLower(strings.TrimSpace(s))
	mul := int64(1)
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mul = strings.TrimSuffix(t, u.suffix), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > (1<<40)/mul {
		return fmt.Errorf("not a size: %q", s)
	}
	*m = memSize(n * mul)
	return nil
}
