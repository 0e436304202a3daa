package qp

import "encoding/binary"

// The Valkey-over-RDMA control messages: 32 bytes, sent with IBV_WR_SEND,
// every field big-endian, reserved bytes zero.
//
//	offset size  RegisterXferMemory(3)  Get/SetFeature(0, 1)  Keepalive(2)
//	0      2     opcode                 opcode                opcode
//	2      2     reserved               select                reserved
//	4      12    reserved               reserved              reserved
//	16     8     addr                   reserved              reserved
//	24     4     length                 features (u64 24..32) reserved
//	28     4     rkey                                         reserved
const (
	opGetServerFeature   = 0
	opSetClientFeature   = 1
	opKeepalive          = 2
	opRegisterXferMemory = 3

	cmdSize = 32
)

// cmd is a decoded control message.
type cmd struct {
	opcode   uint16
	sel      uint16 // feature select
	addr     uint64 // RegisterXferMemory
	length   uint32
	rkey     uint32
	features uint64 // Get/SetFeature
}

func (c cmd) encode(b []byte) {
	clear(b[:cmdSize])
	binary.BigEndian.PutUint16(b[0:], c.opcode)
	switch c.opcode {
	case opRegisterXferMemory:
		binary.BigEndian.PutUint64(b[16:], c.addr)
		binary.BigEndian.PutUint32(b[24:], c.length)
		binary.BigEndian.PutUint32(b[28:], c.rkey)
	case opGetServerFeature, opSetClientFeature:
		binary.BigEndian.PutUint16(b[2:], c.sel)
		binary.BigEndian.PutUint64(b[24:], c.features)
	}
}

func decodeCmd(b []byte) cmd {
	c := cmd{opcode: binary.BigEndian.Uint16(b[0:])}
	switch c.opcode {
	case opRegisterXferMemory:
		c.addr = binary.BigEndian.Uint64(b[16:])
		c.length = binary.BigEndian.Uint32(b[24:])
		c.rkey = binary.BigEndian.Uint32(b[28:])
	case opGetServerFeature, opSetClientFeature:
		c.sel = binary.BigEndian.Uint16(b[2:])
		c.features = binary.BigEndian.Uint64(b[24:])
	}
	return c
}
