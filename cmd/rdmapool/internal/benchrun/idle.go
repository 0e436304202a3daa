package benchrun

import (
	"context"

	"github.com/seed54442f1a/rdmapool/pool"
)

// Idle is valkey-benchmark's -I: it opens cfg.Clients connections, sends
// each cfg.Setup, calls onReady with their transport, and holds them, idle,
// until ctx ends. Its error is a failure to connect or set up; ctx's end is
// not one.
func Idle(ctx context.Context, cfg Config, onReady func(*Outcome)) error {
	var conns []pool.PooledConn
	if cfg.Cluster != nil { // each client on its primary, as in Run
		var closeAll func()
		var err error
		conns, _, _, closeAll, err = cfg.Cluster.connect(ctx, cfg)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		defer closeAll()
	} else {
		p, err := newPool(cfg)
		if err != nil {
			return err
		}
		defer p.Close()
		if conns, err = connect(ctx, p, cfg); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return &ConnectError{Addr: failedAddr(cfg, err), Err: err}
		}
	}
	defer func() {
		for _, c := range conns {
			c.Discard()
		}
	}()
	clients := make([]*client, len(conns))
	for i, c := range conns {
		// Only roundTrip's buffer, which grows as needed: thousands of
		// idle connections need no histogram.
		clients[i] = &client{conn: c, in: make([]byte, 512)}
	}
	if err := setup(ctx, clients, cfg); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if onReady != nil {
		o := &Outcome{Transport: conns[0].Transport(), Clients: cfg.Clients}
		for _, c := range conns[1:] {
			if c.Transport() != o.Transport {
				o.Transport = "mixed"
			}
		}
		onReady(o)
	}
	<-ctx.Done()
	return nil
}
