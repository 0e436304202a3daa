package qp_test

import (
	"testing"
	"time"

	"github.com/seed54442f1a/rdmapool/qp"
)

// TestKeepalivesPerPeer: idle connections to one peer cost one keepalive
// per interval between them, not one each. 20 idle pairs in this process
// (both ends' peer is the same address) tick every 50 ms for a second or
// more: the group sends one keepalive in a tick it heard nothing, none in
// the next (it heard that one), so about one in two ticks; one each would
// be 40 a tick. The ticks are counted from the time that passed, which a
// loaded machine stretches (ticks come late, never more often), and the
// first keepalive is waited for, not expected within a time.
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
	start := time.Now()
	time.Sleep(time.Second)
	for deadline := start.Add(time.Minute); qp.KeepalivesSent() == before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	sent := qp.KeepalivesSent() - before
	ticks := uint64(time.Since(start)/(50*time.Millisecond)) + 1
	t.Logf("40 idle ends, ticks every 50 ms for %v: %d keepalives", time.Since(start).Round(time.Millisecond), sent)
	if sent > ticks+ticks/4 {
		t.Errorf("%d keepalives from 40 idle ends to one peer in %d ticks, want about one per tick at most", sent, ticks)
	}
	if sent == 0 {
		t.Error("no keepalive at all in a minute")
	}
	for i := 0; i < len(conns); i += 2 {
		checkOne(t, conns[i], conns[i+1])
	}
}
