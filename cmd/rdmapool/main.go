// Command rdmapool inspects and exercises RDMA on this machine.
//
//	rdmapool info     which RDMA libraries, devices, ports and GIDs exist,
//	                  the locked-memory limit, and whether RDMA can be used
//	rdmapool serve    the embedded Valkey-compatible server
//	rdmapool bench    valkey-benchmark's load, over RDMA and TCP
//	rdmapool version  the command's version
//
// Every command takes --help (its usage on stdout, exit 0); a bad flag or
// argument is one line on stderr and exit 2.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `usage: rdmapool <command> [flags]

commands:
  info    report the RDMA libraries, devices, ports, GIDs and memlock limit,
          and whether RDMA can be used here
  serve   serve a Valkey-compatible in-memory keyspace over TCP and RDMA
          (rdmapool serve --help for its flags)
  bench   load-test a Valkey-compatible server, or the embedded one, over
          RDMA and TCP, as valkey-benchmark does (rdmapool bench --help)
  version print the command's version (also --version)
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "info":
		return info(args[1:], stdout, stderr)
	case "serve":
		return serveCmd(args[1:], stdout, stderr)
	case "bench":
		return benchCmd(args[1:], stdout, stderr)
	case "version":
		return versionCmd(args[1:], stdout, stderr)
	case "--version", "-version":
		fmt.Fprintln(stdout, version())
		return 0
	case "help", "-h", "--help", "-help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "rdmapool: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
