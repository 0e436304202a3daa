package gnettcp

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/seed54442f1a/rdmapool/internal/testutil"
	"github.com/seed54442f1a/rdmapool/pool"
)

// TestPooledNoSyscallConn: a Pool on this engine hands out connections
// with no socket of their own (SyscallConn fails with
// errors.ErrUnsupported), and pools them when they come back. (Package
// pool's TestPooledSyscallConn: a netpoll connection's socket.)
func TestPooledNoSyscallConn(t *testing.T) {
	s := testutil.NewServer(t, testutil.Echo)
	p, err := pool.New(pool.Options{Addr: s.Addr(), Policy: pool.TCPOnly, TCPEngine: Engine})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := p.Get(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.SyscallConn(); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("gnet SyscallConn: %v, want errors.ErrUnsupported", err)
	}
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 4)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "ping" {
		t.Fatalf("echo: %q, %v", got, err)
	}
	c.Close()
	if st := p.Stats(); st.Idle != 1 {
		t.Errorf("a gnet connection that gave no socket was not pooled: %+v", st)
	}
}
