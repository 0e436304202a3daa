package qp

import (
	"context"
	"sync/atomic"
	"time"
)

// The feature exchange, and rdmapool's one extension of the protocol.
//
// valkey-server 8.1.0 through 9.1.0 crash (SIGSEGV in free) on a
// RegisterXferMemory whose length differs from the last one: their send
// staging is an mmap, which rdmaAdjustSendbuf frees with free(). libvalkey
// and the Go transports built on it never change the length. So a
// connection keeps the length of its first RegisterXferMemory for its whole
// life, unless its peer has said, through the protocol's own feature
// exchange, that it takes another:
//
//   - A client sends GetServerFeature (select 0) as its first control
//     message, its features field listing what it takes (featRxLength);
//     valkey-server ignores that field, echoes the select and answers
//     features 0.
//   - A server answers with the features it offers: ours offers
//     featRxLength. It never sends a feature message unasked, since
//     libvalkey takes any as a fatal unknown command.
//   - The client sets with SetClientFeature only what was offered (valkey
//     takes SetClientFeature 0 as nothing), and only then sends its first
//     RegisterXferMemory.
//
// Once a client has seen featRxLength offered, and once a server has seen
// it set, that end may advertise a receive buffer of another length at a
// re-arm (rearm). Both ends take a change of length from any peer.
//
// The length of the first advertisement follows from the exchange too: a
// peer that negotiated gets a buffer that starts at rxStart and follows the
// data; any other peer gets Options.RecvBufferSize, for good. A client
// knows which before it advertises (it waits for the answer); a server
// waits for the client's first control message: a GetServerFeature that
// lists featRxLength is one of ours, anything else (libvalkey sends its
// RegisterXferMemory first) is not. A client that says nothing gets the
// fixed length after firstMessageWait.
const (
	// featRxLength: the sender takes a RegisterXferMemory whose length
	// differs from the last. A high bit, far from the ones valkey may
	// define one day from bit 0 up.
	featRxLength uint64 = 1 << 48

	// ourFeatures is what this side takes, and a server offers.
	ourFeatures = featRxLength

	// featureReplyWait bounds how long Dial waits for the answer to its
	// GetServerFeature (every valkey-server answers at once); a server
	// that says nothing is taken as one that offers nothing.
	featureReplyWait = 2 * time.Second

	// firstMessageWait is how long a server waits for a client's first
	// control message before it advertises its receive buffer anyway.
	firstMessageWait = time.Second
)

// peerKind is what the feature exchange told of the peer.
type peerKind uint32

const (
	peerUnknown peerKind = iota // nothing heard yet
	peerPlain                   // a Valkey peer, or one that did not negotiate: the length is fixed
	peerOurs                    // it takes a change of length
)

// features is a connection's side of the exchange. The handler writes it
// (under the CQ's lock); Dial and the server's event loop wait on notify
// before the first advertisement.
type features struct {
	asked   atomic.Bool   // client: our GetServerFeature is out, unanswered
	kind    atomic.Uint32 // peerKind, set once by the first message that tells
	resizes atomic.Bool   // the peer takes a RegisterXferMemory of another length
	notify  chan struct{} // signalled when kind is set
}

// heard records what the peer's control message m tells of it (handler;
// the CQ's lock held) and answers a GetServerFeature; it returns a
// *ProtocolError for a feature message this side must not get.
func (c *Conn) heard(m cmd) error {
	f := &c.feat
	switch m.opcode {
	case opGetServerFeature:
		if !c.server {
			if !f.asked.CompareAndSwap(true, false) {
				return &ProtocolError{What: "GetServerFeature answer to a request never sent"}
			}
			if m.features&featRxLength != 0 {
				f.resizes.Store(true) // offered: the server takes our changes
				f.tell(peerOurs)
			} else {
				f.tell(peerPlain)
			}
			return nil
		}
		// valkey-server answers with the same opcode, the select echoed;
		// we offer our features on select 0, the only page there is.
		var offer uint64
		if m.sel == 0 {
			offer = ourFeatures
		}
		if err := c.sendCmd(cmd{opcode: opGetServerFeature, sel: m.sel, features: offer}, true, false); err != nil {
			return err
		}
		if m.sel == 0 && m.features&featRxLength != 0 {
			f.tell(peerOurs)
		} else {
			f.tell(peerPlain)
		}
	case opSetClientFeature:
		if !c.server {
			return &ProtocolError{What: "SetClientFeature sent to a client"}
		}
		// Bits never offered are ignored, as valkey-server ignores all.
		if m.sel == 0 && m.features&featRxLength != 0 {
			f.resizes.Store(true)
		}
		f.tell(peerPlain) // a client that sets without asking is not one of ours
	default:
		if c.server {
			f.tell(peerPlain) // libvalkey's first message is its RegisterXferMemory
		}
	}
	return nil
}

// tell sets the peer's kind, if no earlier message did.
func (f *features) tell(k peerKind) {
	if f.kind.CompareAndSwap(uint32(peerUnknown), uint32(k)) {
		signal(f.notify)
	}
}

// ask sends a client's GetServerFeature, listing what we take.
func (c *Conn) ask() error {
	c.feat.asked.Store(true)
	return c.sendCmd(cmd{opcode: opGetServerFeature, features: ourFeatures}, true, true)
}

// awaitPeer waits until the peer's kind is known, the connection ends, ctx
// is done or wait passes, and returns the kind (peerPlain if it is still
// unknown). A nil ctx is never done.
func (c *Conn) awaitPeer(ctx context.Context, wait time.Duration) (peerKind, error) {
	var done <-chan struct{}
	if ctx != nil {
		done = ctx.Done()
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		if k := peerKind(c.feat.kind.Load()); k != peerUnknown {
			return k, nil
		}
		select {
		case <-c.feat.notify:
		case <-c.done:
			return peerUnknown, c.endErr()
		case <-done:
			return peerUnknown, ctx.Err()
		case <-t.C:
			return peerPlain, nil
		}
	}
}

// advertiseFirst sends the first RegisterXferMemory, of the length the
// peer's kind calls for: a receive buffer of Options.RecvBufferSize toward
// a peer that cannot take a change of length, else the rxStart one that
// prepare made. It runs before the connection is handed out (Dial, or the
// server's event loop before Accept), so no reader looks at the ring yet.
// A client that learned what the server offers sets it first.
func (c *Conn) advertiseFirst(k peerKind) error {
	if !c.server && c.feat.resizes.Load() {
		if err := c.sendCmd(cmd{opcode: opSetClientFeature, features: featRxLength}, true, true); err != nil {
			return err
		}
	}
	if k != peerOurs && c.res.rx.Len() != c.opts.RecvBufferSize {
		if err := c.replaceRx(c.opts.RecvBufferSize); err != nil {
			return err
		}
	}
	// What the reader's first re-arm reads and replaces (rearm), read
	// and written before rxArmed is set: the handler loads it before it
	// takes any data, which orders these before the reader's re-arm.
	m := c.registerCmd()
	c.rxArmedAt = time.Now()
	c.rxArmed.Store(true)
	return c.sendCmd(m, true, true)
}
