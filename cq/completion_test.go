package cq

import (
	"runtime"
	"testing"
	"unsafe"

	"github.com/seed54442f1a/rdmapool/internal/verbs"
)

// TestCompletionLayout: a Completion is read in place from the WC array a
// poll fills, so it must have the WC's layout exactly.
func TestCompletionLayout(t *testing.T) {
	if unsafe.Sizeof(Completion{}) != unsafe.Sizeof(verbs.WC{}) || unsafe.Alignof(Completion{}) != unsafe.Alignof(verbs.WC{}) {
		t.Fatalf("Completion: size %d, alignment %d; verbs.WC: %d, %d",
			unsafe.Sizeof(Completion{}), unsafe.Alignof(Completion{}), unsafe.Sizeof(verbs.WC{}), unsafe.Alignof(verbs.WC{}))
	}
	// On the Go heap (whose objects do not move) for the test only: a
	// poll's WCs are C memory.
	wc := &verbs.WC{WRID: registration{slot: 5, gen: 7}.SendWRID(42), Status: verbs.WCRetryExcErr, Opcode: verbs.WCRecv,
		VendorErr: 9, ByteLen: 32, ImmData: 0x01020304, WCFlags: verbs.WCWithImm}
	c := &completions(verbs.PtrAt[verbs.WC](uintptr(unsafe.Pointer(wc))), 1)[0]
	if c.WRID() != wc.WRID || !c.Send() || c.Local() != 42 || c.Status() != wc.Status || c.Opcode() != wc.Opcode ||
		c.VendorErr() != 9 || c.ByteLen() != 32 || c.ImmData() != 0x01020304 || c.Flags() != verbs.WCWithImm {
		t.Errorf("the completion read in place does not say what its WC does: %+v", c.wc)
	}
	runtime.KeepAlive(wc)
}
