package cq

// registration is a member's place in its CQ's member table (a slot, and
// the slot's generation). Its SendWRID and RecvWRID methods make the
// work-request ids that route completions back to the member's handler.
type registration struct {
	slot uint32
	gen  uint16
}

// SendWRID returns the wr_id for a send-queue work request of this
// registration that carries local (23 bits) for the handler.
func (r registration) SendWRID(local uint32) uint64 { return r.wrid(sendBit | local&LocalMask) }

// RecvWRID returns the wr_id for a receive-queue work request of this
// registration that carries local (23 bits) for the handler.
func (r registration) RecvWRID(local uint32) uint64 { return r.wrid(local & LocalMask) }

// wrid returns the wr_id that carries local (24 bits, the send bit
// included).
func (r registration) wrid(local uint32) uint64 {
	return uint64(r.slot)<<(localBits+genBits) | uint64(r.gen)<<localBits | uint64(local&(1<<localBits-1))
}

// local returns the 24 bits of a wr_id below the generation.
func local(wrid uint64) uint32 { return uint32(wrid & (1<<localBits - 1)) }

// The layout of a wr_id, which this package alone owns: registration slot
// (24 bits), generation (16 bits), and 24 bits for the handler, of which
// the top one says the request went to the send queue (Completion.Send)
// and the other 23 are the handler's own (Completion.Local).
const (
	localBits = 24
	genBits   = 16
	sendBit   = 1 << (localBits - 1)
	// LocalMask masks the handler's own part of a wr_id: the largest
	// value SendWRID and RecvWRID carry.
	LocalMask = sendBit - 1
	maxSlots  = 1 << 24
)

func decode(wrid uint64) (slot uint32, gen uint16) {
	return uint32(wrid >> (localBits + genBits)), uint16(wrid >> localBits)
}
