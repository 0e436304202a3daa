package qp

import (
	"bytes"
	"fmt"
	"testing"
)

// FuzzDecodeCmd: any 32 bytes a peer sends decode without a panic, into
// the fields of their opcode alone, and encode back to the same bytes with
// the reserved ones (and, for an opcode with none, all but the opcode)
// zero; a decoded message encodes and decodes to itself.
func FuzzDecodeCmd(f *testing.F) {
	for _, m := range []cmd{
		{opcode: opRegisterXferMemory, addr: 0x7f0012345000, length: 1 << 20, rkey: 0x1234},
		{opcode: opGetServerFeature, sel: 1, features: 1 << 40},
		{opcode: opSetClientFeature, sel: 2, features: 3},
		{opcode: opKeepalive},
		{opcode: 0xffff},
	} {
		var b [cmdSize]byte
		m.encode(b[:])
		f.Add(b[:])
	}
	f.Add(bytes.Repeat([]byte{0xff}, cmdSize))
	f.Add([]byte{0, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		// handleCmd decodes only a slot of exactly cmdSize bytes.
		var b [cmdSize]byte
		copy(b[:], data)
		m := decodeCmd(b[:])

		want := b
		switch m.opcode {
		case opRegisterXferMemory:
			clear(want[2:16])
		case opGetServerFeature, opSetClientFeature:
			clear(want[4:24])
		default:
			clear(want[2:])
			if m != (cmd{opcode: m.opcode}) {
				t.Errorf("%x: opcode %s decoded fields %+v", b, opName(m.opcode), m)
			}
		}
		var got [cmdSize]byte
		got[5] = 0xaa // encode must clear what it does not set
		m.encode(got[:])
		if got != want {
			t.Errorf("%x decoded to %+v, which encodes to %x, want %x", b, m, got, want)
		}
		if again := decodeCmd(got[:]); again != m {
			t.Errorf("%+v encodes to %x, which decodes to %+v", m, got, again)
		}
		if opName(m.opcode) == "" {
			t.Errorf("opcode %d has no name", m.opcode)
		}
	})
}

// opName names an opcode in test messages.
func opName(op uint16) string {
	switch op {
	case opGetServerFeature:
		return "GetServerFeature"
	case opSetClientFeature:
		return "SetClientFeature"
	case opKeepalive:
		return "Keepalive"
	case opRegisterXferMemory:
		return "RegisterXferMemory"
	}
	return fmt.Sprintf("opcode %d", op)
}
