package server

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
)

// testEngine is the TCPEngine of the servers the tests start (testOpts).
var testEngine TCPEngine

// TestMain runs the tests once per TCP engine: RDMAPOOL_SERVER_ENGINE=gnet
// or netpoll picks one. Inside the RDMA VM, where TCP is not the point,
// only the default one.
func TestMain(m *testing.M) {
	engines := []TCPEngine{TCPGnet, TCPNetpoll}
	switch e := os.Getenv("RDMAPOOL_SERVER_ENGINE"); {
	case e == TCPGnet.String():
		engines = engines[:1]
	case e == TCPNetpoll.String():
		engines = engines[1:]
	case e != "":
		fmt.Fprintf(os.Stderr, "RDMAPOOL_SERVER_ENGINE=%q: want gnet or netpoll\n", e)
		os.Exit(2)
	case testutil.InVM():
		engines = engines[:1]
	}
	flag.Parse()
	code := 0
	for _, e := range engines {
		testEngine = e
		if len(engines) > 1 && testing.Verbose() {
			fmt.Printf("=== TCP engine %v\n", e)
		}
		if c := m.Run(); c != 0 {
			fmt.Fprintf(os.Stderr, "FAIL with the %v engine\n", e)
			code = c
		}
	}
	os.Exit(code)
}

// testOpts returns opts (nil: the defaults) with the TCP engine under test.
func testOpts(opts *Options) *Options {
	var o Options
	if opts != nil {
		o = *opts
	}
	o.TCPEngine = testEngine
	return &o
}
