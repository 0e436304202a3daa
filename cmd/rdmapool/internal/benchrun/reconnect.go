package benchrun

import (
	"context"
	"sync"
	"time"

	"github.com/seed54442f1a/rdmapool/pool"
)

// swapConn is a client's connection with -k 0: replaced by a new one after
// each batch. The watchdog's deadline (stopper.stop) may come from another
// goroutine at any time; it is kept, and set on every later connection too,
// so that a stop is never lost to a reconnect.
type swapConn struct {
	mu       sync.Mutex
	slot     *pool.PooledConn // the run's entry for this client, discarded at its end
	deadline time.Time        // the last SetDeadline's, for the connections to come
}

func (s *swapConn) get() pool.PooledConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.slot
}

func (s *swapConn) Read(b []byte) (int, error)  { return s.get().Read(b) }
func (s *swapConn) Write(b []byte) (int, error) { return s.get().Write(b) }

func (s *swapConn) SetDeadline(t time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deadline = t
	return (*s.slot).SetDeadline(t)
}

func (s *swapConn) SetReadDeadline(t time.Time) error  { return s.get().SetReadDeadline(t) }
func (s *swapConn) SetWriteDeadline(t time.Time) error { return s.get().SetWriteDeadline(t) }

// reconnector returns Config.reconnect for -k 0: it wraps each client's
// connection in a swapConn, and the function it returns closes a client's
// connection (never to be reused) and gets it a new one from its pool, set up as
// the first was, within cfg.Timeout.
func reconnector(ctx context.Context, poolOf func(int) *pool.Pool, conns []pool.PooledConn, clients []*client, cfg Config) func(*client) error {
	index := make(map[*client]int, len(clients))
	for i, c := range clients {
		c.conn = &swapConn{slot: &conns[i]}
		index[c] = i
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return func(c *client) error {
		s := c.conn.(*swapConn)
		s.get().Discard()
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		nc, err := poolOf(index[c]).Get(ctx)
		if err != nil {
			// The slot keeps the discarded one: the run's end discards it
			// again, which does nothing.
			return &ConnectError{Addr: failedAddr(cfg, err), Err: err}
		}
		if len(cfg.Setup) > 0 {
			nc.SetDeadline(time.Now().Add(timeout))
			sc := &client{conn: nc, in: make([]byte, 512)}
			for _, req := range cfg.Setup {
				if _, err := sc.roundTrip(req); err != nil {
					nc.Discard()
					return err
				}
			}
			nc.SetDeadline(time.Time{})
		}
		s.mu.Lock()
		*s.slot = nc
		if !s.deadline.IsZero() {
			nc.SetDeadline(s.deadline)
		}
		s.mu.Unlock()
		c.r, c.w = 0, 0
		return nil
	}
}
