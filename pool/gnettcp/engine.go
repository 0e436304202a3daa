// Package gnettcp is a TCP engine for package pool on gnet's event loops:
// a Pool or Dialer uses it when its Options say so,
//
//	pool.Options{TCPEngine: gnettcp.Engine}
//
// and its connections are Conns, with the contract of pool.Conn.
//
// It is a package of its own so that a program that uses pool without it
// links neither gnet nor what gnet brings (ants, zap, multierr,
// lumberjack, bytebufferpool); pool's default engine, pool.TCPNetpoll, is
// the Go runtime's netpoller. The engine is a value that Options takes,
// not a name this package registers when imported: the choice is written
// where it is made, a program that makes it cannot forget the import, and
// one that does not make it cannot link gnet by accident.
package gnettcp

import (
	"context"
	"net"

	"github.com/seed54442f1a/rdmapool/pool"
)

// Engine drives a Pool's TCP connections with the process's gnet event
// loops (Conn); its name is "gnet".
var Engine pool.TCPEngine = engine{}

// engine's zero value is the engine as it is; tests and benchmarks change
// cfg.
type engine struct{ cfg tcpConfig }

func (engine) String() string { return "gnet" }

// DialTCP is dialTCP with the engine's tcpConfig.
func (e engine) DialTCP(ctx context.Context, addr string, nd *net.Dialer) (pool.Conn, error) {
	c, err := dialTCP(ctx, nd, addr, e.cfg)
	if err != nil {
		return nil, err // not a nil *Conn in a pool.Conn
	}
	return c, nil
}
