package qp_test

import (
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/qp"
)

// TestKeepalivesPerPeer: idle connections to one peer cost one keepalive
// per interval between them, not one each. 20 idle pairs in this process
// (both ends' peer is the same address) tick every 50 ms for a second: the
// group sends one keepalive in a tick it heard nothing, none in the next
// (it heard that one), so about 10; one each would be 200 or more.
func TestKeepalivesPerPeer(t *testing.T) {
	e := newEnv(t, &qp.Options{RecvBufferSize: 16 << 10, KeepaliveInterval: 50 * time.Millisecond})
	var conns []*qp.Conn
	for range 20 {
		cli, srv := e.pair()
		conns = append(conns, cli, srv)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	time.Sleep(200 * time.Millisecond) // the setups' own messages are heard
	before := qp.KeepalivesSent()
	time.Sleep(time.Second)
	sent := qp.KeepalivesSent() - before
	t.Logf("40 idle ends, ticks every 50 ms for 1 s: %d keepalives", sent)
	if sent > 25 {
		t.Errorf("%d keepalives from 40 idle ends to one peer in 20 ticks, want about one per tick at most", sent)
	}
	if sent == 0 {
		t.Error("no keepalive at all in 20 ticks")
	}
	for i := 0; i < len(conns); i += 2 {
		checkOne(t, conns[i], conns[i+1])
	}
}
