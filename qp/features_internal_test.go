package qp

import (
	"errors"
	"testing"
)

func newFeatConn(server bool) *Conn {
	return &Conn{server: server, feat: features{notify: make(chan struct{}, 1)}}
}

// TestClientFeatures: a client takes a change of length toward a server
// only once the server's answer offered it; an answer never asked for, or
// a SetClientFeature, is a protocol error.
func TestClientFeatures(t *testing.T) {
	var pe *ProtocolError
	c := newFeatConn(false)
	if err := c.heard(cmd{opcode: opGetServerFeature, features: featRxLength}); !errors.As(err, &pe) {
		t.Errorf("an answer never asked for: %v, want a ProtocolError", err)
	}
	if err := c.heard(cmd{opcode: opSetClientFeature}); !errors.As(err, &pe) {
		t.Errorf("SetClientFeature to a client: %v, want a ProtocolError", err)
	}
	for _, tc := range []struct {
		offer uint64
		kind  peerKind
	}{{0, peerPlain}, {1, peerPlain}, {featRxLength, peerOurs}, {featRxLength | 1, peerOurs}} {
		c := newFeatConn(false)
		c.feat.asked.Store(true)
		if err := c.heard(cmd{opcode: opRegisterXferMemory, length: 1 << 20}); err != nil {
			t.Fatal(err)
		}
		if k := peerKind(c.feat.kind.Load()); k != peerUnknown {
			t.Fatalf("the server's RegisterXferMemory told the kind %d", k)
		}
		if err := c.heard(cmd{opcode: opGetServerFeature, features: tc.offer}); err != nil {
			t.Fatal(err)
		}
		if k := peerKind(c.feat.kind.Load()); k != tc.kind {
			t.Errorf("offer %#x: kind %d, want %d", tc.offer, k, tc.kind)
		}
		if got, want := c.feat.resizes.Load(), tc.kind == peerOurs; got != want {
			t.Errorf("offer %#x: resizes %v, want %v", tc.offer, got, want)
		}
		if err := c.heard(cmd{opcode: opGetServerFeature, features: tc.offer}); !errors.As(err, &pe) {
			t.Errorf("a second answer: %v, want a ProtocolError", err)
		}
	}
}

// TestServerFeatures: a server's first advertisement follows the client's
// first control message, and it changes its length only toward a client
// that set featRxLength.
func TestServerFeatures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		msgs    []cmd
		kind    peerKind
		resizes bool
	}{
		{"libvalkey", []cmd{{opcode: opRegisterXferMemory, length: 1 << 20}}, peerPlain, false},
		{"keepalive", []cmd{{opcode: opKeepalive}}, peerPlain, false},
		{"set unasked", []cmd{{opcode: opSetClientFeature, features: featRxLength}}, peerPlain, true},
		{"set zero", []cmd{{opcode: opSetClientFeature}}, peerPlain, false},
		{"set other page", []cmd{{opcode: opSetClientFeature, sel: 1, features: featRxLength}}, peerPlain, false},
		{"set after data", []cmd{{opcode: opRegisterXferMemory, length: 1 << 20}, {opcode: opSetClientFeature, features: featRxLength}}, peerPlain, true},
	} {
		c := newFeatConn(true)
		for _, m := range tc.msgs {
			if err := c.heard(m); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
		}
		if k := peerKind(c.feat.kind.Load()); k != tc.kind {
			t.Errorf("%s: kind %d, want %d", tc.name, k, tc.kind)
		}
		if r := c.feat.resizes.Load(); r != tc.resizes {
			t.Errorf("%s: resizes %v, want %v", tc.name, r, tc.resizes)
		}
	}
}
